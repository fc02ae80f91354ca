//! Publishing, for applications: a [`Publisher`], a cheap, cloneable handle
//! that reaches every endpoint it is given to (each an [`Sink`]: its listen
//! streams and its legacy sessions), from a handler, a background task or
//! another thread.
//!
//! The seam a fleet's bus sits behind is here (`bus.rs`): a publication is
//! delivered to the local endpoints at once, and handed to the bus, if
//! there is one, for the other nodes, whose publishers deliver it to their
//! endpoints the same way ([`Publisher::receive`]).

use super::bus::{BusLink, Outbound};
use super::change::{Audience, Change, Prepared, Publication, Shared};
use crate::Reason;
use arc_swap::ArcSwap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// Where a publication is delivered on this node: an endpoint's listen
/// streams and legacy sessions.
pub(crate) trait Sink: Send + Sync {
    /// Delivers `publication` to every local listener (and session) that
    /// asked for it and may hear it; how many queued it.
    fn deliver(&self, publication: &Shared) -> usize;

    /// Ends every listen stream of the endpoint, gracefully, for `reason`;
    /// how many.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    fn end_listeners(&self, reason: Reason) -> usize;
}

/// Publishes changes to the clients listening for them, in both eras: the
/// 2026-07-28 listen streams whose filter asks for the change's kind (or its
/// resource URI), and the legacy sessions as their revision has it (list
/// changes on the standalone `GET` stream, a resource's updates to the
/// sessions that `resources/subscribe`d to it); only those whose principal
/// is in the change's [`Audience`].
///
/// Cheap to clone (one `Arc`); publishing takes no lock and allocates once
/// per publication, whatever the number of listeners, and never waits for
/// one (a listener whose queue is full is ended instead).
///
/// Make one before the manager, give a clone to the application (to
/// publish from its handlers) and one to
/// [`Builder::publisher`](crate::http::Builder::publisher); or take the
/// manager's own from [`SessionManager::publisher`](crate::http::SessionManager::publisher).
///
/// ```
/// use sessionreg::http::{Audience, Principal, Publisher};
///
/// let publisher = Publisher::new();
/// publisher.tools_changed();
/// publisher.resource_updated("basket://1", Audience::principal(Principal::new("ada")));
/// assert_eq!(publisher.published(), 2);
/// ```
#[derive(Clone)]
pub struct Publisher {
    hub: Arc<Reach>,
}

/// What every clone of a publisher shares.
struct Reach {
    /// The endpoints it reaches; one that is gone is skipped (and pruned
    /// when the next endpoint is attached).
    sinks: ArcSwap<Vec<Weak<dyn Sink>>>,
    published: AtomicU64,
    /// The fleet's bus, once one is attached (at most one, for the
    /// publisher's life).
    bus: OnceLock<Bus>,
}

/// A bus attached to a publisher: where its publications go, and the
/// state of the link.
struct Bus {
    outbound: Box<dyn Outbound>,
    link: Arc<BusLink>,
}

/// A publisher that does not keep its endpoints' publisher alive: what a
/// bus holds, so that the bus ends when the publisher goes.
#[derive(Clone)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) struct WeakPublisher(Weak<Reach>);

#[cfg_attr(not(feature = "redis"), allow(dead_code))]
impl WeakPublisher {
    /// The publisher, if any clone of it is still held.
    pub(crate) fn upgrade(&self) -> Option<Publisher> {
        self.0.upgrade().map(|hub| Publisher { hub })
    }
}

impl Default for Publisher {
    fn default() -> Publisher {
        Publisher::new()
    }
}

impl fmt::Debug for Publisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("endpoints", &self.hub.sinks.load().len())
            .field("published", &self.published())
            .finish()
    }
}

impl Publisher {
    /// A publisher that reaches nothing yet: give it to a
    /// [`Builder`](crate::http::Builder::publisher).
    pub fn new() -> Publisher {
        Publisher {
            hub: Arc::new(Reach {
                sinks: ArcSwap::from_pointee(Vec::new()),
                published: AtomicU64::new(0),
                bus: OnceLock::new(),
            }),
        }
    }

    /// The tools list changed: every listener that asked for
    /// `toolsListChanged` hears it.
    pub fn tools_changed(&self) {
        self.publish(Change::ToolsListChanged, Audience::Everyone);
    }

    /// The prompts list changed.
    pub fn prompts_changed(&self) {
        self.publish(Change::PromptsListChanged, Audience::Everyone);
    }

    /// The resources list changed.
    pub fn resources_changed(&self) {
        self.publish(Change::ResourcesListChanged, Audience::Everyone);
    }

    /// The resource `uri` changed: the listeners that named it in their
    /// `resourceSubscriptions` (and the legacy sessions subscribed to it)
    /// hear it, if their principal is in `audience` (who may read the
    /// resource; [`Audience::Everyone`] for a public one).
    pub fn resource_updated(&self, uri: impl Into<String>, audience: Audience) {
        let uri = uri.into();
        self.publish(Change::ResourceUpdated { uri }, audience);
    }

    /// Publishes `change` to `audience`: this node's listeners at once,
    /// and, with a fleet's bus (feature `redis`: `Builder::bus`), every
    /// other node's (the bus is handed the publication without waiting).
    pub fn publish(&self, change: Change, audience: Audience) {
        let publication = Prepared::new(Publication { change, audience });
        // Relaxed: a count for the gauge, ordering nothing.
        self.hub.published.fetch_add(1, Ordering::Relaxed);
        self.deliver(&publication);
        if let Some(bus) = self.hub.bus.get() {
            bus.outbound.send(&publication);
        }
    }

    /// Publications made through this publisher (and its clones).
    pub fn published(&self) -> u64 {
        self.hub.published.load(Ordering::Relaxed)
    }

    /// Delivers a publication to every endpoint attached here; how many
    /// listeners (and sessions) queued it.
    pub(crate) fn deliver(&self, publication: &Shared) -> usize {
        let sinks = self.hub.sinks.load();
        sinks
            .iter()
            .filter_map(Weak::upgrade)
            .map(|sink| sink.deliver(publication))
            .sum()
    }

    /// Attaches an endpoint: from now on its listeners hear what is
    /// published here.
    pub(crate) fn attach(&self, sink: Weak<dyn Sink>) {
        self.hub.sinks.rcu(|sinks| {
            let mut kept: Vec<Weak<dyn Sink>> = sinks
                .iter()
                .filter(|s| s.strong_count() > 0)
                .cloned()
                .collect();
            kept.push(Weak::clone(&sink));
            kept
        });
    }
}

/// The bus's side of the seam (`bus.rs`): used by the fleet's bus (feature
/// `redis`), and by the listen path to ask whether a listener may open.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
impl Publisher {
    /// Delivers a publication another node made, which the bus brought:
    /// to this node's endpoints, as a local one (never handed back to the
    /// bus); how many listeners (and sessions) queued it.
    pub(crate) fn receive(&self, publication: Publication) -> usize {
        if let Some(bus) = self.hub.bus.get() {
            bus.link.received();
        }
        self.deliver(&Prepared::new(publication))
    }

    /// Attaches a fleet's bus: from now on every publication is handed to
    /// `outbound` too, and `link` says whether a listener may open (it
    /// starts down: none opens until the bus says it is up). `false` if a
    /// bus is attached already.
    pub(crate) fn attach_bus(&self, outbound: Box<dyn Outbound>, link: Arc<BusLink>) -> bool {
        self.hub.bus.set(Bus { outbound, link }).is_ok()
    }

    /// The link to the fleet's bus, if one is attached.
    pub(crate) fn bus_link(&self) -> Option<&BusLink> {
        self.hub.bus.get().map(|bus| &*bus.link)
    }

    /// Whether a listener may open: there is no bus, or its link is up.
    pub(crate) fn bus_ready(&self) -> bool {
        self.bus_link().is_none_or(BusLink::is_up)
    }

    /// The bus's link went down: from now on no listen stream opens, and
    /// every open one is ended gracefully ([`Reason::Unavailable`]); how
    /// many were, or `None` if the link was down already (or there is no
    /// bus).
    pub(crate) fn bus_down(&self) -> Option<usize> {
        let link = self.bus_link()?;
        // The flag first, then the sweep: see `BusLink::is_up`.
        link.set_up(false)
            .then(|| self.end_listeners(Reason::Unavailable))
    }

    /// The bus's link is up (again); whether it was down.
    pub(crate) fn bus_up(&self) -> bool {
        self.bus_link().is_some_and(|link| link.set_up(true))
    }

    /// Ends every listen stream of every endpoint attached here,
    /// gracefully, for `reason`; how many.
    pub(crate) fn end_listeners(&self, reason: Reason) -> usize {
        let sinks = self.hub.sinks.load();
        sinks
            .iter()
            .filter_map(Weak::upgrade)
            .map(|sink| sink.end_listeners(reason))
            .sum()
    }

    /// A handle that does not keep this publisher alive.
    pub(crate) fn downgrade(&self) -> WeakPublisher {
        WeakPublisher(Arc::downgrade(&self.hub))
    }
}

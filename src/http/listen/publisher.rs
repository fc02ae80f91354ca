//! Publishing, for applications: a [`Publisher`], a cheap, cloneable handle
//! that reaches every endpoint it is given to (each an [`Sink`]: its listen
//! streams and its legacy sessions), from a handler, a background task or
//! another thread.
//!
//! The seam a fleet's bus sits behind is here: a publication is delivered
//! to the local endpoints, and handed to the bus, if there is one, for the
//! other nodes, whose endpoints it reaches the same way.

use super::change::{Audience, Change, Prepared, Publication, Shared};
use arc_swap::ArcSwap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Where a publication is delivered on this node: an endpoint's listen
/// streams and legacy sessions.
pub(crate) trait Sink: Send + Sync {
    /// Delivers `publication` to every local listener (and session) that
    /// asked for it and may hear it; how many queued it.
    fn deliver(&self, publication: &Shared) -> usize;
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
    hub: Arc<Hub>,
}

/// What every clone of a publisher shares.
struct Hub {
    /// The endpoints it reaches; one that is gone is skipped (and pruned
    /// when the next endpoint is attached).
    sinks: ArcSwap<Vec<Weak<dyn Sink>>>,
    published: AtomicU64,
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
            hub: Arc::new(Hub {
                sinks: ArcSwap::from_pointee(Vec::new()),
                published: AtomicU64::new(0),
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

    /// Publishes `change` to `audience`.
    pub fn publish(&self, change: Change, audience: Audience) {
        let publication = Prepared::new(Publication { change, audience });
        // Relaxed: a count for the gauge, ordering nothing.
        self.hub.published.fetch_add(1, Ordering::Relaxed);
        self.deliver(&publication);
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

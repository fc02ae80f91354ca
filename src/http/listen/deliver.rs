//! One publication's way through one endpoint ([`Delivery`], the sink a
//! publisher holds): the visit of its topic's members, each listen stream
//! offered it (a list change raised as its kind's signal, a resource's
//! update queued; a stream whose queue is full ended, [`Reason::Lagged`]),
//! each legacy session sent it as its revision has it, and the counts, once
//! per publication. Whom it may reach is its [`Audience`]'s to say: a
//! member of another principal is skipped. The streams it delivered to are
//! woken as `wakes.rs` says (in batches, made outside the runtime).
//!
//! What it needs of the legacy sessions is one thing, through a narrow
//! seam ([`Sessions`]): send a notification to a session's standalone
//! stream if the session is live and its principal in the audience. The
//! registry of sessions implements it (`session/`); nothing else of the
//! endpoint is reachable from here.

use super::change::{Audience, Shared};
use super::inbox::{Offered, Tap};
use super::publisher::Sink;
use super::topics::{Member, Topic};
use super::wakes::Wakes;
use super::Listeners;
use crate::http::observe;
use crate::{Reason, SessionId};
use serde_json::{json, Value};
use std::sync::Arc;

/// What a publication needs of an endpoint's legacy sessions.
pub(crate) trait Sessions: Send + Sync {
    /// Sends `notification` to session `id`'s standalone stream, if the
    /// session is live, its principal is in `audience`, and a stream is open
    /// to take it (a full queue drops it, counted, as any notification of
    /// the session); whether one took it.
    fn notify(&self, id: &SessionId, audience: &Audience, notification: &Value) -> bool;
}

/// An endpoint as a publication reaches it: its listen streams, and its
/// legacy sessions through [`Sessions`].
pub(crate) struct Delivery {
    listeners: Arc<Listeners>,
    sessions: Arc<dyn Sessions>,
}

impl Delivery {
    pub(crate) fn new(listeners: Arc<Listeners>, sessions: Arc<dyn Sessions>) -> Delivery {
        Delivery {
            listeners,
            sessions,
        }
    }
}

impl Sink for Delivery {
    fn deliver(&self, publication: &Shared) -> usize {
        let topic = Topic::of(&publication.publication.change);
        let audience = &publication.publication.audience;
        let (mut queued, mut merged) = (0, 0);
        // Made once, at the first session that needs it.
        let mut legacy: Option<Value> = None;
        // Made outside the runtime, the wakes go to it in batches.
        let mut wakes = Wakes::new(self.listeners.runtime());
        self.listeners.topics.visit(&topic, |member| match member {
            Member::Listener(tap) => match offer(&self.listeners, tap, publication, &mut wakes) {
                Offered::Queued => queued += 1,
                Offered::Merged => merged += 1,
                Offered::Full | Offered::Closed | Offered::Excluded => {}
            },
            Member::Session(id) => {
                let notification = legacy.get_or_insert_with(|| {
                    let mut notification = legacy_notification(publication);
                    // The context where it was published (a handler's
                    // request, say): a session's standalone stream has no
                    // request of its own.
                    observe::stamp(&mut notification);
                    notification
                });
                queued += usize::from(self.sessions.notify(id, audience, notification));
            }
        });
        self.listeners.delivered_to(queued, merged);
        queued
    }

    fn end_listeners(&self, reason: Reason) -> usize {
        self.listeners.end_all(reason)
    }
}

/// Offers a publication to the listener a topic holds (`tap`), if its
/// principal is in the audience; ends it ([`Reason::Lagged`]) if its queue
/// is full. What became of it: `Queued`, `Merged` (a list change it had
/// waiting), or neither (`Full`: now ended; `Closed`: ended before;
/// `Excluded`: not in the audience). An ended listener's queue is closed
/// (before its cleanup leaves the topics): nothing is queued for it.
fn offer(listeners: &Listeners, tap: &Tap, publication: &Shared, wakes: &mut Wakes<'_>) -> Offered {
    let inbox = tap.inbox();
    if !publication.publication.audience.admits(inbox.owner()) {
        return Offered::Excluded;
    }
    let offered = match publication.signal {
        Some(signal) => tap.signal(signal, wakes),
        None => tap.offer(publication, wakes),
    };
    if offered == Offered::Full {
        if let Some(id) = inbox.id() {
            let _ = listeners.registry.terminate(id, Reason::Lagged);
        }
    }
    offered
}

/// The notification a legacy session gets for a publication.
fn legacy_notification(publication: &Shared) -> Value {
    let change = &publication.publication.change;
    let params = match change {
        super::Change::ResourceUpdated { uri } => json!({ "uri": uri }),
        _ => json!({}),
    };
    json!({ "jsonrpc": "2.0", "method": change.method(), "params": params })
}

//! A publication's way into one endpoint ([`Hub`] as a [`Sink`]): to each
//! member of its topic, a 2026-07-28 listen stream (its queue) or a legacy
//! session (its standalone `GET` stream, as a notification of its
//! revision), if its principal is in the publication's audience.

use crate::http::app::App;
use crate::http::listen::{Member, Offered, Shared, Sink, Topic};
use crate::http::run::hub::Hub;
use crate::SessionId;
use serde_json::{json, Value};

impl<A: App> Sink for Hub<A> {
    fn deliver(&self, publication: &Shared) -> usize {
        let topic = Topic::of(&publication.publication.change);
        let (mut queued, mut merged) = (0, 0);
        self.listeners.topics.visit(&topic, |member| match member {
            Member::Listener(tap) => match self.listeners.offer(tap, publication) {
                Offered::Queued => queued += 1,
                Offered::Merged => merged += 1,
                Offered::Full | Offered::Closed | Offered::Excluded => {}
            },
            Member::Session(id) => queued += usize::from(notify_session(self, id, publication)),
        });
        self.listeners.delivered_to(queued, merged);
        queued
    }

    fn end_listeners(&self, reason: crate::Reason) -> usize {
        self.listeners.end_all(reason)
    }
}

/// Sends a publication to a legacy session's standalone stream, if the
/// session is live, its principal may hear it, and a stream is open to take
/// it (a full queue drops it, counted, as any notification of the session).
fn notify_session<A: App>(hub: &Hub<A>, id: &SessionId, publication: &Shared) -> bool {
    let Some(session) = hub.registry.get(id) else {
        return false;
    };
    if !publication
        .publication
        .audience
        .admits(session.owner.as_ref())
    {
        return false;
    }
    session.streams.push(&legacy_notification(publication))
}

/// The notification a legacy session gets for a publication.
fn legacy_notification(publication: &Shared) -> Value {
    let change = &publication.publication.change;
    let params = match change {
        crate::http::listen::Change::ResourceUpdated { uri } => json!({ "uri": uri }),
        _ => json!({}),
    };
    json!({ "jsonrpc": "2.0", "method": change.method(), "params": params })
}

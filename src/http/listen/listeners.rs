//! The listeners of one endpoint ([`Listeners`]): their registry (each
//! stream an entry, so that every way it ends goes through the one
//! terminate), the topic index they and the legacy sessions listen to,
//! their bounds and shares, and the opening of one stream
//! ([`Listeners::open`]): the filter honoured, its bytes charged, the
//! stream registered and its topics joined, the acknowledgement first.

use super::body::ListenBody;
use super::budget::{Charge, UriBudget};
use super::filter::{self, Filter};
use super::inbox::{Inbox, Tap};
use super::listen_filter::ListenFilter;
use super::topics::{Member, Topic, Topics};
use crate::http::access::validity::Term;
use crate::http::counters::HttpCounters;
use crate::http::observe;
use crate::http::sse::frame;
use crate::http::wire::config::LISTEN_ID_BYTES;
use crate::http::wire::jsonrpc::RpcError;
use crate::http::wire::meta::META_SUBSCRIPTION_ID;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use crate::shares::{Share, Shares};
use crate::{Reason, Registry, SessionId};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::runtime::Handle;

/// The acknowledgement's method (2026-07-28, `subscriptions/listen`).
const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// The acknowledgement of listen request `id` (its JSON text) for
/// `filter`, when no span's context goes into it: written as text, the
/// text the tree path writes (`json!`, then `serde_json`), without the
/// tree, whose maps' nodes (about 600 bytes each, four of them) every
/// listen allocated and freed between its stream's long-lived parts.
fn acknowledgement(id: &str, filter: &Filter) -> Vec<u8> {
    // The envelope's 150 bytes, the kinds' names, each URI's quotes and
    // comma: one allocation unless a URI has escapes to write.
    let capacity = 256 + id.len() + filter.uri_bytes() + 3 * filter.uris.len();
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"");
    out.extend_from_slice(ACKNOWLEDGED.as_bytes());
    out.extend_from_slice(b"\",\"params\":{\"_meta\":{\"");
    out.extend_from_slice(META_SUBSCRIPTION_ID.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b"},\"notifications\":");
    filter.write_acknowledged(&mut out);
    out.extend_from_slice(b"}}");
    out
}

/// The store listen streams are, as refusals name it.
const STORE: &str = "listen stream";
/// What it holds, as refusals count it.
const HELD: &str = "open listen streams";

/// One listen stream, as its registry keeps it.
pub(crate) struct Listener {
    /// Its queue, which also knows its principal (only publications whose
    /// audience admits it reach it) and its id: what its topics hold.
    pub(crate) inbox: Arc<Inbox>,
    /// The topics it joined (its URIs the index's copies), left at its
    /// end.
    topics: Vec<Topic>,
    /// Its place in its principal's share, given back when the entry is
    /// freed.
    _share: Option<Share<Principal>>,
    /// Its URIs' bytes, charged to its principal and to the bound of all
    /// ([`UriBudget`]), given back when the entry is freed.
    _bytes: Charge,
}

/// The listeners of one endpoint: their registry, the topics they (and the
/// legacy sessions) listen to, and their bounds.
pub(crate) struct Listeners {
    pub(crate) registry: Registry<Listener>,
    pub(crate) topics: Arc<Topics>,
    shares: Option<Shares<Principal>>,
    /// What the URIs of every filter and of the legacy sessions'
    /// subscriptions may cost, in bytes.
    pub(crate) budget: UriBudget,
    queue: usize,
    filter: filter::FilterBounds,
    /// How each stream's body is made: its keep-alive period, the gauge it
    /// counts in.
    keep_alive: Option<Duration>,
    counters: Arc<HttpCounters>,
    /// The `Retry-After` of a refusal (a listen stream frees its place when
    /// its client goes, which nobody can foretell: the configured one).
    retry_after: u64,
    /// Publications queued for a stream or sent to a session, in all.
    delivered: AtomicU64,
    /// List changes a stream had waiting already (heard as one).
    merged: AtomicU64,
    /// The runtime the streams are served on (recorded at the first open):
    /// where a publication made outside it hands its wakes (`wakes.rs`).
    runtime: OnceLock<Handle>,
}

/// The bounds of an endpoint's listeners.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// Listen streams open at once, all principals together.
    pub(crate) capacity: usize,
    /// Listen streams one principal may hold open; `None`: no share.
    pub(crate) share: Option<usize>,
    /// Publications one stream may have waiting.
    pub(crate) queue: usize,
    /// Resource URIs one filter (or one legacy session's subscriptions) is
    /// honoured for, their bytes together, one URI's bytes.
    pub(crate) uris: usize,
    pub(crate) filter_bytes: usize,
    pub(crate) uri_bytes: usize,
    /// Bytes of resource URIs kept in all (every filter, every session's
    /// subscriptions), and per principal (`None`: no share).
    pub(crate) bytes: usize,
    pub(crate) bytes_share: Option<usize>,
    /// Each stream's keep-alive period.
    pub(crate) keep_alive: Option<Duration>,
    /// The `Retry-After` of a refusal, in whole seconds.
    pub(crate) retry_after: u64,
}

impl Listeners {
    /// The listeners of a new endpoint whose ids carry `node`.
    pub(crate) fn new(
        bounds: Bounds,
        node: u8,
        topics: Arc<Topics>,
        counters: Arc<HttpCounters>,
    ) -> Result<Listeners, crate::BuildError> {
        let index = Arc::clone(&topics);
        let registry = Registry::builder()
            .capacity(bounds.capacity)
            .node_id(node)
            .on_close(move |id: &SessionId, listener: &Listener, reason: Reason| {
                // The one end, run by the terminate winner: nothing more is
                // delivered, the topics forget it, the stream ends.
                listener.inbox.close(reason);
                let member = Member::Listener(Tap::new(&listener.inbox));
                for topic in &listener.topics {
                    index.leave(topic, &member);
                }
                tracing::debug!(listener = ?id, reason = reason.as_str(), "listen stream ended");
            })
            .build()?;
        let shares = match bounds.share {
            Some(limit) => Some(Shares::new(limit).map_err(|_| crate::BuildError::ZeroShare)?),
            None => None,
        };
        Ok(Listeners {
            registry,
            topics,
            shares,
            budget: UriBudget::new(bounds.bytes, bounds.bytes_share, bounds.retry_after),
            queue: bounds.queue,
            filter: filter::FilterBounds {
                uris: bounds.uris,
                uri_bytes: bounds.uri_bytes,
                filter_bytes: bounds.filter_bytes,
            },
            keep_alive: bounds.keep_alive,
            counters,
            retry_after: bounds.retry_after,
            delivered: AtomicU64::new(0),
            merged: AtomicU64::new(0),
            runtime: OnceLock::new(),
        })
    }

    /// Opens a listen stream for request `id` (its `params`) of `owner`,
    /// for as long as `term` (its credential's) lasts: the stream's body,
    /// acknowledgement first; or the refusal.
    /// `closing` says whether the endpoint is ending its listeners (a
    /// shutdown or a drain), looked at after the stream is registered: one
    /// that raced the sweep is ended at once, gracefully.
    pub(crate) fn open(
        self: &Arc<Self>,
        id: &Value,
        params: Option<&str>,
        owner: Option<Principal>,
        term: Term,
        closing: impl Fn() -> Option<Reason>,
        narrow: impl FnOnce(ListenFilter) -> Option<ListenFilter>,
    ) -> Result<ListenBody, Reject> {
        let retry_after = self.retry_after;
        if self.runtime.get().is_none() {
            if let Ok(runtime) = Handle::try_current() {
                let _ = self.runtime.set(runtime);
            }
        }
        let id_text: Box<str> = serde_json::to_string(id)
            .unwrap_or_else(|_| "null".into())
            .into_boxed_str();
        if id_text.len() > LISTEN_ID_BYTES {
            return Err(Reject::Malformed(RpcError::new(
                RpcError::INVALID_REQUEST,
                format!(
                    "a listen request's id is kept by its stream: at most {LISTEN_ID_BYTES} bytes"
                ),
            )));
        }
        let filter = Filter::honoured(params, self.filter).map_err(Reject::Malformed)?;
        // The application's part: it may only narrow what the layer honours
        // (before anything is charged), or serve no listening at all.
        let Some(ListenFilter(filter)) = narrow(ListenFilter(filter)) else {
            return Err(Reject::NoSuchMethod("subscriptions/listen".into()));
        };
        let bytes = self
            .budget
            .charge(owner.as_ref(), filter.uris.len(), filter.uri_bytes())?;
        let share = match (&self.shares, &owner) {
            (Some(shares), Some(principal)) => {
                Some(shares.take(principal).map_err(|_| Reject::OverShare {
                    bound: "listen_share",
                    store: STORE,
                    held: HELD,
                    limit: shares.limit(),
                    retry_after,
                })?)
            }
            _ => None,
        };
        // Only resource updates are queued (list changes are signals): a
        // listener of no URI gets the smallest queue, which stays empty.
        let queue = if filter.uris.is_empty() {
            1
        } else {
            self.queue
        };
        let topics: Vec<Topic> = filter
            .list_topics()
            .chain(
                filter
                    .uris
                    .iter()
                    .map(|uri| Topic::Uri(self.topics.intern(uri))),
            )
            .collect();
        let (inbox, reader) = Inbox::new(queue, owner);
        let listener = Listener {
            inbox,
            topics,
            _share: share,
            _bytes: bytes,
        };
        let Ok(held) = self.registry.insert_in_flight(listener) else {
            return Err(Reject::StoreFull {
                bound: "listen_capacity",
                store: STORE,
                held: HELD,
                limit: self.registry.capacity(),
                retry_after,
            });
        };
        let handle = crate::Session::clone(&held);
        // Not idle-timed (a listen stream is open while its client holds
        // it): the in-flight count is not needed past the insert.
        drop(held);
        // The id first: a publisher that finds the queue full ends the
        // listener by it.
        handle.inbox.set_id(handle.id());
        let member = Member::Listener(Tap::new(&handle.inbox));
        for topic in &handle.topics {
            self.topics.join(topic, &member);
        }
        if let Some(reason) = closing() {
            // Registered while a shutdown or a drain swept: end it too.
            let _ = self.registry.terminate_session(&handle, reason);
        }
        if handle.is_terminated() {
            // Ended (by a sweep) while it joined: it may have left before
            // it joined; leave again.
            for topic in &handle.topics {
                self.topics.leave(topic, &member);
            }
        }
        // The listen request's span is current: the acknowledgement, and
        // every notification after it, carry it as their parent.
        let trace = observe::traceparent();
        let ack = match trace {
            None => acknowledgement(&id_text, &filter),
            // Stamped with the span's whole context (`tracestate` and
            // `baggage` too), as any message the layer sends in a span.
            Some(_) => {
                let mut ack = json!({
                    "jsonrpc": "2.0",
                    "method": ACKNOWLEDGED,
                    "params": {
                        "_meta": { META_SUBSCRIPTION_ID: id },
                        "notifications": filter.acknowledged(),
                    },
                });
                observe::stamp(&mut ack);
                serde_json::to_vec(&ack).unwrap_or_default()
            }
        };
        // Valid UTF-8 either way: JSON text.
        let ack = String::from_utf8_lossy(&ack);
        let ack = frame::data(ack.len(), format_args!("{ack}"));
        Ok(ListenBody::new(
            ack,
            reader,
            id_text,
            trace,
            self.keep_alive,
            term,
            handle,
            Arc::clone(self),
            Arc::clone(&self.counters),
        ))
    }

    /// The runtime the streams are served on, once one has opened.
    pub(crate) fn runtime(&self) -> Option<&Handle> {
        self.runtime.get()
    }

    /// Counts one publication's deliveries: `n` queued (or sent), and
    /// `merged` list changes a stream had waiting (one update of each
    /// counter per publication, not per listener).
    pub(crate) fn delivered_to(&self, n: usize, merged: usize) {
        // Relaxed, both: counts for the metrics, ordering nothing.
        if n > 0 {
            self.delivered.fetch_add(n as u64, Ordering::Relaxed);
        }
        if merged > 0 {
            self.merged.fetch_add(merged as u64, Ordering::Relaxed);
        }
    }

    /// Publications delivered, in all.
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// List changes merged into one a stream had waiting, in all.
    pub(crate) fn merged(&self) -> u64 {
        self.merged.load(Ordering::Relaxed)
    }

    /// Ends every listen stream (gracefully: each gets its result) for
    /// `reason` (a shutdown, a drain, the bus gone); how many.
    pub(crate) fn end_all(&self, reason: Reason) -> usize {
        self.registry.terminate_all(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The acknowledgement written without a tree is the tree's text.
    #[test]
    fn the_acknowledgement_is_the_trees_text() {
        let filter = Filter {
            lists: [true, false, true],
            uris: vec!["file:///a\"b".into()],
        };
        for id in [json!(7), json!("listen-\u{e9}"), json!(null)] {
            let id_text = serde_json::to_string(&id).unwrap();
            let tree = json!({
                "jsonrpc": "2.0",
                "method": ACKNOWLEDGED,
                "params": {
                    "_meta": { META_SUBSCRIPTION_ID: id },
                    "notifications": filter.acknowledged(),
                },
            });
            let written = acknowledgement(&id_text, &filter);
            assert_eq!(
                String::from_utf8(written).unwrap(),
                serde_json::to_string(&tree).unwrap()
            );
        }
    }
}

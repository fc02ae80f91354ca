//! The requests a session has running: every request's cancellation token
//! is a child of its session's, so the session's end stops all of it, by
//! whichever path it ends; and the requests still running after their
//! first poll are listed by JSON-RPC id, so `notifications/cancelled` can
//! stop one.
//!
//! A request's work (its handler, then its streamed reply) stops when its
//! token is cancelled: the future is dropped where it waits (so a handler
//! needs no cooperation to stop), and [`Context::cancelled`] tells a
//! handler that handed work elsewhere (a spawned task) to stop it too. The
//! tokens are cancelled by
//!
//! * the session's end, any path ([`RunningRequests::end`], called by the terminate
//!   winner's close callback): the session's token, and with it every
//!   request's;
//! * `notifications/cancelled` naming a running request of the session
//!   ([`RunningRequests::cancel`] through [`RunningRequests::cancel_notified`]; MCP 2025-11-25, Cancellation: "Receivers ... SHOULD
//!   stop processing the cancelled request ... not send a response");
//! * the handler timeout;
//! * at 2026-07-28, the client going away (there is no session).
//!
//! A client that merely disconnects from a session's request does not
//! cancel it (2025-11-25: disconnection is not cancellation).
//!
//! [`Context::cancelled`]: crate::http::app::Context::cancelled

use crate::http::wire::jsonrpc;
use crate::Reason;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};
use tokio_util::sync::CancellationToken;

/// The running requests of one session, kept in its registry entry.
#[derive(Debug, Default)]
pub(crate) struct RunningRequests {
    session: CancellationToken,
    /// Why the session ended, once it has: set before the token is
    /// cancelled, so a request that sees the cancellation reads it.
    ended: OnceLock<Reason>,
    listed: Mutex<List>,
}

/// The requests of a session that are still running after their first
/// poll, each under a number of its own (two requests may share an id).
#[derive(Debug, Default)]
struct List {
    next: u64,
    by_number: HashMap<u64, (Box<str>, CancellationToken)>,
}

/// A running request's place in [`RunningRequests`]'s list; dropping it takes the
/// request off.
#[must_use = "the request is listed only while this lives"]
pub(crate) struct Listed<'a> {
    running: &'a RunningRequests,
    number: u64,
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        self.running.lock().by_number.remove(&self.number);
    }
}

/// How many requests a `notifications/cancelled` stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Cancelled {
    /// None was running under that id (finished already, never started
    /// here, or answered at once): nothing to do, as the spec allows.
    Nothing,
    /// This many (one, unless the client reused an id).
    Requests(usize),
}

impl RunningRequests {
    fn lock(&self) -> MutexGuard<'_, List> {
        // The list stays consistent whatever a holder did (no calls out).
        self.listed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A token for a new request of this session: cancelled with the
    /// session, or on its own.
    pub(crate) fn request(&self) -> CancellationToken {
        self.session.child_token()
    }

    /// Lists a request still running after its first poll under its
    /// JSON-RPC id `id`, for [`cancel`](RunningRequests::cancel).
    pub(crate) fn list(&self, id: &Value, token: CancellationToken) -> Listed<'_> {
        let id = jsonrpc::id_key(id);
        let mut list = self.lock();
        let number = list.next;
        list.next += 1;
        list.by_number.insert(number, (id, token));
        Listed {
            running: self,
            number,
        }
    }

    /// `notifications/cancelled` (2025-11-25, Cancellation): stops the
    /// running request it names by `requestId`, if there is one. (The
    /// notification still goes to the application, as any other.)
    pub(crate) fn cancel_notified(&self, note: &jsonrpc::Notification) {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Cancel {
            request_id: Value,
        }
        let Ok(cancel) = note.params_as::<Cancel>() else {
            return;
        };
        if let Cancelled::Requests(n) = self.cancel(&jsonrpc::id_key(&cancel.request_id)) {
            tracing::debug!(requests = n, "cancelled by the client");
        }
    }

    /// `notifications/cancelled` for the request with JSON-RPC id `id` (its
    /// JSON text): cancels every running request of the session with it.
    pub(crate) fn cancel(&self, id: &str) -> Cancelled {
        let list = self.lock();
        let mut stopped = 0;
        for (listed, token) in list.by_number.values() {
            if **listed == *id {
                token.cancel();
                stopped += 1;
            }
        }
        match stopped {
            0 => Cancelled::Nothing,
            n => Cancelled::Requests(n),
        }
    }

    /// The session has ended, for `reason`: every request's work stops.
    /// Called once, by the terminate winner's close callback.
    pub(crate) fn end(&self, reason: Reason) {
        let _ = self.ended.set(reason);
        self.session.cancel();
    }

    /// Why the session ended, if it has.
    pub(crate) fn ended(&self) -> Option<Reason> {
        self.ended.get().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_cancels_every_request_and_says_why() {
        let running = RunningRequests::default();
        let (a, b) = (running.request(), running.request());
        assert_eq!(running.ended(), None);
        running.end(Reason::Deleted);
        assert!(a.is_cancelled() && b.is_cancelled());
        assert_eq!(running.ended(), Some(Reason::Deleted));
        // A request begun after the end is cancelled from the start.
        assert!(running.request().is_cancelled());
    }

    #[test]
    fn a_cancel_stops_the_named_requests_only() {
        let running = RunningRequests::default();
        let (one, two, again) = (running.request(), running.request(), running.request());
        let _one = running.list(&serde_json::json!(1), one.clone());
        let _two = running.list(&serde_json::json!("1"), two.clone());
        let listed = running.list(&serde_json::json!(1), again.clone());
        assert_eq!(running.cancel("7"), Cancelled::Nothing);
        assert_eq!(running.cancel("1"), Cancelled::Requests(2));
        assert!(one.is_cancelled() && again.is_cancelled() && !two.is_cancelled());
        drop(listed);
        assert_eq!(running.lock().by_number.len(), 2);
        assert_eq!(running.ended(), None);
    }
}

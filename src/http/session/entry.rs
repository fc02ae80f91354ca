//! What a session is in the registry ([`SessionEntry`]: the application's
//! state, the session's streams and its running work), and what its end
//! does, once, by whichever path it ends.

use crate::http::listen::{Audience, Charge, Member, Sessions, Topic, Topics};
use crate::http::session::asks::Asks;
use crate::http::session::running::RunningRequests;
use crate::http::sse::Streams;
use crate::http::wire::principal::Principal;
use crate::{Reason, Registry, SessionId};
use serde_json::Value;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

/// What a session is in the registry: the application's state, the
/// session's streams, and its running work.
pub struct SessionEntry<S> {
    pub(crate) state: S,
    pub(crate) streams: Streams,
    /// The requests running in the session, which end with it.
    pub(crate) running: RunningRequests,
    /// The session's requests to its client, unanswered.
    pub(crate) asks: Asks,
    /// The principal that opened the session, if one was present: only
    /// requests of the same principal find the session.
    pub(crate) owner: Option<Principal>,
    /// The resources it subscribed to (`resources/subscribe`), whose
    /// updates it hears, and whether it has ended.
    pub(crate) subscriptions: Mutex<Subscriptions>,
    /// The protocol version its `initialize` negotiated.
    pub(crate) version: &'static str,
    /// When it was opened (for `mcp_server_session_duration_seconds`; the
    /// coarse clock: a session's life is counted in seconds to hours).
    pub(crate) opened: coarsetime::Instant,
}

/// What a session subscribed to, and whether it has ended.
///
/// Its end (`close`, run once by the terminate winner) marks it closed and
/// leaves every URI under this lock; a subscribe joins a URI's topic only
/// under the same lock and only while it is open. So a subscribe that
/// races the session's end either joined before the end took the list (and
/// the end leaves that URI), or finds it closed and joins nothing: no join
/// outlives the session's cleanup (the loom model
/// `loom-tests/tests/subscriptions.rs`).
#[derive(Default)]
pub(crate) struct Subscriptions {
    pub(crate) closed: bool,
    /// Each URI (the topic index's copy) and its bytes' charge.
    pub(crate) uris: Vec<(Arc<str>, Charge)>,
    /// The URIs' bytes together.
    pub(crate) bytes: usize,
}

impl<S> SessionEntry<S> {
    pub(crate) fn new(
        state: S,
        streams: Streams,
        owner: Option<Principal>,
        version: &'static str,
    ) -> SessionEntry<S> {
        SessionEntry {
            state,
            streams,
            running: RunningRequests::default(),
            asks: Asks::default(),
            owner,
            subscriptions: Mutex::default(),
            version,
            opened: coarsetime::Instant::now(),
        }
    }

    /// The application's state of the session.
    #[cfg(feature = "internals")]
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The principal the session is bound to; `None` when its
    /// `initialize` had none.
    #[cfg(feature = "internals")]
    pub fn owner(&self) -> Option<&Principal> {
        self.owner.as_ref()
    }
}

impl<S: fmt::Debug> fmt::Debug for SessionEntry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionEntry")
            .field("state", &self.state)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// The registry's close callback: run once per session, by the winner of
/// its terminate, whatever the path. Stops the session's work, ends its
/// streams, logs the reason and calls `closed` (the application's
/// [`App::closed`](crate::http::app::App::closed)), whose panic is caught and logged.
///
/// The "session closed" line is at DEBUG, as per-request logs are in
/// tower-http's `TraceLayer`: a server that ends thousands of sessions a
/// second should not format and write a line for each by default (a failed
/// handler is also logged at WARN where it fails).
pub(crate) fn close<S>(
    id: &SessionId,
    entry: &SessionEntry<S>,
    reason: Reason,
    topics: &Topics,
    closed: impl FnOnce(&S),
) {
    // Work first: a request that stops sees why, and a streamed reply is
    // dropped before its stream is closed under it.
    entry.running.end(reason);
    entry.asks.close();
    // Its standalone stream leaves the list-change topics as it closes;
    // its resource subscriptions go here.
    entry.streams.close();
    let uris = {
        let mut subscriptions = entry
            .subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        subscriptions.closed = true;
        // Left under the lock: a subscribe waiting for it then finds the
        // session closed, and joins nothing.
        for (uri, _) in &subscriptions.uris {
            topics.leave(&Topic::Uri(Arc::clone(uri)), &Member::Session(*id));
        }
        std::mem::take(&mut subscriptions.uris)
    };
    // The charges given back outside the lock.
    drop(uris);
    // `?id`: the Debug form (index, generation, node) names the session
    // without its secret; the Display form is a credential.
    tracing::debug!(session = ?id, reason = reason.as_str(), "session closed");
    if std::panic::catch_unwind(AssertUnwindSafe(|| closed(&entry.state))).is_err() {
        tracing::error!(session = ?id, "App::closed panicked");
    }
}

/// What a publication needs of the sessions (`listen/deliver.rs`): a
/// notification on a session's standalone stream, if the session is live
/// and its principal may hear it (a full queue drops it, counted).
impl<S: Send + Sync + 'static> Sessions for Registry<SessionEntry<S>> {
    fn notify(&self, id: &SessionId, audience: &Audience, notification: &Value) -> bool {
        let Some(session) = self.get(id) else {
            return false;
        };
        if !audience.admits(session.owner.as_ref()) {
            return false;
        }
        session.streams.push(notification)
    }
}

//! What a session is in the registry ([`Entry`]: the application's state
//! and the session's streams), and the close callback the registry runs
//! when one ends.

use super::app::App;
use super::auth::Principal;
use super::sse::Streams;
use super::work::Work;
use crate::{Reason, SessionId};
use std::fmt;
use std::panic::AssertUnwindSafe;

/// What a session is in the registry: the application's state, the
/// session's streams, and its running work.
pub struct Entry<S> {
    pub(crate) state: S,
    pub(crate) streams: Streams,
    /// The requests running in the session, which end with it.
    pub(crate) work: Work,
    /// The principal that opened the session, if one was present: only
    /// requests of the same principal find the session.
    pub(crate) owner: Option<Principal>,
}

impl<S> Entry<S> {
    pub(crate) fn new(state: S, streams: Streams, owner: Option<Principal>) -> Entry<S> {
        Entry {
            state,
            streams,
            work: Work::default(),
            owner,
        }
    }

    /// The application's state of the session.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The principal the session is bound to; `None` when its
    /// `initialize` had none.
    pub fn owner(&self) -> Option<&Principal> {
        self.owner.as_ref()
    }
}

impl<S: fmt::Debug> fmt::Debug for Entry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("state", &self.state)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// The registry's close callback: run once per session, by the winner of
/// its terminate, whatever the path.
///
/// The "session closed" line is at DEBUG, as per-request logs are in
/// tower-http's `TraceLayer`: a server that ends thousands of sessions a
/// second should not format and write a line for each by default (a failed
/// handler is also logged at WARN where it fails).
pub(super) fn on_close<A: App>(app: &A, id: &SessionId, entry: &Entry<A::Session>, reason: Reason) {
    // Work first: a request that stops sees why, and a streamed reply is
    // dropped before its stream is closed under it.
    entry.work.end(reason);
    entry.streams.close();
    // `?id`: the Debug form (index, generation, node) names the session
    // without its secret; the Display form is a credential.
    tracing::debug!(session = ?id, reason = reason.as_str(), "session closed");
    let closed =
        std::panic::catch_unwind(AssertUnwindSafe(|| app.closed(id, &entry.state, reason)));
    if closed.is_err() {
        tracing::error!(session = ?id, "App::closed panicked");
    }
}

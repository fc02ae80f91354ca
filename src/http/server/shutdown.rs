//! How a server ends: gracefully.
//!
//! Order ([`SessionManager::shutdown_gracefully`](crate::http::SessionManager::shutdown_gracefully), which [`serve`](crate::http::serve)
//! runs after it stops accepting): refuse new sessions (503); let the
//! requests in flight finish, up to a deadline (connections are told to
//! take no new requests); then end every session with
//! [`Reason::Shutdown`](crate::Reason::Shutdown), which stops whatever work
//! is still running (the close callback cancels it, as at every end of a
//! session) and ends every SSE stream cleanly; then the connections close,
//! and those still open a moment later are dropped.

use super::connection::Phase;
use crate::http::app::App;
use crate::http::state::State;
use crate::Reason;
use std::time::Duration;
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;

/// How long connections get to close after the sessions have been ended
/// (their last responses and stream ends to flush), at most.
const LINGER: Duration = Duration::from_secs(1);

/// What a graceful shutdown did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Sessions ended with `Reason::Shutdown`.
    pub sessions_ended: usize,
    /// Whether every request in flight (and, in `serve`, every connection)
    /// finished within the deadline, before the sessions were ended.
    pub drained: bool,
    /// Accept calls that failed while serving for a reason other than one
    /// connection's (out of file descriptors, say); each paused the accept
    /// loop.
    pub accept_errors: u64,
}

/// [`SessionManager::shutdown`](crate::http::SessionManager::shutdown): ends
/// every session now.
pub(crate) fn now<A: App>(state: &State<A>) -> usize {
    // Set before the sweep: an insert racing it re-checks the flag after
    // inserting and ends its own session (see `legacy/initialize.rs`).
    state.start_shutdown();
    if let Some(tasks) = state.tasks() {
        tasks.shutdown();
    }
    state.registry().terminate_all(Reason::Shutdown)
}

/// Waits until no handler task is running, or `deadline` has passed;
/// whether they all finished.
pub(crate) async fn wait_idle<A: App>(state: &State<A>, deadline: Duration) -> bool {
    tokio::time::timeout(deadline, state.handlers().wait_idle())
        .await
        .is_ok()
}

/// [`SessionManager::shutdown_gracefully`](crate::http::SessionManager::shutdown_gracefully).
pub(crate) async fn gracefully<A: App>(state: &State<A>, deadline: Duration) -> ShutdownReport {
    state.start_shutdown();
    let drained = wait_idle(state, deadline).await;
    let sessions_ended = now(state);
    tracing::info!(sessions_ended, drained, "shut down");
    ShutdownReport {
        sessions_ended,
        drained,
        accept_errors: 0,
    }
}

/// [`gracefully`] for `serve`, whose connections
/// (their places under the cap are `slots`' permits, `max` in all) are told
/// to finish and are waited for too, within `deadline`; those still open
/// a moment after the sessions have ended are dropped.
pub(crate) async fn finish<A: App>(
    state: &State<A>,
    phase: watch::Sender<Phase>,
    slots: &Semaphore,
    max: u32,
    deadline: Duration,
) -> ShutdownReport {
    let start = Instant::now();
    phase.send_replace(Phase::Draining);
    let report = gracefully(state, deadline).await;
    let left = deadline.saturating_sub(start.elapsed()).max(LINGER);
    let closed = tokio::time::timeout(left, async {
        // Every place back under the cap: every connection has closed.
        drop(slots.acquire_many(max).await);
        state.handlers().wait_idle().await;
    })
    .await
    .is_ok();
    phase.send_replace(Phase::Stopped);
    ShutdownReport {
        drained: report.drained && closed && start.elapsed() <= deadline,
        ..report
    }
}

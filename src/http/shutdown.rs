//! How [`serve`](super::serve) ends: gracefully.
//!
//! Order on shutdown: stop accepting; end every session with
//! [`Reason::Shutdown`](crate::Reason::Shutdown) (close callbacks run, SSE
//! streams end cleanly, new `initialize` requests get 503); shut every
//! connection down gracefully (they finish their requests, take no new
//! ones) and wait for them and for handlers still running, up to a
//! deadline; then drop the connections that are left.

use super::connection::Phase;
use super::{App, SessionManager};
use std::time::Duration;
use tokio::sync::{watch, Semaphore};

/// What a graceful shutdown did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Sessions ended with `Reason::Shutdown`.
    pub sessions_ended: usize,
    /// Whether connections and handlers all finished within the deadline.
    pub drained: bool,
    /// Accept calls that failed while serving for a reason other than one
    /// connection's (out of file descriptors, say); each paused the accept
    /// loop.
    pub accept_errors: u64,
}

/// Ends sessions, drains the connections (whose places under the cap are
/// `slots`' permits, `max` in all) and handlers within `deadline`, then
/// stops what is left.
pub(crate) async fn finish<A: App>(
    manager: &SessionManager<A>,
    phase: watch::Sender<Phase>,
    slots: &Semaphore,
    max: u32,
    deadline: Duration,
) -> ShutdownReport {
    let sessions_ended = manager.shutdown();
    tracing::info!(sessions_ended, "shutting down");
    phase.send_replace(Phase::Draining);
    let drained = tokio::time::timeout(deadline, async {
        // Every place back under the cap: every connection has closed.
        let all = slots.acquire_many(max).await;
        drop(all);
        manager.inner.tasks.wait_idle().await;
    })
    .await
    .is_ok();
    phase.send_replace(Phase::Stopped);
    ShutdownReport {
        sessions_ended,
        drained,
        accept_errors: 0,
    }
}

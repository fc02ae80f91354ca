//! How a server ends: gracefully.
//!
//! Order ([`SessionManager::shutdown_gracefully`], which [`serve`](super::serve)
//! runs after it stops accepting): refuse new sessions (503); let the
//! requests in flight finish, up to a deadline (connections are told to
//! take no new requests); then end every session with
//! [`Reason::Shutdown`](crate::Reason::Shutdown), which stops whatever work
//! is still running (the close callback cancels it, as at every end of a
//! session) and ends every SSE stream cleanly; then the connections close,
//! and those still open a moment later are dropped.

use super::connection::Phase;
use super::{App, SessionManager};
use std::sync::atomic::Ordering;
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

impl<A: App> SessionManager<A> {
    /// Shuts down gracefully, wherever the manager is mounted (outside
    /// [`serve`](super::serve), call it once the listener has stopped
    /// accepting): refuses new sessions, waits up to `deadline` for the
    /// requests in flight to finish (an open `GET` stream is not waited
    /// for), then ends every session with
    /// [`Reason::Shutdown`](crate::Reason::Shutdown), which stops the work
    /// still running and ends every stream.
    pub async fn shutdown_gracefully(&self, deadline: Duration) -> ShutdownReport {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let drained = self.wait_idle(deadline).await;
        let sessions_ended = self.shutdown();
        tracing::info!(sessions_ended, drained, "shut down");
        ShutdownReport {
            sessions_ended,
            drained,
            accept_errors: 0,
        }
    }
}

/// [`SessionManager::shutdown_gracefully`] for `serve`, whose connections
/// (their places under the cap are `slots`' permits, `max` in all) are told
/// to finish and are waited for too, within `deadline`; those still open
/// a moment after the sessions have ended are dropped.
pub(crate) async fn finish<A: App>(
    manager: &SessionManager<A>,
    phase: watch::Sender<Phase>,
    slots: &Semaphore,
    max: u32,
    deadline: Duration,
) -> ShutdownReport {
    let start = Instant::now();
    phase.send_replace(Phase::Draining);
    let report = manager.shutdown_gracefully(deadline).await;
    let left = deadline.saturating_sub(start.elapsed()).max(LINGER);
    let closed = tokio::time::timeout(left, async {
        // Every place back under the cap: every connection has closed.
        drop(slots.acquire_many(max).await);
        manager.inner.tasks.wait_idle().await;
    })
    .await
    .is_ok();
    phase.send_replace(Phase::Stopped);
    ShutdownReport {
        drained: report.drained && closed && start.elapsed() <= deadline,
        ..report
    }
}

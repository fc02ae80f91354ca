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

use crate::http::app::App;
use crate::http::run::hub::Hub;
use crate::Reason;
use std::time::Duration;

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
pub(crate) fn now<A: App>(hub: &Hub<A>) -> usize {
    // Set before the sweep: an insert racing it re-checks the flag after
    // inserting and ends its own session (see `legacy/initialize.rs`).
    hub.phase.start_shutdown();
    if let Some(tasks) = hub.tasks.as_ref() {
        tasks.shutdown();
    }
    // Listen streams end gracefully (each gets its result): their clients
    // re-listen elsewhere.
    hub.listeners.end_all(Reason::Shutdown);
    hub.registry.terminate_all(Reason::Shutdown)
}

/// Waits until no handler task is running, or `deadline` has passed;
/// whether they all finished.
pub(crate) async fn wait_idle<A: App>(hub: &Hub<A>, deadline: Duration) -> bool {
    tokio::time::timeout(deadline, hub.runner.handlers.wait_idle())
        .await
        .is_ok()
}

/// [`SessionManager::shutdown_gracefully`](crate::http::SessionManager::shutdown_gracefully).
pub(crate) async fn gracefully<A: App>(hub: &Hub<A>, deadline: Duration) -> ShutdownReport {
    hub.phase.start_shutdown();
    let drained = wait_idle(hub, deadline).await;
    let sessions_ended = now(hub);
    tracing::info!(sessions_ended, drained, "shut down");
    ShutdownReport {
        sessions_ended,
        drained,
        accept_errors: 0,
    }
}

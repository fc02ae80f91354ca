//! How `serve` ends: the graceful shutdown of the manager
//! (`crate::http::endpoint::shutdown`), with the connections told to finish and waited
//! for too.

use super::connection::ServeMode;
use crate::http::app::App;
use crate::http::endpoint::shutdown::{self, ShutdownReport};
use crate::http::run::hub::Hub;
use std::time::Duration;
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;

/// How long connections get to close after the sessions have been ended
/// (their last responses and stream ends to flush), at most.
const LINGER: Duration = Duration::from_secs(1);

/// [`shutdown::gracefully`] for `serve`, whose connections
/// (their places under the cap are `slots`' permits, `max` in all) are told
/// to finish and are waited for too, within `deadline`; those still open
/// a moment after the sessions have ended are dropped.
pub(crate) async fn finish<A: App>(
    hub: &Hub<A>,
    phase: watch::Sender<ServeMode>,
    slots: &Semaphore,
    max: u32,
    deadline: Duration,
) -> ShutdownReport {
    let start = Instant::now();
    phase.send_replace(ServeMode::Draining);
    let report = shutdown::gracefully(hub, deadline).await;
    let left = deadline.saturating_sub(start.elapsed()).max(LINGER);
    let closed = tokio::time::timeout(left, async {
        // Every place back under the cap: every connection has closed.
        drop(slots.acquire_many(max).await);
        hub.runner.handlers.wait_idle().await;
    })
    .await
    .is_ok();
    phase.send_replace(ServeMode::Stopped);
    ShutdownReport {
        drained: report.drained && closed && start.elapsed() <= deadline,
        ..report
    }
}

//! The idle reaper: a tokio task that periodically ends idle sessions
//! through the registry's [`reap_idle`](crate::Registry::reap_idle).
//!
//! It never cancels anything: a session with a request in flight (an
//! [`InFlight`](crate::InFlight) guard alive) is not idle, however long the
//! request runs.

use super::{App, SessionManager};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// The running reaper; dropping it stops the task.
#[derive(Debug)]
pub struct Reaper(Option<JoinHandle<()>>);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

impl<A: App> SessionManager<A> {
    /// Starts the idle reaper on the current tokio runtime (a no-op without
    /// an idle timeout). It holds only a weak reference to the manager and
    /// stops when the manager is gone or the returned handle is dropped.
    pub fn spawn_reaper(&self) -> Reaper {
        let Some(period) = self.reap_interval() else {
            return Reaper(None);
        };
        let weak = Arc::downgrade(&self.inner);
        Reaper(Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval(period.max(Duration::from_millis(1)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                let ended = inner.registry.reap_idle();
                if ended > 0 {
                    tracing::debug!(ended, "reaped idle sessions");
                }
            }
        })))
    }
}

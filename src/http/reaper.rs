//! The idle reaper: a tokio task that periodically ends idle sessions
//! through the registry's [`reap_idle`](crate::Registry::reap_idle).
//!
//! It belongs to the manager: it starts with the first request the manager
//! serves inside a tokio runtime (or with [`serve`](super::serve), or an
//! explicit [`start_reaper`](SessionManager::start_reaper)), so a manager
//! mounted anywhere (axum, tower, bare hyper) reaps without hand wiring; it
//! stops when the last clone of the manager is dropped. There is at most
//! one per manager, and none without an idle timeout.
//!
//! It never cancels anything: a session with a request in flight (an
//! [`InFlight`](crate::InFlight) guard alive) is not idle, however long the
//! request runs.

use super::{App, SessionManager};
use std::sync::Arc;
use std::time::Duration;

impl<A: App> SessionManager<A> {
    /// Starts the idle reaper on the current tokio runtime unless it runs
    /// already; returns whether it runs. A no-op (`false`) without an idle
    /// timeout or outside a runtime. Every request calls this (one atomic
    /// load once started), so calling it yourself is needed only to reap
    /// before the first request.
    pub fn start_reaper(&self) -> bool {
        let Some(period) = self.reap_interval() else {
            return false;
        };
        if self.inner.reaper.get().is_some() {
            return true;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        let mut started = false;
        self.inner.reaper.get_or_init(|| {
            started = true;
            // A weak reference: the task must not keep the manager alive
            // (its `Drop` aborts the task).
            let weak = Arc::downgrade(&self.inner);
            runtime
                .spawn(async move {
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
                })
                .abort_handle()
        });
        if started {
            tracing::debug!(?period, "idle reaper started");
        }
        true
    }
}

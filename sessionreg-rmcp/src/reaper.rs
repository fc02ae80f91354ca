//! The idle reaper: a tokio task that ends idle sessions through
//! [`Registry::reap_idle`](sessionreg::Registry::reap_idle), started with the
//! manager's first session and stopped when the manager is dropped.

use crate::state::State;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::task::JoinHandle;

/// The reaper of one manager: nothing until the first session (so a manager
/// can be built outside a runtime, as rmcp users build theirs), then one
/// task on the runtime that served that session.
pub(crate) struct Reaper {
    every: Option<Duration>,
    task: OnceLock<AbortOnDrop>,
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Reaper {
    /// A reaper that sweeps `every` so often; `None`: no idle timeout, no
    /// task.
    pub(crate) fn new(every: Option<Duration>) -> Reaper {
        Reaper {
            every,
            task: OnceLock::new(),
        }
    }

    /// Starts the task, sweeping `state`'s registry, if it is not running
    /// yet. Called from `create_session`, so inside the server's runtime.
    pub(crate) fn start(&self, state: &Arc<State>) {
        let Some(every) = self.every else { return };
        if self.task.get().is_some() {
            return;
        }
        self.task.get_or_init(|| {
            // Weak: the task must not keep the registry (and so every
            // session) alive after the manager is gone.
            let state = Arc::downgrade(state);
            AbortOnDrop(tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let Some(state) = state.upgrade() else {
                        return;
                    };
                    let ended = state.registry().reap_idle();
                    if ended > 0 {
                        tracing::debug!(ended, "reaped idle sessions");
                    }
                }
            }))
        });
    }
}

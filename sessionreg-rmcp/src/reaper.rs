//! The reaper: a tokio task that sweeps a registry periodically (the
//! session manager's idle sessions through
//! [`Registry::reap_idle`](sessionreg::Registry::reap_idle), the task
//! manager's retained tasks through
//! [`TaskStore::reap`](sessionreg::TaskStore::reap)), started with the first
//! session or task and stopped by [`Reaper::stop`] or when its owner is
//! dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::task::JoinHandle;

/// The reaper of one manager: nothing until the first session or task (so
/// a manager can be built outside a runtime, as rmcp users build theirs),
/// then one task on the runtime that served it.
pub(crate) struct Reaper {
    every: Option<Duration>,
    /// Set once the task is started or the reaper stopped: the lock-free
    /// check on every session or task creation.
    settled: AtomicBool,
    task: Mutex<State>,
}

enum State {
    Idle,
    /// Held for its `Drop`, which aborts the task.
    Running {
        _task: AbortOnDrop,
    },
    Stopped,
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Reaper {
    /// A reaper that sweeps `every` so often; `None`: nothing to expire, no
    /// task.
    pub(crate) fn new(every: Option<Duration>) -> Reaper {
        Reaper {
            every,
            settled: AtomicBool::new(false),
            task: Mutex::new(State::Idle),
        }
    }

    /// Starts the task if it is not running yet (and was not stopped):
    /// every `every`, `reap(&target)`, for as long as `target` is alive
    /// (the task holds it weakly, so that it never keeps the registry, and
    /// every session or task in it, alive after its manager is gone).
    /// Called where a session or task is created, so inside the server's
    /// runtime.
    pub(crate) fn start<T: Send + Sync + 'static>(
        &self,
        target: &Arc<T>,
        what: &'static str,
        reap: fn(&T) -> usize,
    ) {
        let Some(every) = self.every else { return };
        // Acquire: pairs with the Release stores below (the state they
        // publish is read under the lock anyway; this only skips it).
        if self.settled.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if !matches!(*state, State::Idle) {
            return;
        }
        let target = Arc::downgrade(target);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(target) = target.upgrade() else {
                    return;
                };
                let ended = reap(&target);
                if ended > 0 {
                    tracing::debug!(ended, "reaped {what}");
                }
            }
        });
        *state = State::Running {
            _task: AbortOnDrop(task),
        };
        self.settled.store(true, Ordering::Release);
    }

    /// Stops the task for good (shutdown): a later [`start`](Self::start)
    /// starts nothing.
    pub(crate) fn stop(&self) {
        let mut state = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        // Dropping a running task's guard aborts it.
        *state = State::Stopped;
        self.settled.store(true, Ordering::Release);
    }
}

//! Configuration of a [`TaskManager`], checked once by `build`.

use super::{Inner, TaskManager};
use crate::reaper::Reaper;
use sessionreg::{BuildError, ManualClock, TaskStore};
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long an ended task stays readable by default: ten minutes
/// ([`sessionreg::tasks::DEFAULT_RETENTION`]), twice rmcp's default TTL, so
/// that rmcp's default `TaskOptions` advertise their `ttlMs` unchanged.
pub const DEFAULT_RETENTION: Duration = sessionreg::tasks::DEFAULT_RETENTION;

/// The most tasks held at once by default (running, or ended and retained):
/// [`sessionreg::DEFAULT_CAPACITY`], 65,536.
pub const DEFAULT_TASK_CAPACITY: usize = sessionreg::DEFAULT_CAPACITY;

/// Builds a [`TaskManager`]; see [`TaskManager::builder`].
///
/// ```
/// use std::time::Duration;
/// use sessionreg_rmcp::TaskManager;
///
/// let tasks = TaskManager::builder()
///     .capacity(10_000)
///     .retention(Duration::from_secs(15 * 60))
///     .node_id(7) // task ids start with "07": a balancer can route by it
///     .abort_at_ttl(true) // opt in: a task still running at its TTL fails
///     .build()
///     .expect("a valid configuration");
/// assert_eq!(tasks.running_task_count(), 0);
/// ```
#[must_use]
pub struct TaskManagerBuilder {
    capacity: usize,
    retention: Duration,
    node: u8,
    abort_at_ttl: bool,
    reap_every: Option<Option<Duration>>,
    clock: Option<ManualClock>,
}

impl fmt::Debug for TaskManagerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskManagerBuilder")
            .field("capacity", &self.capacity)
            .field("retention", &self.retention)
            .field("node", &self.node)
            .field("abort_at_ttl", &self.abort_at_ttl)
            .field("reap_every", &self.reap_every)
            .field("manual_clock", &self.clock.is_some())
            .finish()
    }
}

impl TaskManagerBuilder {
    pub(crate) fn new() -> TaskManagerBuilder {
        TaskManagerBuilder {
            capacity: DEFAULT_TASK_CAPACITY,
            retention: DEFAULT_RETENTION,
            node: 0,
            abort_at_ttl: false,
            reap_every: None,
            clock: None,
        }
    }

    /// The most tasks held at once, running or ended and retained (default
    /// [`DEFAULT_TASK_CAPACITY`]). Past it no task is created: see
    /// [`TaskManager::try_spawn`] and [`TaskManager::spawn`].
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// How long an ended task stays readable, counted from its work's end
    /// (default [`DEFAULT_RETENTION`]); then the reaper frees it and
    /// `tasks/get` answers it as unknown. A task's advertised `ttlMs` is at
    /// most this (see [`TaskManager`] on the TTL).
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// The node id in every task id (its first two hex digits; default 0),
    /// so that a fleet routes `tasks/*` by `Mcp-Name` to the node that owns
    /// the task, as it routes sessions.
    pub fn node_id(mut self, node: u8) -> Self {
        self.node = node;
        self
    }

    /// Whether a task still running when its `ttl_ms` has passed since it
    /// was created is stopped: its operation is dropped and the task fails
    /// with rmcp's "task expired" error (settled [`sessionreg::Ended::Expired`]).
    /// Default `false`: the TTL never ends running work, only how long the
    /// result is kept afterwards. rmcp 3.11's manager always does this.
    pub fn abort_at_ttl(mut self, abort: bool) -> Self {
        self.abort_at_ttl = abort;
        self
    }

    /// How often the reaper sweeps (default: a quarter of the retention,
    /// within 10 ms .. 1 s). A task is freed between `retention` and
    /// `retention` plus twice this after its work ends.
    pub fn reap_every(mut self, every: Duration) -> Self {
        self.reap_every = Some(Some(every));
        self
    }

    /// No background reaper: ended tasks are freed only by
    /// [`TaskManager::reap`] (for tests, or a server that runs its own
    /// timer).
    pub fn no_reaper(mut self) -> Self {
        self.reap_every = Some(None);
        self
    }

    /// Reads time for the retention from `clock` instead of the system's
    /// (for tests; the TTL deadline of [`abort_at_ttl`](Self::abort_at_ttl)
    /// is a tokio timer, so tokio's paused time drives it).
    pub fn manual_clock(mut self, clock: &ManualClock) -> Self {
        self.clock = Some(clock.clone());
        self
    }

    /// Builds the manager, or says what is wrong with the configuration.
    pub fn build(self) -> Result<TaskManager, BuildError> {
        let mut store = TaskStore::builder()
            .capacity(self.capacity)
            .retention(self.retention)
            .node_id(self.node);
        if let Some(clock) = &self.clock {
            store = store.manual_clock(clock);
        }
        let store = store.build()?;
        let reap_every = self.reap_every.unwrap_or_else(|| {
            Some((self.retention / 4).clamp(Duration::from_millis(10), Duration::from_secs(1)))
        });
        Ok(TaskManager {
            inner: Arc::new(Inner {
                store,
                capacity: self.capacity,
                retention_ms: u64::try_from(self.retention.as_millis()).unwrap_or(u64::MAX),
                node: self.node,
                abort_at_ttl: self.abort_at_ttl,
                closing: CancellationToken::new(),
                reaper: Reaper::new(reap_every),
                refused: AtomicU64::new(0),
            }),
        })
    }
}

//! [`TaskManager`]: rmcp's server-side runtime for the MCP Tasks extension
//! (SEP-2663, `io.modelcontextprotocol/tasks`), on a
//! [`sessionreg::TaskStore`].
//!
//! It has the methods of rmcp 3.11's `rmcp::task_manager::TaskManager`,
//! with the same signatures, and uses rmcp's own types around them
//! ([`TaskOptions`], [`TaskExit`], [`TaskFuture`], `rmcp::model::Task`,
//! `DetailedTask`), so a server swaps it in one line:
//!
//! ```
//! // was: use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
//! use sessionreg_rmcp::tasks::{TaskContext, TaskExit, TaskManager, TaskOptions};
//! use rmcp::model::{CallToolResult, ContentBlock, TaskStatus};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let tasks = TaskManager::new();
//! let task = tasks.spawn(TaskOptions::new(), |ctx| {
//!     Box::pin(async move {
//!         tokio::select! {
//!             _ = ctx.cancelled() => Err(TaskExit::Cancelled),
//!             _ = tokio::time::sleep(std::time::Duration::from_millis(5)) => {
//!                 Ok(CallToolResult::success(vec![ContentBlock::text("42")]))
//!             }
//!         }
//!     })
//! });
//! assert_eq!(task.task_id.len(), 48); // the store's id: node, slot, generation, secret
//! // In a ServerHandler: GetTaskResult::new(tasks.get_task(&request.task_id)?), and
//! // tasks.update_task(&id, request.input_responses), tasks.cancel_task(&id).
//! assert_eq!(tasks.get_task(&task.task_id).unwrap().status(), TaskStatus::Working);
//! # }
//! ```
//!
//! # What is the same
//!
//! Where SEP-2663 leaves room this manager does what rmcp's does:
//! `tasks/cancel` is cooperative (it records the intent, wakes
//! [`TaskContext::cancelled`] and every pending
//! [`request_input`](TaskContext::request_input), and acknowledges at once;
//! the operation picks the terminal status, and a task that finishes anyway
//! completes); it acknowledges a task already ended too; `tasks/update`
//! delivers the responses whose keys are outstanding and ignores the rest
//! (unknown, already answered), so a partial set is fine; input keys are
//! unique for a task's life; a task reports `input_required` while any
//! request is outstanding; a tool result with `isError: true` completes its
//! task, and a [`TaskExit::Error`] fails it with the error inlined; an
//! unknown task id is `-32602` (invalid params) on all three methods; a
//! task is readable by `tasks/get` before [`spawn`](TaskManager::spawn)
//! returns.
//!
//! # Differences from rmcp 3.11's `TaskManager`
//!
//! | | rmcp 3.11 | this manager |
//! |---|---|---|
//! | state | one `Mutex<HashMap>` for all tasks | a [`sessionreg::TaskStore`]: a lock-free registry; each task has a lock of its own, taken by its own calls only |
//! | work per call | every `spawn` / `get_task` / `update_task` / `cancel_task` / `running_task_count` sweeps every task inside the global lock: O(n) | O(1): a lookup by id; `running_task_count` reads the store's counters |
//! | freeing ended tasks | by that sweep, only when some call comes; an idle manager keeps everything | a background reaper (a tokio task, started with the first task, stopped by [`shutdown`](TaskManager::shutdown) or the last clone's drop) frees a task [`retention`](TaskManagerBuilder::retention) after its work ended (default 10 min; late by at most two sweeps, [`reap_every`](TaskManagerBuilder::reap_every)) |
//! | TTL and running work | a task still running at `created + ttl_ms` is aborted and fails ("task expired"), at the first call after that instant | the TTL never ends running work unless you opt in with [`abort_at_ttl(true)`](TaskManagerBuilder::abort_at_ttl); then the deadline (a per-task timer, no sweep) drops the operation and the task fails with rmcp's "task expired" error |
//! | retention | `ttl_ms` again after the task ended; `ttl_ms: None` keeps a task forever | one retention for all tasks, from the work's end; nothing is kept forever |
//! | advertised `ttlMs` | `ttl_ms` as given (`None`: `null`, unlimited) | `min(ttl_ms, retention)` (`None` counts as unlimited): a task is always readable for at least what it advertises, so with the defaults (5 min TTL, 10 min retention) the value is rmcp's |
//! | capacity | none | [`capacity`](TaskManagerBuilder::capacity) (default 65,536 tasks held, running or retained): see [At capacity](#at-capacity) |
//! | task ids | UUIDv4 (122 random bits) | the store's ids: 48 hex digits, the first two the node id ([`node_id`](TaskManagerBuilder::node_id), for a fleet that routes `tasks/*` by `Mcp-Name`), then slot, generation and a 128-bit secret from a CSPRNG; a reused slot gets a new generation, so an old id never names a new task |
//! | unknown task error | message `unknown task: <id>` | message `unknown task`, without the id (ids grant access, and rmcp logs error answers at WARN) |
//! | `running_task_count` | tasks not ended, after a sweep; 0 after `shutdown` | tasks created and not yet ended, from the store's counters (a sum over their per-thread stripes, no lock); 0 after `shutdown` |
//! | a panicking operation | its task stays `working` until its TTL (for ever with `ttl_ms: None`) | its task fails at once ("task abandoned") |
//! | `request_input` after `tasks/cancel` | waits for an answer no client sends | returns [`TaskExit::Cancelled`] at once |
//! | a `request_input` future dropped unanswered | its request stays listed in `inputRequests` | its request is withdrawn |
//! | `shutdown` | aborts running work and clears every task; the manager then serves new tasks as before | aborts running work (its tasks end abandoned), frees every task, stops the reaper; from then on `spawn` refuses (see below) and `tasks/get` answers unknown |
//! | dropping the manager | running work goes on | the same (its result is kept until it ends, then freed with the store); the reaper stops |
//! | request association (SEP-2260) | the operation runs in rmcp's crate-private `ORIGINATING_REQUEST` scope of the `tools/call` that spawned it | not possible from outside rmcp: server-to-client requests the operation sends through a `Peer` are not marked as the call's (by then the `tools/call` has been answered with `CreateTaskResult`, so its stream is usually closed anyway); use [`request_input`](TaskContext::request_input), which needs no stream |
//! | principals | none | none in rmcp's API either; see [Principals](#principals) |
//! | extra API | — | [`try_spawn`](TaskManager::try_spawn), the `*_as` methods, [`builder`](TaskManager::builder), [`stats`](TaskManager::stats) and [`metrics`](TaskManager::metrics) (Prometheus text: `sessionreg_tasks_running`, `sessionreg_tasks_ended_total{outcome}`, ...), [`reap`](TaskManager::reap) |
//!
//! # At capacity
//!
//! rmcp's `spawn` returns a `Task`, not a `Result`, so it cannot refuse.
//! Here:
//!
//! * [`try_spawn`](TaskManager::try_spawn) returns [`SpawnError`], which
//!   converts into an rmcp `ErrorData` (`-32603`, saying the store is full):
//!   `tasks.try_spawn(options, work)?` in `call_tool` answers the
//!   `tools/call` with that JSON-RPC error, and the client knows at once
//!   that nothing runs. Use it in new code.
//! * [`spawn`](TaskManager::spawn), kept for the one-line swap, never
//!   runs the work either (`make_future` is not called) and returns a task
//!   that is already `failed`: its status message says why, and
//!   `tasks/get` on its id answers `failed` with the same `-32603` error
//!   in `error`, as for any failed task. Such an id (`NN-refused-...`)
//!   names no stored task: the answer is computed from the id, so a
//!   refusal costs no room in the full store, and `tasks/update` and
//!   `tasks/cancel` acknowledge it as an ended task. A client that polls
//!   sees a failed task with the reason, which is what a task that could
//!   not start is; a `tools/call` error would be more direct, hence
//!   `try_spawn`.
//!
//! The same goes after [`shutdown`](TaskManager::shutdown) ("the server is
//! shutting down").
//!
//! # Principals
//!
//! rmcp's task API names no principal, so [`get_task`](TaskManager::get_task),
//! [`update_task`](TaskManager::update_task) and
//! [`cancel_task`](TaskManager::cancel_task) act on any task whose id they
//! are given: the id's 128-bit secret is the only guard, as with rmcp. A
//! server that authenticates its clients can bind each task to who created
//! it: [`spawn_as`](TaskManager::spawn_as) / [`try_spawn_as`](TaskManager::try_spawn_as)
//! record a principal, and [`get_task_as`](TaskManager::get_task_as),
//! [`update_task_as`](TaskManager::update_task_as) and
//! [`cancel_task_as`](TaskManager::cancel_task_as) answer another
//! principal's task (and an unbound one) exactly as an unknown id. Use the
//! `*_as` methods for all four calls: the plain ones do not check.

mod builder;
mod context;
mod entry;

pub use builder::{TaskManagerBuilder, DEFAULT_RETENTION, DEFAULT_TASK_CAPACITY};
pub use context::TaskContext;
// rmcp's, so that every name of `rmcp::task_manager` is here too.
pub use rmcp::task_manager::{
    current_timestamp, TaskExit, TaskFuture, TaskOptions, DEFAULT_POLL_INTERVAL_MS,
    DEFAULT_TASK_TTL_MS,
};

use crate::reaper::Reaper;
use entry::{detailed, error_object, object_of, Entry, Found, Store};
use rmcp::model::{DetailedTask, Task, TaskPayload, TaskStatus};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use sessionreg::{Ended, TaskStats};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Server-side task store and executor for the SEP-2663 Tasks extension,
/// with the methods of rmcp 3.11's `TaskManager`: see the
/// [module docs](self) for what is the same and what differs.
///
/// Cheaply cloneable; all clones share the same state. A server keeps one
/// for all its connections (with the 2026-07-28 stateless wire, rmcp makes
/// a handler per request; a task outlives the request that created it).
#[derive(Clone)]
pub struct TaskManager {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    store: Store,
    capacity: usize,
    retention_ms: u64,
    node: u8,
    abort_at_ttl: bool,
    /// Cancelled by `shutdown`: running work stops, spawns are refused.
    closing: CancellationToken,
    reaper: Reaper,
    /// Numbers the refused tasks' ids.
    refused: AtomicU64,
}

impl Default for TaskManager {
    /// The defaults: capacity 65,536, retention 10 min, node 0, the TTL
    /// never aborting running work.
    fn default() -> Self {
        TaskManager::builder()
            .build()
            .expect("the default configuration is valid")
    }
}

impl fmt::Debug for TaskManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskManager")
            .field("store", &self.inner.store)
            .field("capacity", &self.inner.capacity)
            .field("retention_ms", &self.inner.retention_ms)
            .field("abort_at_ttl", &self.inner.abort_at_ttl)
            .field("closing", &self.inner.closing.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// Why [`TaskManager::try_spawn`] created no task.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpawnError {
    /// The store holds its capacity of tasks (running, or ended and
    /// retained).
    AtCapacity {
        /// The configured maximum of tasks held.
        capacity: usize,
    },
    /// [`TaskManager::shutdown`] was called.
    ShuttingDown,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::AtCapacity { capacity } => write!(
                f,
                "task not started: the task store is full ({capacity} tasks)"
            ),
            SpawnError::ShuttingDown => {
                f.write_str("task not started: the server is shutting down")
            }
        }
    }
}

impl std::error::Error for SpawnError {}

impl From<SpawnError> for McpError {
    /// `-32603` (internal error) with the reason, and
    /// `data: {"reason": "at_capacity", "capacity": N}` or
    /// `{"reason": "shutting_down"}`.
    fn from(error: SpawnError) -> McpError {
        let data = match &error {
            SpawnError::AtCapacity { capacity } => {
                json!({ "reason": "at_capacity", "capacity": capacity })
            }
            SpawnError::ShuttingDown => json!({ "reason": "shutting_down" }),
        };
        McpError::internal_error(error.to_string(), Some(data))
    }
}

/// The answer for an id that names no task: as rmcp's (`-32602`), without
/// the id.
fn unknown_task() -> McpError {
    McpError::invalid_params("unknown task", None)
}

/// Settles a task's end under its lock, once: from the work's result, or,
/// if the work is dropped first (a panic, shutdown), as abandoned.
struct Finisher {
    running: Option<sessionreg::Running<Entry, rmcp::model::JsonObject>>,
    store: Store,
}

impl Finisher {
    fn finish(&mut self, ended: Ended<rmcp::model::JsonObject>) {
        let Some(running) = self.running.take() else {
            return;
        };
        {
            let entry = running.value();
            let mut state = entry.lock();
            if self.store.settle(&running, ended).is_won() {
                // Whoever waits for input stops waiting (their senders go).
                state.pending.clear();
                state.touch();
            }
        }
        // Ends the task's work in the store: its retention starts. (Its own
        // settle, as abandoned, loses to the one above.)
        drop(running);
    }
}

impl Drop for Finisher {
    fn drop(&mut self) {
        self.finish(Ended::Abandoned);
    }
}

/// A task's work: its operation, raced against the manager's shutdown and,
/// with `abort_at_ttl`, its deadline. Whichever wins ends the task; the
/// others are dropped with the `select!`.
async fn run(
    mut finisher: Finisher,
    operation: TaskFuture,
    deadline: Option<tokio::time::Instant>,
    closing: CancellationToken,
) {
    let expiry = async move {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    let ended = tokio::select! {
        biased;
        _ = closing.cancelled() => Ended::Abandoned,
        _ = expiry => Ended::Expired,
        result = operation => match result {
            Ok(result) => Ended::Completed(object_of(&result)),
            Err(TaskExit::Cancelled) => Ended::Cancelled,
            Err(TaskExit::Error(error)) => Ended::Failed(error_object(&error)),
        },
    };
    finisher.finish(ended);
}

/// The id of a task refused at spawn: `NN-refused-KIND-MS-SEQ` (node, why,
/// when in Unix milliseconds, a counter). Not hex, so never a store id.
const REFUSED: &str = "-refused-";

impl TaskManager {
    /// A manager with the defaults (as rmcp's `TaskManager::new`): capacity
    /// [`DEFAULT_TASK_CAPACITY`], retention [`DEFAULT_RETENTION`], node 0,
    /// the TTL never aborting running work.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts configuring a manager.
    pub fn builder() -> TaskManagerBuilder {
        TaskManagerBuilder::new()
    }

    /// Spawn an operation as a task and return its seed [`Task`] state for a
    /// `CreateTaskResult`. The task is durably observable via
    /// [`Self::get_task`] before this method returns.
    ///
    /// `make_future` receives a [`TaskContext`] for mid-task input requests,
    /// status messages, and cooperative cancellation checks. It is called
    /// here, then the future runs on a tokio task (call this inside a tokio
    /// runtime, as rmcp's).
    ///
    /// At capacity, or after [`shutdown`](Self::shutdown), `make_future` is
    /// not called and the task returned is already `failed` (see
    /// [At capacity](self#at-capacity)); [`try_spawn`](Self::try_spawn)
    /// says so as an error instead.
    pub fn spawn<F>(&self, options: TaskOptions, make_future: F) -> Task
    where
        F: FnOnce(TaskContext) -> TaskFuture,
    {
        self.spawn_or_refuse(None, options, make_future)
    }

    /// [`spawn`](Self::spawn), refusing with an error when no task can be
    /// created (the store is full, or the manager shut down): `make_future`
    /// is then not called. The error converts into rmcp's `ErrorData`, so
    /// `?` in `call_tool` answers the `tools/call` with it.
    pub fn try_spawn<F>(&self, options: TaskOptions, make_future: F) -> Result<Task, SpawnError>
    where
        F: FnOnce(TaskContext) -> TaskFuture,
    {
        self.spawn_inner(None, &options, make_future)
    }

    /// [`spawn`](Self::spawn) for `principal`: only the `*_as` methods with
    /// the same principal find the task (see [Principals](self#principals)).
    pub fn spawn_as<F>(&self, principal: &str, options: TaskOptions, make_future: F) -> Task
    where
        F: FnOnce(TaskContext) -> TaskFuture,
    {
        self.spawn_or_refuse(Some(principal), options, make_future)
    }

    /// [`try_spawn`](Self::try_spawn) for `principal`.
    pub fn try_spawn_as<F>(
        &self,
        principal: &str,
        options: TaskOptions,
        make_future: F,
    ) -> Result<Task, SpawnError>
    where
        F: FnOnce(TaskContext) -> TaskFuture,
    {
        self.spawn_inner(Some(principal), &options, make_future)
    }

    /// Handle `tasks/get`: return the current [`DetailedTask`] state.
    pub fn get_task(&self, task_id: &str) -> Result<DetailedTask, McpError> {
        if let Some(refused) = self.refused(task_id) {
            return Ok(refused);
        }
        Ok(detailed(&self.lookup(task_id, None)?))
    }

    /// [`get_task`](Self::get_task) of `principal`'s task; any other task
    /// is unknown.
    pub fn get_task_as(&self, principal: &str, task_id: &str) -> Result<DetailedTask, McpError> {
        if let Some(refused) = self.refused(task_id) {
            return Ok(refused);
        }
        Ok(detailed(&self.lookup(task_id, Some(principal))?))
    }

    /// Handle `tasks/update`: deliver `inputResponses` to the running
    /// operation. Unknown, already-answered, or superseded keys are ignored
    /// per spec; a partial set of responses is accepted.
    pub fn update_task(
        &self,
        task_id: &str,
        input_responses: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), McpError> {
        self.update(task_id, None, input_responses)
    }

    /// [`update_task`](Self::update_task) of `principal`'s task.
    pub fn update_task_as(
        &self,
        principal: &str,
        task_id: &str,
        input_responses: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), McpError> {
        self.update(task_id, Some(principal), input_responses)
    }

    /// Handle `tasks/cancel`: cooperative cancellation (SEP-2663).
    ///
    /// Records the cancellation *intent* and acknowledges immediately, but
    /// does **not** abort the underlying future or force a terminal state.
    /// The operation observes cancellation via
    /// [`TaskContext::is_cancel_requested`] / [`TaskContext::cancelled`], or
    /// via the error returned from a pending [`TaskContext::request_input`]
    /// call (whose response channel is dropped here), and decides its own
    /// terminal status:
    ///
    /// - stops with [`TaskExit::Cancelled`] → recorded as `cancelled`,
    /// - stops with [`TaskExit::Error`] → recorded as `failed` with the
    ///   error inlined (a real failure after a cancel request is not masked),
    /// - finishes its work anyway → recorded as `completed` — per the spec,
    ///   "the task may still reach a non-`cancelled` terminal status".
    ///
    /// A task that has ended is acknowledged too, and stays as it ended.
    pub fn cancel_task(&self, task_id: &str) -> Result<(), McpError> {
        self.cancel(task_id, None)
    }

    /// [`cancel_task`](Self::cancel_task) of `principal`'s task.
    pub fn cancel_task_as(&self, principal: &str, task_id: &str) -> Result<(), McpError> {
        self.cancel(task_id, Some(principal))
    }

    /// Number of tasks currently in a non-terminal state: created and not
    /// yet ended, from the store's counters. 0 from
    /// [`shutdown`](Self::shutdown) on, as with rmcp's manager: every task
    /// was aborted then (its work may still be unwinding; the store counts
    /// it `abandoned` once its future is dropped).
    pub fn running_task_count(&self) -> usize {
        if self.inner.closing.is_cancelled() {
            return 0;
        }
        usize::try_from(self.inner.store.stats().running()).unwrap_or(usize::MAX)
    }

    /// Abort all running tasks and clear all task state: every running
    /// operation is dropped (its task ends abandoned, and is counted so),
    /// every task is freed, the reaper stops. From then on
    /// [`spawn`](Self::spawn) refuses and `tasks/get` answers unknown.
    pub fn shutdown(&self) {
        self.inner.closing.cancel();
        self.inner.store.shutdown();
        self.inner.reaper.stop();
    }

    /// A snapshot of the store's counters: tasks held, created, running,
    /// ended by kind (`completed`, `failed`, `cancelled`, `expired`,
    /// `abandoned`), lookups of unknown ids.
    pub fn stats(&self) -> TaskStats {
        self.inner.store.stats()
    }

    /// The store's counters in Prometheus text (serve it with
    /// [`sessionreg::metrics::CONTENT_TYPE`] on a route of your own, beside
    /// the session manager's): the stable `sessionreg_tasks_*` names of
    /// [`sessionreg::metrics::write_tasks`].
    pub fn metrics(&self) -> String {
        let mut out = String::new();
        sessionreg::metrics::write_tasks(&mut out, &self.stats());
        out
    }

    /// Frees the tasks whose retention has passed since their work ended;
    /// how many. The reaper calls it periodically; call it yourself after
    /// [`no_reaper`](TaskManagerBuilder::no_reaper).
    pub fn reap(&self) -> usize {
        self.inner.store.reap()
    }

    fn spawn_or_refuse<F>(&self, owner: Option<&str>, options: TaskOptions, make_future: F) -> Task
    where
        F: FnOnce(TaskContext) -> TaskFuture,
    {
        match self.spawn_inner(owner, &options, make_future) {
            Ok(task) => task,
            Err(refusal) => {
                tracing::warn!("{refusal}");
                self.refused_task(&refusal, &options)
            }
        }
    }

    fn spawn_inner<F>(
        &self,
        owner: Option<&str>,
        options: &TaskOptions,
        make_future: F,
    ) -> Result<Task, SpawnError>
    where
        F: FnOnce(TaskContext) -> TaskFuture,
    {
        let inner = &self.inner;
        if inner.closing.is_cancelled() {
            return Err(SpawnError::ShuttingDown);
        }
        inner
            .reaper
            .start(&self.inner, "ended tasks", |inner| inner.store.reap());
        let entry = Entry::new(
            owner.map(str::to_owned),
            self.advertised_ttl(options.ttl_ms),
            options.poll_interval_ms,
            options.status_message.clone(),
        );
        let running = inner
            .store
            .create(entry)
            .map_err(|_| SpawnError::AtCapacity {
                capacity: inner.capacity,
            })?;
        let id = running.id();
        let _ = running.value().id.set(id.to_string());
        let seed = {
            let entry = running.value();
            entry.task(&entry.lock(), TaskStatus::Working)
        };
        let finisher = Finisher {
            running: Some(running),
            store: inner.store.clone(),
        };
        // Only `shutdown` can have ended it since `create`: then the
        // finisher settles it as abandoned.
        let found = inner.store.get(&id).map_err(|_| SpawnError::ShuttingDown)?;
        let deadline = match (inner.abort_at_ttl, options.ttl_ms) {
            (true, Some(ttl)) => Some(tokio::time::Instant::now() + Duration::from_millis(ttl)),
            _ => None,
        };
        let operation = make_future(TaskContext::new(found, inner.closing.clone()));
        tokio::spawn(run(finisher, operation, deadline, inner.closing.clone()));
        Ok(seed)
    }

    /// The `ttlMs` a task advertises: what it asked for, but never more than
    /// the retention (it is readable at least that long after its creation:
    /// while it runs, then for the retention), and at least 1 ms.
    fn advertised_ttl(&self, ttl_ms: Option<u64>) -> Option<u64> {
        let retention = self.inner.retention_ms;
        Some(ttl_ms.map_or(retention, |ttl| ttl.min(retention)).max(1))
    }

    fn lookup(&self, task_id: &str, owner: Option<&str>) -> Result<Found, McpError> {
        let store = &self.inner.store;
        let id = store
            .parse_id(task_id.as_bytes())
            .map_err(|_| unknown_task())?;
        match owner {
            None => store.get(&id),
            Some(owner) => store.get_if(&id, |entry| entry.owner.as_deref() == Some(owner)),
        }
        .map_err(|_| unknown_task())
    }

    fn update(
        &self,
        task_id: &str,
        owner: Option<&str>,
        input_responses: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), McpError> {
        if self.refused(task_id).is_some() {
            return Ok(());
        }
        let found = self.lookup(task_id, owner)?;
        let mut state = found.value().lock();
        for (key, value) in input_responses {
            if let Some(pending) = state.pending.remove(&key) {
                // A dropped receiver means the operation moved on; ignore.
                let _ = pending.answer.send(value);
            }
        }
        state.touch();
        Ok(())
    }

    fn cancel(&self, task_id: &str, owner: Option<&str>) -> Result<(), McpError> {
        if self.refused(task_id).is_some() {
            return Ok(());
        }
        let found = self.lookup(task_id, owner)?;
        let entry = found.value();
        // Before the lock: a `request_input` that takes the lock after this
        // sees the cancel and does not wait; one that took it before has
        // its sender dropped below.
        entry.cancel.cancel();
        let mut state = entry.lock();
        if !found.has_ended() {
            // Wake any operation parked on `request_input`; the task leaves
            // `input_required` and reports `working` until it settles.
            state.pending.clear();
            state.touch();
        }
        Ok(())
    }

    /// The already-failed seed of a task that could not be created.
    fn refused_task(&self, refusal: &SpawnError, options: &TaskOptions) -> Task {
        let kind = match refusal {
            SpawnError::AtCapacity { .. } => "full",
            SpawnError::ShuttingDown => "shutdown",
        };
        // Milliseconds: what the id keeps, so `tasks/get` says the same.
        let now = chrono::Utc::now();
        let now = chrono::DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now);
        let seq = self.inner.refused.fetch_add(1, Ordering::Relaxed);
        let id = format!(
            "{:02x}{REFUSED}{kind}-{}-{seq}",
            self.inner.node,
            now.timestamp_millis()
        );
        let at = now.to_rfc3339();
        let mut task = Task::new(id, TaskStatus::Failed, at.clone(), at);
        task.poll_interval_ms = options.poll_interval_ms;
        task.status_message = Some(refusal.to_string());
        task
    }

    /// `tasks/get`'s answer for the id of a refused task: computed from the
    /// id, nothing is stored. `None` for any other id.
    fn refused(&self, task_id: &str) -> Option<DetailedTask> {
        let rest = task_id.get(2..)?.strip_prefix(REFUSED)?;
        let mut parts = rest.splitn(3, '-');
        let refusal = match parts.next()? {
            "full" => SpawnError::AtCapacity {
                capacity: self.inner.capacity,
            },
            "shutdown" => SpawnError::ShuttingDown,
            _ => return None,
        };
        let ms: i64 = parts.next()?.parse().ok()?;
        parts.next()?.parse::<u64>().ok()?;
        let at = chrono::DateTime::from_timestamp_millis(ms)?.to_rfc3339();
        let mut task = Task::new(task_id, TaskStatus::Failed, at.clone(), at);
        task.status_message = Some(refusal.to_string());
        let error = error_object(&McpError::from(refusal));
        Some(DetailedTask::new(task, TaskPayload::Failed { error }))
    }
}

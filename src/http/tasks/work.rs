//! What an application hands the layer to run as a task ([`TaskWork`]),
//! and what that work sees while it runs ([`TaskContext`]).

use super::entry::TaskEntry;
use super::places::Places;
use super::Store;
use crate::http::input::InputRequests;
use crate::http::wire::jsonrpc::{self, RpcError};
use crate::{Ended, TaskRef};
use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

type Work = Box<dyn FnOnce(TaskContext) -> BoxFuture<'static, Result<Value, RpcError>> + Send>;

/// Work a `tools/call` may run as a task (the `io.modelcontextprotocol/tasks`
/// extension): answer it as [`Reply::Task`](crate::http::Reply::Task).
///
/// The layer decides, per request, as the extension says the server does:
/// for a 2026-07-28 client that declared the extension on this request (and
/// a manager built with [`Builder::tasks`](crate::http::Builder::tasks)),
/// the task is created, its work started, and the client answered a
/// `CreateTaskResult` at once; it polls `tasks/get`. For any other client
/// the work runs inline and its outcome is the call's answer, unless the
/// work is [`required`](TaskWork::required) to be a task: then a 2026-07-28
/// client that did not declare the extension gets the spec's `-32021`.
///
/// The work's `Ok` is the tool's result (`CallToolResult`; one with
/// `isError: true` completes its task, as the spec says); its `Err` fails
/// the task with that JSON-RPC error.
///
/// ```
/// use serde_json::json;
/// use sessionreg::http::TaskWork;
///
/// let work = TaskWork::new(|_ctx| async move {
///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
///     Ok(json!({ "content": [{ "type": "text", "text": "done" }] }))
/// })
/// .status_message("resizing");
/// # let _ = work;
/// ```
pub struct TaskWork {
    pub(crate) work: Work,
    pub(crate) required: bool,
    pub(crate) poll_interval: Option<Duration>,
    pub(crate) status_message: Option<String>,
}

impl TaskWork {
    /// The extension's identifier, as clients declare it under
    /// `capabilities.extensions` (and `server/discover` advertises it).
    pub const EXTENSION: &'static str = super::TASKS_EXTENSION;

    /// The polling interval suggested to clients unless the work says
    /// otherwise ([`poll_interval`](TaskWork::poll_interval)).
    pub const DEFAULT_POLL_INTERVAL: Duration = super::DEFAULT_POLL_INTERVAL;

    /// Work to run: `work` gets the task's [`TaskContext`].
    pub fn new<F, Fut>(work: F) -> TaskWork
    where
        F: FnOnce(TaskContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        TaskWork {
            work: Box::new(move |ctx| Box::pin(work(ctx))),
            required: false,
            poll_interval: None,
            status_message: None,
        }
    }

    /// Runs only as a task: a 2026-07-28 client that did not declare the
    /// tasks extension on its request gets `-32021` naming it, and the work
    /// does not run.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// The polling interval suggested to the client (`pollIntervalMs`;
    /// default [`TaskWork::DEFAULT_POLL_INTERVAL`]).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = Some(interval);
        self
    }

    /// The task's first status message (`statusMessage`).
    pub fn status_message(mut self, message: impl Into<String>) -> Self {
        self.status_message = Some(message.into());
        self
    }
}

impl fmt::Debug for TaskWork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskWork")
            .field("required", &self.required)
            .field("poll_interval", &self.poll_interval)
            .field("status_message", &self.status_message)
            .finish_non_exhaustive()
    }
}

/// What running [`TaskWork`] sees: its task, to ask the client for input
/// through and to say how it goes; or nothing, when it runs inline as the
/// call's answer.
pub struct TaskContext {
    inner: Backing,
}

enum Backing {
    Task {
        task: TaskRef<TaskEntry, Value>,
        id: String,
        /// The store (to fail the task when its input is late) and its
        /// places (to record when its place frees).
        store: Store,
        places: Arc<Places>,
        /// How long an `input` call waits; `None`: as long as the work.
        input_timeout: Option<Duration>,
    },
    Inline {
        cancel: CancellationToken,
    },
}

impl TaskContext {
    pub(crate) fn task(
        task: TaskRef<TaskEntry, Value>,
        id: String,
        store: Store,
        places: Arc<Places>,
        input_timeout: Option<Duration>,
    ) -> TaskContext {
        TaskContext {
            inner: Backing::Task {
                task,
                id,
                store,
                places,
                input_timeout,
            },
        }
    }

    pub(crate) fn inline(cancel: CancellationToken) -> TaskContext {
        TaskContext {
            inner: Backing::Inline { cancel },
        }
    }

    /// The task's id; `None` when the work runs inline (the client did not
    /// ask for tasks).
    pub fn task_id(&self) -> Option<&str> {
        match &self.inner {
            Backing::Task { id, .. } => Some(id),
            Backing::Inline { .. } => None,
        }
    }

    /// Asks the client for input: the task reads `input_required`, with
    /// these requests in its `inputRequests`, until the client has answered
    /// them all with `tasks/update` (a partial answer leaves the rest
    /// outstanding); resolves to the answers, by key.
    ///
    /// Each key may be used once in the task's life (the spec's rule); a
    /// key used before is an error, and nothing is asked. Inline there is
    /// no task to wait on: an error (ask with
    /// [`ModernRequest::input_required`](crate::http::ModernRequest::input_required)
    /// before creating the task instead, as the spec recommends). The
    /// state and single-use settings of `requests` mean nothing here.
    ///
    /// The wait is bounded
    /// ([`Builder::task_input_timeout`](crate::http::Builder::task_input_timeout),
    /// 5 minutes by default): past it the task fails, its status message
    /// and error saying no input arrived in time, its work is dropped, and
    /// this resolves to that error (for work that holds on to something
    /// elsewhere). A task that asks and is never answered does not hold
    /// its place forever.
    pub async fn input(&self, requests: InputRequests) -> Result<Map<String, Value>, RpcError> {
        let (task, input_timeout) = match &self.inner {
            Backing::Task {
                task,
                input_timeout,
                ..
            } => (task, *input_timeout),
            Backing::Inline { .. } => {
                return Err(RpcError::new(
                    jsonrpc::RpcError::INTERNAL_ERROR,
                    "this call runs without the tasks extension: it cannot wait for input",
                ))
            }
        };
        let waiting = task.value().ask(requests.into_requests())?;
        let answers = async move {
            let mut answers = Map::new();
            for (key, answer) in waiting {
                match answer.await {
                    Ok(value) => {
                        answers.insert(key, value);
                    }
                    Err(_) => {
                        return Err(RpcError::new(
                            jsonrpc::RpcError::INTERNAL_ERROR,
                            "the task ended before its input arrived",
                        ))
                    }
                }
            }
            Ok(answers)
        };
        match input_timeout {
            None => answers.await,
            Some(limit) => match tokio::time::timeout(limit, answers).await {
                Ok(answers) => answers,
                Err(_) => Err(self.input_timed_out(limit)),
            },
        }
    }

    /// Fails the task whose input did not arrive within `limit`; the error.
    fn input_timed_out(&self, limit: Duration) -> RpcError {
        let mut error = RpcError::new(
            jsonrpc::RpcError::INTERNAL_ERROR,
            format!(
                "no input arrived within {} s: the task failed",
                limit.as_secs_f64()
            ),
        );
        error.data = Some(json!({ "inputTimeoutMs": limit.as_millis() as u64 }));
        if let Backing::Task {
            task,
            store,
            places,
            ..
        } = &self.inner
        {
            if store.settle(task, Ended::Failed(error.to_value())).is_won() {
                tracing::debug!(task = ?task.id(), ?limit, "no input arrived in time: the task failed");
                task.value().set_status_message(error.message.clone());
                // Nothing is outstanding any more; the work is dropped.
                task.value().ended(places);
                task.value().cancel.cancel();
            }
        }
        error
    }

    /// Sets the task's status message (`statusMessage`); inline, nothing.
    pub fn set_status_message(&self, message: impl Into<String>) {
        if let Backing::Task { task, .. } = &self.inner {
            task.value().set_status_message(message.into());
        }
    }

    /// Resolves when the work should stop: the task was cancelled
    /// (`tasks/cancel`), its deadline passed, or the server is shutting
    /// down; inline, when the request is cancelled. The layer drops the
    /// work's future then anyway; this is for work handed elsewhere.
    pub async fn cancelled(&self) {
        match &self.inner {
            Backing::Task { task, .. } => task.value().cancel.cancelled().await,
            Backing::Inline { cancel } => cancel.cancelled().await,
        }
    }
}

impl fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The task id grants access to the task: its `Debug` form (slot,
        // generation, node), never the secret.
        let task = match &self.inner {
            Backing::Task { task, .. } => Some(task.id()),
            Backing::Inline { .. } => None,
        };
        f.debug_struct("TaskContext")
            .field("task", &task)
            .finish_non_exhaustive()
    }
}

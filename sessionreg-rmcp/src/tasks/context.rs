//! [`TaskContext`]: what a task's operation is handed, as rmcp's
//! `TaskContext` with the same methods.

use super::entry::Found;
use rmcp::model::InputRequest;
use rmcp::task_manager::TaskExit;
use rmcp::ErrorData as McpError;
use serde_json::Value;
use std::fmt;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::entry::Pending;

/// Handle passed to a running task's operation, allowing it to surface
/// server-to-client requests (elicitation, sampling, roots) mid-task and
/// await the client's `tasks/update` response, to set its status message,
/// and to see a `tasks/cancel`. The methods of rmcp 3.11's
/// `rmcp::task_manager::TaskContext`, with the same signatures.
///
/// It holds the task's entry (a registry handle: one atomic reference on
/// the task's own slot, nothing shared with other tasks), so it stays
/// usable, and cheap, however long the operation keeps it. Every method
/// takes the task's own lock only, never one shared by tasks.
#[derive(Clone)]
pub struct TaskContext {
    task: Found,
    /// The manager's: cancelled by `TaskManager::shutdown`.
    closing: CancellationToken,
}

impl fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // No id: ids grant access.
        f.debug_struct("TaskContext")
            .field("ended", &self.task.has_ended())
            .field("cancel_requested", &self.is_cancel_requested())
            .finish_non_exhaustive()
    }
}

/// Takes a key out of the outstanding requests when its `request_input`
/// stops waiting, however it stops: answered (the key is gone already),
/// cancelled, or dropped by the operation (a `select!` that moved on), so
/// that `tasks/get` never lists a request no one waits for.
struct Outstanding<'a> {
    task: &'a Found,
    key: &'a str,
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        let mut state = self.task.value().lock();
        if state.pending.remove(self.key).is_some() {
            state.touch();
        }
    }
}

impl TaskContext {
    pub(crate) fn new(task: Found, closing: CancellationToken) -> TaskContext {
        TaskContext { task, closing }
    }

    /// The id of the task this context belongs to.
    pub fn task_id(&self) -> &str {
        self.task.value().id()
    }

    /// Surface a server-to-client request under `key` and wait for the
    /// client's response delivered via `tasks/update`.
    ///
    /// While at least one request is outstanding the task reports
    /// `input_required` from `tasks/get`, with all outstanding requests in
    /// `inputRequests`. Keys must be unique over the lifetime of the task;
    /// reusing a key returns an error.
    ///
    /// Resolves with [`TaskExit::Cancelled`] when `tasks/cancel` arrives
    /// while it waits, and at once if it already has (rmcp's would wait
    /// for an answer that no client sends to a task it cancelled). If the
    /// returned future is dropped before an answer, the request is no
    /// longer listed.
    pub async fn request_input(
        &self,
        key: impl Into<String>,
        request: InputRequest,
    ) -> Result<Value, TaskExit> {
        let key = key.into();
        let answer = {
            let entry = self.task.value();
            let mut state = entry.lock();
            if self.task.has_ended() || self.task.is_terminated() {
                return Err(TaskExit::Error(McpError::internal_error(
                    "task no longer exists",
                    None,
                )));
            }
            if entry.cancel.is_cancelled() {
                return Err(TaskExit::Cancelled);
            }
            if !state.used_keys.insert(key.clone()) {
                return Err(TaskExit::Error(McpError::internal_error(
                    format!("inputRequests key {key:?} was already used for this task"),
                    None,
                )));
            }
            let (tx, rx) = oneshot::channel();
            state.pending.insert(
                key.clone(),
                Pending {
                    request,
                    answer: tx,
                },
            );
            state.touch();
            rx
        };
        let _outstanding = Outstanding {
            task: &self.task,
            key: &key,
        };
        // The sender is dropped when `tasks/cancel` clears pending inputs
        // (or the task ends).
        answer.await.map_err(|_| TaskExit::Cancelled)
    }

    /// Update the task's human-readable status message.
    pub fn set_status_message(&self, message: impl Into<String>) {
        let mut state = self.task.value().lock();
        state.status_message = Some(message.into());
        state.touch();
    }

    /// Returns `true` if `tasks/cancel` has been received for this task.
    /// Cooperative: operations should check this and stop when set.
    pub fn is_cancel_requested(&self) -> bool {
        self.task.value().cancel.is_cancelled()
    }

    /// Resolves once `tasks/cancel` has been received for this task (or
    /// immediately, if it already has), or once the manager shuts down.
    /// Cooperative: pair with `tokio::select!` around long-running work to
    /// implement a cancellation exit path.
    ///
    /// An operation that stops in response should return
    /// [`TaskExit::Cancelled`] so the task settles as `cancelled`. Returning
    /// [`TaskExit::Error`] settles as `failed`, and finishing the work
    /// anyway settles as `completed` — per SEP-2663 cancellation is
    /// cooperative and a task may reach a non-`cancelled` terminal status.
    pub async fn cancelled(&self) {
        tokio::select! {
            _ = self.task.value().cancel.cancelled() => {}
            _ = self.closing.cancelled() => {}
        }
    }
}

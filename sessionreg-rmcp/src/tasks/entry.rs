//! What the store keeps per task: the fixed fields of its wire `Task`, the
//! cancel signal, and behind a lock of its own (never one shared by tasks)
//! what its work and its client change while it runs.

use rmcp::model::{
    DetailedTask, InputRequest, InputRequests, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::task_manager::current_timestamp;
use rmcp::ErrorData as McpError;
use serde_json::Value;
use sessionreg::{Ended, TaskRef, TaskStore};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The store: each task's entry, and its end (a tool result or a JSON-RPC
/// error object).
pub(crate) type Store = TaskStore<Entry, JsonObject>;

/// A task found by id.
pub(crate) type Found = TaskRef<Entry, JsonObject>;

/// One task's entry.
pub(crate) struct Entry {
    /// The id's text form (set once, right after the store mints the id,
    /// before anyone else can know it).
    pub(crate) id: OnceLock<String>,
    /// Who created it, for the `*_as` methods; `None` from `spawn`.
    pub(crate) owner: Option<String>,
    pub(crate) created_at: String,
    /// What `ttlMs` says: see `TaskManager`'s docs on the TTL.
    pub(crate) ttl_ms: Option<u64>,
    pub(crate) poll_interval_ms: Option<u64>,
    /// Cancelled by `tasks/cancel`.
    pub(crate) cancel: CancellationToken,
    state: Mutex<State>,
}

/// What changes while the task runs.
pub(crate) struct State {
    pub(crate) status_message: Option<String>,
    pub(crate) last_updated_at: String,
    /// Outstanding input requests by key, each with the sender its
    /// `request_input` waits on.
    pub(crate) pending: BTreeMap<String, Pending>,
    /// Every key ever asked for, so that none is reused.
    pub(crate) used_keys: HashSet<String>,
}

pub(crate) struct Pending {
    pub(crate) request: InputRequest,
    pub(crate) answer: oneshot::Sender<Value>,
}

impl State {
    pub(crate) fn touch(&mut self) {
        self.last_updated_at = current_timestamp();
    }
}

impl Entry {
    pub(crate) fn new(
        owner: Option<String>,
        ttl_ms: Option<u64>,
        poll_interval_ms: Option<u64>,
        status_message: Option<String>,
    ) -> Entry {
        let now = current_timestamp();
        Entry {
            id: OnceLock::new(),
            owner,
            created_at: now.clone(),
            ttl_ms,
            poll_interval_ms,
            cancel: CancellationToken::new(),
            state: Mutex::new(State {
                status_message,
                last_updated_at: now,
                pending: BTreeMap::new(),
                used_keys: HashSet::new(),
            }),
        }
    }

    /// The task's lock. Nothing panics while holding it; a poisoned one is
    /// used as is.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn id(&self) -> &str {
        self.id.get().map(String::as_str).unwrap_or_default()
    }

    /// The wire `Task`, with `status`.
    pub(crate) fn task(&self, state: &State, status: TaskStatus) -> Task {
        let mut task = Task::new(
            self.id(),
            status,
            self.created_at.clone(),
            state.last_updated_at.clone(),
        );
        task.ttl_ms = self.ttl_ms;
        task.poll_interval_ms = self.poll_interval_ms;
        task.status_message = state.status_message.clone();
        task
    }
}

/// `tasks/get`'s answer for `found`. Read under the task's lock, which every
/// end of a task is settled under, so the status, the payload and
/// `lastUpdatedAt` agree.
pub(crate) fn detailed(found: &Found) -> DetailedTask {
    let entry = found.value();
    let state = entry.lock();
    let payload = match found.outcome() {
        Some(ended) => terminal_payload(ended),
        None if !state.pending.is_empty() => TaskPayload::InputRequired {
            input_requests: state
                .pending
                .iter()
                .map(|(key, pending)| (key.clone(), pending.request.clone()))
                .collect::<InputRequests>(),
        },
        None => TaskPayload::Working,
    };
    DetailedTask::new(entry.task(&state, payload.status()), payload)
}

fn terminal_payload(ended: &Ended<JsonObject>) -> TaskPayload {
    match ended {
        Ended::Completed(result) => TaskPayload::Completed {
            result: result.clone(),
        },
        Ended::Failed(error) => TaskPayload::Failed {
            error: error.clone(),
        },
        Ended::Cancelled => TaskPayload::Cancelled,
        Ended::Expired => TaskPayload::Failed {
            error: error_object(&expired_error()),
        },
        Ended::Abandoned => TaskPayload::Failed {
            error: error_object(&abandoned_error()),
        },
    }
}

/// The error of a task whose TTL passed while it ran (with
/// `abort_at_ttl`): rmcp's words.
pub(crate) fn expired_error() -> McpError {
    McpError::internal_error("task expired: TTL elapsed before completion", None)
}

/// The error of a task whose work stopped without a result: it panicked,
/// or the manager shut down.
pub(crate) fn abandoned_error() -> McpError {
    McpError::internal_error(
        "task abandoned: its operation stopped without a result (it panicked, or the server shut down)",
        None,
    )
}

/// A value as a JSON object (as rmcp inlines results and errors).
pub(crate) fn object_of<T: serde::Serialize>(value: &T) -> JsonObject {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

pub(crate) fn error_object(error: &McpError) -> JsonObject {
    object_of(error)
}

//! The extension's wire surface: starting a task for a `tools/call`
//! ([`start`]) and the three task methods (`tasks/get`, `tasks/update`,
//! `tasks/cancel`: [`serve_method`]); the store they share ([`Tasks`]).

use super::entry::{self, TaskEntry};
use super::work::{TaskContext, TaskWork};
use super::{Store, DEFAULT_POLL_INTERVAL, TASKS_EXTENSION};
use crate::http::access::auth::Principal;
use crate::http::config::Config;
use crate::http::jsonrpc::{Request, RpcError};
use crate::http::modern::request::{input_responses, missing_capability, Modern};
use crate::http::modern::Envelope;
use crate::http::reject::Reject;
use crate::{Ended, Miss, Running, SweepStep, TaskRef, TaskStats, TaskStore};
use futures_util::future::OptionFuture;
use futures_util::FutureExt;
use http::StatusCode;
use serde_json::{json, Value};
use std::panic::AssertUnwindSafe;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The task methods the layer answers (`tasks/result` and `tasks/list`
/// were removed: `modern/mod.rs` answers them 404 with the other removed
/// methods).
pub(crate) const METHODS: [&str; 3] = ["tasks/get", "tasks/update", "tasks/cancel"];

/// The tasks of one endpoint: the store, and the token every task's work
/// is cancelled through at shutdown.
pub(crate) struct Tasks {
    store: Store,
    root: CancellationToken,
    retention: Duration,
    ttl_ends_work: bool,
}

impl Tasks {
    pub(crate) fn new(config: &Config, node: u8) -> Tasks {
        let store = TaskStore::builder()
            .capacity(config.task_capacity)
            .retention(config.task_retention)
            .node_id(node)
            .build()
            .expect("a capacity the builder checked");
        Tasks {
            store,
            root: CancellationToken::new(),
            retention: config.task_retention,
            ttl_ends_work: config.task_ttl_ends_work,
        }
    }

    /// Frees the tasks ended and kept for their retention: one step of a
    /// pass, of at most `budget` slots.
    pub(crate) fn reap_step(&self, budget: usize) -> SweepStep {
        self.store.reap_step(budget)
    }

    /// Stops every task's work (each ends `abandoned`, unless it ended
    /// first) and frees every task.
    pub(crate) fn shutdown(&self) -> usize {
        self.root.cancel();
        self.store.shutdown()
    }

    pub(crate) fn stats(&self) -> TaskStats {
        self.store.stats()
    }

    /// The period the reaper should sweep the store at, at most.
    pub(crate) fn reap_period(&self) -> Duration {
        (self.retention / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

/// The `-32021` error for a client that did not declare the extension.
pub(crate) fn extension_required() -> RpcError {
    missing_capability(json!({ "extensions": { TASKS_EXTENSION: {} } }))
}

/// Creates a task for `work`, owned by `owner`, and starts the work;
/// returns the `CreateTaskResult` (the task is readable by `tasks/get`
/// before it is). At capacity, 503.
pub(crate) fn start(
    tasks: &Tasks,
    envelope: &Envelope,
    owner: Option<Principal>,
    work: TaskWork,
) -> Result<Value, Reject> {
    let poll = work.poll_interval.unwrap_or(DEFAULT_POLL_INTERVAL);
    let entry = TaskEntry::new(
        owner,
        poll.as_millis() as u64,
        tasks.retention.as_millis() as u64,
        work.status_message.clone(),
        tasks.root.child_token(),
    );
    let running = tasks.store.create(entry).map_err(|_| Reject::Overloaded)?;
    let id = running.id();
    let text = id.to_string();
    let task = tasks.store.get(&id).expect("held by its running guard");
    let mut created = entry::detailed(&text, &running);
    created.insert("resultType".into(), "task".into());
    let deadline = tasks
        .ttl_ends_work
        .then(|| tokio::time::Instant::now().checked_add(tasks.retention))
        .flatten();
    let ctx = TaskContext::task(task.clone(), text);
    tokio::spawn(run(tasks.store.clone(), running, task, work, ctx, deadline));
    Ok(envelope.task_result(created))
}

/// Runs a task's work to its end: its answer completes or fails the task;
/// a cancel or the shutdown drops it; with a deadline, its passing expires
/// the task and drops it. Work that panics ends `abandoned` (its
/// [`Running`] guard dropped unsettled).
async fn run(
    store: Store,
    running: Running<TaskEntry, Value>,
    task: TaskRef<TaskEntry, Value>,
    work: TaskWork,
    ctx: TaskContext,
    deadline: Option<tokio::time::Instant>,
) {
    let cancel = task.value().cancel.clone();
    let future = AssertUnwindSafe((work.work)(ctx)).catch_unwind();
    let timeout = OptionFuture::from(deadline.map(tokio::time::sleep_until));
    let ended = tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        Some(()) = timeout => {
            let _ = store.settle(&task, Ended::Expired);
            cancel.cancel();
            None
        }
        outcome = future => match outcome {
            Ok(Ok(result)) => Some(Ended::Completed(result)),
            Ok(Err(error)) => Some(Ended::Failed(error.to_value())),
            Err(_) => {
                tracing::warn!("a task's work panicked; the task ends abandoned");
                None
            }
        },
    };
    match ended {
        Some(ended) => {
            let _ = running.finish(ended);
        }
        None => drop(running),
    }
    // Whatever ended it: nothing is outstanding any more.
    task.value().ended();
}

/// Answers `tasks/get`, `tasks/update` or `tasks/cancel`, in this order of
/// checks: the client declared the extension on this request (`-32021`,
/// before anything is looked up), `taskId` is a string, the task is the
/// requester's (another principal's is as unknown as a made-up id:
/// `-32602`, counted in the store's misses).
pub(crate) fn serve_method(
    tasks: &Tasks,
    request: &Request,
    params: &Value,
    modern: &Modern,
    owner: Option<&Principal>,
    envelope: &Envelope,
) -> Result<Value, (StatusCode, RpcError)> {
    if !modern.declares_extension(TASKS_EXTENSION) {
        return Err((StatusCode::BAD_REQUEST, extension_required()));
    }
    let invalid = |message: &str| (StatusCode::OK, RpcError::invalid_params(message));
    let Some(task_id) = params["taskId"].as_str() else {
        return Err(invalid("taskId must be a string"));
    };
    let found = tasks
        .store
        .parse_id(task_id.as_bytes())
        .map_err(|_| Miss::Malformed)
        .and_then(|id| {
            tasks
                .store
                .get_if(&id, |entry| entry.owner.as_ref() == owner)
        });
    let task = match found {
        Ok(task) => task,
        Err(Miss::Stale | Miss::Expired) => {
            return Err(invalid("Failed to retrieve task: Task has expired"))
        }
        Err(_) => return Err(invalid("Failed to retrieve task: Task not found")),
    };
    match request.method.as_str() {
        "tasks/get" => Ok(envelope.result(Value::Object(entry::detailed(task_id, &task)))),
        "tasks/update" => {
            let responses = params
                .get("inputResponses")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let responses = input_responses(responses).map_err(|e| (StatusCode::OK, e))?;
            if !task.has_ended() {
                task.value().answer(responses);
            }
            Ok(envelope.result(json!({})))
        }
        "tasks/cancel" => {
            // Cancelling an ended task is acknowledged the same (the
            // spec: eventually consistent; the suite: idempotent).
            if tasks.store.settle(&task, Ended::Cancelled).is_won() {
                task.value().cancel.cancel();
                task.value().ended();
            }
            Ok(envelope.result(json!({})))
        }
        other => Err((StatusCode::NOT_FOUND, RpcError::method_not_found(other))),
    }
}

/// Runs `work` inline, as the call's own answer (the client did not ask
/// for tasks): its result, or its error.
pub(crate) async fn inline(work: TaskWork, cancel: CancellationToken) -> Result<Value, RpcError> {
    (work.work)(TaskContext::inline(cancel)).await
}

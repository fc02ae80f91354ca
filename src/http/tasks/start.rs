//! Starting a task for a `tools/call` ([`start`]), and running its work to
//! its end.

use super::entry::{self, TaskEntry};
use super::work::{TaskContext, TaskWork};
use super::{Tasks, DEFAULT_POLL_INTERVAL};
use crate::http::access::auth::Principal;
use crate::http::reject::Reject;
use crate::{Ended, Running, TaskRef};
use futures_util::future::OptionFuture;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use std::panic::AssertUnwindSafe;

/// Creates a task for `work`, owned by `owner`, and starts the work;
/// returns the `CreateTaskResult`'s task (the task is readable by
/// `tasks/get` before it is answered). At capacity, 503.
pub(crate) fn start(
    tasks: &Tasks,
    owner: Option<Principal>,
    work: TaskWork,
) -> Result<Map<String, Value>, Reject> {
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
    let created = entry::detailed(&text, &running);
    let deadline = tasks
        .ttl_ends_work
        .then(|| tokio::time::Instant::now().checked_add(tasks.retention))
        .flatten();
    let ctx = TaskContext::task(task.clone(), text);
    tokio::spawn(run(tasks.store.clone(), running, task, work, ctx, deadline));
    Ok(created)
}

/// Runs a task's work to its end: its answer completes or fails the task;
/// a cancel or the shutdown drops it; with a deadline, its passing expires
/// the task and drops it. Work that panics ends `abandoned` (its
/// [`Running`] guard dropped unsettled).
async fn run(
    store: super::Store,
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

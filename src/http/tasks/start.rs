//! Starting a task for a `tools/call` ([`start`]), and running its work to
//! its end.

use super::entry::{self, TaskEntry};
use super::places::Places;
use super::work::{TaskContext, TaskWork};
use super::work_span;
use super::{Tasks, DEFAULT_POLL_INTERVAL};
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use crate::{Ended, Running, TaskRef};
use futures_util::future::OptionFuture;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tracing::Instrument;

/// Creates a task for `work`, owned by `owner`, and starts the work (a
/// call of `tool`: its span says so, `work_span.rs`); returns the
/// `CreateTaskResult`'s task (the task is readable by `tasks/get` before
/// it is answered). Past the owner's share 429, at capacity 503 (each
/// naming its bound, with a `Retry-After` of when a place frees); while
/// the server shuts down, 503 "shutting down".
pub(crate) fn start(
    tasks: &Tasks,
    owner: Option<Principal>,
    work: TaskWork,
    tool: Option<&str>,
) -> Result<Map<String, Value>, Reject> {
    if tasks.root.is_cancelled() {
        return Err(Reject::ShuttingDown);
    }
    let share = tasks.places.take(owner.as_ref())?;
    let poll = work.poll_interval.unwrap_or(DEFAULT_POLL_INTERVAL);
    let entry = TaskEntry::new(
        owner,
        share,
        poll.as_millis() as u64,
        tasks.retention.as_millis() as u64,
        work.status_message.clone(),
        tasks.root.child_token(),
    );
    // Full: the entry comes back, and with it its share.
    let running = tasks.store.create(entry).map_err(|_| tasks.places.full())?;
    // The entry from the guard itself, not by a lookup: a shutdown's sweep
    // may have ended it since `create`.
    let task = running.task();
    if tasks.root.is_cancelled() {
        // Shut down meanwhile: the work never starts, the task ends
        // abandoned (its guard dropped unsettled), and the call is told.
        drop(running);
        task.value().ended(&tasks.places);
        tracing::debug!("a task created while the server shuts down: 503");
        return Err(Reject::ShuttingDown);
    }
    let text = running.id().to_string();
    let created = entry::detailed(&text, &running);
    let deadline = tasks
        .ttl_ends_work
        .then(|| tokio::time::Instant::now().checked_add(tasks.retention))
        .flatten();
    let ctx = TaskContext::task(
        task.clone(),
        text,
        tasks.store.clone(),
        Arc::clone(&tasks.places),
        tasks.input_timeout,
    );
    // Its own span, linked to the request's (`work_span.rs`).
    let span = work_span::open(tool);
    work_span::record_task(&span, running.id());
    tokio::spawn(
        run(
            tasks.store.clone(),
            Arc::clone(&tasks.places),
            running,
            task,
            work,
            ctx,
            deadline,
        )
        .instrument(span),
    );
    Ok(created)
}

/// Runs a task's work to its end (in its span, which hears how it ended):
/// its answer completes or fails the task;
/// a cancel or the shutdown drops it; with a deadline, its passing expires
/// the task and drops it. Work that panics ends `abandoned` (its
/// [`Running`] guard dropped unsettled).
async fn run(
    store: super::Store,
    places: Arc<Places>,
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
    work_span::record_end(&tracing::Span::current(), task.outcome());
    // Whatever ended it: nothing is outstanding any more, and its place
    // frees after its retention.
    task.value().ended(&places);
}

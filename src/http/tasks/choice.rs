//! Whether a call's [`TaskWork`] becomes a task, the extension's rule: only
//! for a 2026-07-28 `tools/call` whose client declared the extension on
//! that very request, to a manager that serves it. Otherwise the work is
//! the call's own answer, run inline (under the request's cancellation and
//! handler timeout), unless it may only run as a task: then a 2026-07-28
//! client hears `-32021` naming the extension.

use super::work::TaskWork;
use super::{extension_required, inline};
use crate::http::wire::jsonrpc::RpcError;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What may become of a request's [`TaskWork`] (a handler's
/// [`Reply::Task`](crate::http::Reply::Task)), decided by its era before
/// the handler runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskChoice {
    /// The request may become a task: the work is handed back to the era,
    /// which creates it.
    Task,
    /// Inline, as the call's answer; `refuse_required`: work that may only
    /// run as a task is refused (`-32021`) instead (a 2026-07-28 client
    /// that did not declare the extension).
    Inline { refuse_required: bool },
}

impl TaskChoice {
    /// What `work` comes to: handed back as it is where it may become a
    /// task, else its run as the call's answer (or the refusal).
    pub(crate) fn chosen(self, work: TaskWork, cancel: CancellationToken) -> Chosen {
        match self {
            TaskChoice::Task => Chosen::Task(work),
            TaskChoice::Inline {
                refuse_required: true,
            } if work.required => Chosen::Refused(extension_required()),
            TaskChoice::Inline { .. } => Chosen::Inline(inline(work, cancel)),
        }
    }
}

/// What [`TaskChoice::chosen`] came to.
#[must_use]
pub(crate) enum Chosen {
    /// A task to create.
    Task(TaskWork),
    /// The call's answer: this refusal.
    Refused(RpcError),
    /// The work, started: its result (or error) is the call's answer.
    Inline(BoxFuture<'static, Result<Value, RpcError>>),
}

//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) at
//! 2026-07-28, on the core's [`TaskStore`](crate::TaskStore): a
//! `tools/call` whose handler answers [`Reply::Task`](crate::http::Reply::Task)
//! becomes a task the client polls.
//!
//! Switched on with [`Builder::tasks`](crate::http::Builder::tasks); then
//! the layer:
//!
//! * advertises the extension in `server/discover`
//!   (`capabilities.extensions`), and never the 2025-11-25 `tasks`
//!   capability;
//! * creates a task only for a request whose client declared the extension
//!   *on that request* (`_meta` client capabilities), the task readable by
//!   `tasks/get` before the `CreateTaskResult` is sent; for any other
//!   client the work runs inline and answers the call, or, when the work is
//!   [`required`](TaskWork::required) to be a task, the client gets
//!   `-32021` naming the extension;
//! * answers `tasks/get` (the task's `DetailedTask`: `working`,
//!   `input_required` with every outstanding request, `completed` with the
//!   result, `failed` with the error, `cancelled`), `tasks/update` (input
//!   responses to outstanding keys; any other key ignored, as the spec
//!   says) and `tasks/cancel` (the task ends `cancelled` unless it had
//!   ended, and its work is dropped; acknowledged either way), each
//!   checked in this order: `Mcp-Name` equals `params.taskId` (with the
//!   other headers, `-32020`), the extension is declared (`-32021`, before
//!   the id is looked at), the task is the requester's principal's
//!   (`-32602` "Task not found", the same as for a guessed id);
//! * keeps each task's id a registry id: the node prefix a balancer routes
//!   `Mcp-Name` by, and a 128-bit secret;
//! * never ends running work at its TTL unless built with
//!   [`Builder::task_ttl_ends_work`](crate::http::Builder::task_ttl_ends_work)
//!   (rmcp 3.11 aborts it at `created + ttl`); `ttlMs` is the retention:
//!   the task stays readable at least that long after its work ends, then
//!   the reaper frees it;
//! * bounds the store in all ([`Builder::task_capacity`](crate::http::Builder::task_capacity):
//!   503 naming the bound) and per principal, running and retained tasks
//!   together ([`Builder::task_share`](crate::http::Builder::task_share):
//!   429 naming the bound, and no other principal notices), each with a
//!   `Retry-After` of when a place frees (`places.rs`);
//! * fails a task whose work waits for input longer than
//!   [`Builder::task_input_timeout`](crate::http::Builder::task_input_timeout)
//!   (5 minutes by default), with a status message that says so;
//! * stops every task's work at shutdown (each ends `failed`: its work
//!   stopped without an answer); a task created while the server shuts
//!   down is answered 503 "shutting down", its work never started.
//!
//! Status notifications (`notifications/tasks` on `subscriptions/listen`)
//! are optional in the extension and not sent: clients poll.

mod choice;
mod entry;
mod extension;
mod methods;
mod places;
mod start;
mod store;
mod time;
mod work;
mod work_span;

pub use work::{TaskContext, TaskWork};

pub(crate) use choice::{Chosen, TaskChoice};
pub(crate) use extension::{
    advertise, extension_capability, extension_required, inline, Store, DEFAULT_POLL_INTERVAL,
    TASKS_EXTENSION,
};
pub(crate) use methods::{serve_method, METHODS};
pub(crate) use start::start;
pub(crate) use store::Tasks;
pub(crate) use work_span::TOOL_BYTES;

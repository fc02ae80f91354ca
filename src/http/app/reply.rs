//! What a handler answers a request with ([`Reply`]), and how it fails
//! ([`HandlerError`]).

use crate::http::input::InputRequired;
use crate::http::tasks::TaskWork;
use crate::http::wire::jsonrpc::RpcError;
use futures_util::stream::BoxStream;
use serde_json::Value;
use std::fmt;

/// What a handler answers a request with.
pub enum Reply {
    /// `{"result": ...}` as `application/json`.
    Result(Value),
    /// `{"error": ...}` as `application/json` (HTTP 200: a JSON-RPC error,
    /// not a transport one).
    Error(RpcError),
    /// An SSE stream of JSON-RPC messages (notifications, server requests),
    /// the last of which should be the response to the request. Each gets
    /// an event id unique in the session. It ends early if the session ends.
    Stream(BoxStream<'static, Value>),
    /// Nothing to say: the answer for notifications and responses.
    Accepted,
    /// More input is needed (2026-07-28 multi-round-trip requests): made by
    /// [`ModernRequest::input_required`](super::ModernRequest::input_required), so
    /// only for a modern request that may ask for input.
    InputRequired(InputRequired),
    /// Work to run as a task (the tasks extension, for a `tools/call`): the
    /// layer creates the task and answers `CreateTaskResult` when the
    /// client asked for tasks, and otherwise runs the work inline as the
    /// answer (see [`TaskWork`]).
    Task(TaskWork),
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Result(v) => f.debug_tuple("Result").field(v).finish(),
            Reply::Error(e) => f.debug_tuple("Error").field(e).finish(),
            Reply::Stream(_) => f.write_str("Stream(..)"),
            Reply::Accepted => f.write_str("Accepted"),
            Reply::InputRequired(asked) => f.debug_tuple("InputRequired").field(asked).finish(),
            Reply::Task(work) => f.debug_tuple("Task").field(work).finish(),
        }
    }
}

/// A handler failure: the session ends with [`Reason::Failed`](crate::Reason::Failed).
#[derive(Debug)]
pub struct HandlerError(Box<dyn std::error::Error + Send + Sync>);

impl HandlerError {
    /// A failure with a message.
    pub fn msg(message: impl Into<String>) -> HandlerError {
        HandlerError(message.into().into())
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(error: E) -> HandlerError {
        HandlerError(Box::new(error))
    }
}

//! What a handler answers a request with ([`Reply`]), and how it fails
//! ([`HandlerError`]).

use super::ToolText;
use crate::http::input::InputRequired;
use crate::http::tasks::TaskWork;
use crate::http::wire::jsonrpc::RpcError;
use futures_util::stream::BoxStream;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// What a handler answers a request with.
pub enum Reply {
    /// `{"result": ...}` as `application/json`.
    Result(Value),
    /// `{"result": ...}` as `application/json`, the result (a JSON object)
    /// already serialized: written as it is, with no [`Value`] tree built
    /// for it ([`Reply::serialized`] makes one from any `Serialize`). At
    /// 2026-07-28 the layer's members (`resultType`, the caching hints,
    /// the server's name) are written beside the object's own, as for a
    /// [`Reply::Result`].
    ///
    /// ```
    /// use sessionreg::http::Reply;
    ///
    /// #[derive(serde::Serialize)]
    /// struct Text<'a> {
    ///     #[serde(rename = "type")]
    ///     kind: &'static str,
    ///     text: &'a str,
    /// }
    /// #[derive(serde::Serialize)]
    /// struct Called<'a> {
    ///     content: [Text<'a>; 1],
    /// }
    ///
    /// let reply = Reply::serialized(&Called { content: [Text { kind: "text", text: "hi" }] });
    /// let Reply::Serialized(raw) = reply else { panic!() };
    /// assert_eq!(raw.get(), r#"{"content":[{"type":"text","text":"hi"}]}"#);
    /// ```
    Serialized(Box<RawValue>),
    /// A `tools/call` result of one text block, written straight into the
    /// answer ([`Reply::tool_text`], [`Reply::tool_error_text`]).
    ToolText(ToolText),
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
    /// A `CreateTaskResult` (the tasks extension), serialized, for a task
    /// the application keeps in a store of its own (which answers the
    /// task's `tasks/get`, `tasks/update` and `tasks/cancel`: they reach
    /// the application when the layer's task store is not configured). At
    /// 2026-07-28 the layer's envelope writes `resultType: "task"` on it,
    /// for a `tools/call` whose client declared the tasks extension on the
    /// request (any other result's `resultType` is `"complete"`, whatever
    /// the application wrote); for any other 2026-07-28 request it is
    /// refused with `-32603` (a client that did not ask for a task cannot
    /// take one), as it is on a server whose layer serves tasks itself
    /// ([`Builder::tasks`](crate::http::Builder::tasks): its `tasks/*`
    /// would never find the application's task). In a legacy session it is
    /// written as it is. Work that should run on the layer's own store
    /// answers [`Reply::Task`].
    TaskCreated(Box<RawValue>),
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
            Reply::Serialized(raw) => f.debug_tuple("Serialized").field(raw).finish(),
            Reply::ToolText(text) => f.debug_tuple("ToolText").field(text).finish(),
            Reply::Error(e) => f.debug_tuple("Error").field(e).finish(),
            Reply::Stream(_) => f.write_str("Stream(..)"),
            Reply::Accepted => f.write_str("Accepted"),
            Reply::InputRequired(asked) => f.debug_tuple("InputRequired").field(asked).finish(),
            Reply::Task(work) => f.debug_tuple("Task").field(work).finish(),
            Reply::TaskCreated(raw) => f.debug_tuple("TaskCreated").field(raw).finish(),
        }
    }
}

impl Reply {
    /// `result` serialized once into a [`Reply::Serialized`] (its JSON text
    /// is the one allocation); `-32603` if it cannot be serialized (a map
    /// with keys that are not strings, a `Serialize` that fails).
    pub fn serialized<T: serde::Serialize + ?Sized>(result: &T) -> Reply {
        match serde_json::value::to_raw_value(result) {
            Ok(raw) => Reply::Serialized(raw),
            Err(error) => Reply::Error(RpcError::new(
                RpcError::INTERNAL_ERROR,
                format!("the result could not be serialized: {error}"),
            )),
        }
    }

    /// A `tools/call` result of one text block saying `text`
    /// ([`ToolText`]): the commonest result, with no serialization of its
    /// own.
    ///
    /// ```
    /// use sessionreg::http::Reply;
    ///
    /// let Reply::ToolText(text) = Reply::tool_text("hi") else { panic!() };
    /// assert_eq!(text.text(), "hi");
    /// ```
    pub fn tool_text(text: impl Into<String>) -> Reply {
        Reply::ToolText(ToolText::new(text))
    }

    /// A `tools/call` result of one text block whose tool failed
    /// (`isError: true`, [`ToolText::error`]).
    pub fn tool_error_text(text: impl Into<String>) -> Reply {
        Reply::ToolText(ToolText::error(text))
    }

    /// A [`Reply::Serialized`] as the [`Reply::Result`] tree it holds, for
    /// the rare steps that edit a result (a session's `initialize` whose
    /// result the layer cannot write around, a `tools/list` filtered by
    /// scope); every other reply as it is.
    pub(crate) fn into_tree(self) -> Reply {
        match self {
            Reply::Serialized(raw) => match serde_json::from_str(raw.get()) {
                Ok(result) => Reply::Result(result),
                // Past serde_json's nesting limit (128 levels).
                Err(error) => Reply::Error(RpcError::new(
                    RpcError::INTERNAL_ERROR,
                    format!("the result could not be read: {error}"),
                )),
            },
            Reply::ToolText(text) => Reply::Result(text.to_value()),
            other => other,
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

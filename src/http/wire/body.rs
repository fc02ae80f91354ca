//! The body type of every response the layer writes, and the helpers that
//! build a JSON, empty or status-only response (refusals are built by
//! `reject.rs`, SSE streams by `sse/`); and what any other body must be for
//! the layer to take it ([`SendBody`]).

use crate::http::wire::answered::{self, Failure};
use crate::http::wire::jsonrpc::{self, RpcError};
use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Body as HttpBody;
use serde_json::Value;
use std::convert::Infallible;

/// The body of every response the session manager writes: a whole JSON
/// body, nothing, or an SSE stream.
pub type Body = BoxBody<Bytes, Infallible>;

/// The error a body hands on: any error, boxed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A body the layer can take and hyper can stream across tasks: what the
/// requests a [`SessionManager`](crate::http::SessionManager) handles, and
/// the responses [`serve_with`](crate::http::serve_with) sends, must be.
/// Nothing to implement: every `hyper::body::Body + Send + 'static` whose
/// data is `Send` and whose error converts into a [`BoxError`] is one
/// (hyper's `Incoming`, axum's `Body`, `Full`, `BoxBody`, ...).
pub trait SendBody: HttpBody<Data: Send, Error: Into<BoxError>> + Send + 'static {}

impl<B> SendBody for B
where
    B: HttpBody + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
}

/// A body with nothing in it.
pub(crate) fn empty() -> Body {
    Empty::new().boxed()
}

/// A body holding `bytes`.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// A response with `status` and an empty body.
pub(crate) fn status(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(empty());
    *response.status_mut() = status;
    response
}

/// A `application/json` response holding one JSON-RPC message.
pub(crate) fn json(status: StatusCode, message: &Value) -> Response<Body> {
    json_bytes(status, jsonrpc::to_bytes(message))
}

/// A 200 `application/json` answer: the result message for request `id`.
pub(crate) fn result<R: serde::Serialize>(id: &Value, result: &R) -> Response<Body> {
    json_bytes(StatusCode::OK, jsonrpc::result_bytes(id, result))
}

fn json_bytes(status: StatusCode, bytes: Bytes) -> Response<Body> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The 200 answer with `result` for request `id`, marked a tool's
/// failure when the result says so (`tool_error`: its member `isError` is
/// `true`, which only a `tools/call` result has).
pub(crate) fn answer<R: serde::Serialize>(
    id: &Value,
    result: &R,
    tool_error: bool,
) -> Response<Body> {
    answer_bytes(jsonrpc::result_bytes(id, result), tool_error)
}

/// [`answer`] of a result message already written.
pub(crate) fn answer_bytes(message: Bytes, tool_error: bool) -> Response<Body> {
    let mut response = json_bytes(StatusCode::OK, message);
    if tool_error {
        answered::mark(&mut response, Failure::ToolError);
    }
    response
}

/// A JSON-RPC error response for the request `id` (or `null`).
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<&Value>,
    error: &RpcError,
) -> Response<Body> {
    let mut response = json(status, &jsonrpc::error_message(id, error));
    answered::mark(&mut response, Failure::of_error(error));
    response
}

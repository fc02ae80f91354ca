//! Response bodies and the small helpers that build every response this
//! layer writes.

use super::jsonrpc::{self, RpcError};
use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use serde_json::Value;
use std::convert::Infallible;

/// The body of every response the session manager writes: a whole JSON
/// body, nothing, or an SSE stream.
pub type Body = BoxBody<Bytes, Infallible>;

/// A body with nothing in it.
pub fn empty() -> Body {
    Empty::new().boxed()
}

/// A body holding `bytes`.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// A response with `status` and an empty body.
pub fn status(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(empty());
    *response.status_mut() = status;
    response
}

/// A `application/json` response holding one JSON-RPC message.
pub fn json(status: StatusCode, message: &Value) -> Response<Body> {
    let mut response = Response::new(full(jsonrpc::to_bytes(message)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A JSON-RPC error response for the request `id` (or `null`).
pub fn rpc_error(status: StatusCode, id: Option<&Value>, error: &RpcError) -> Response<Body> {
    json(status, &jsonrpc::error_message(id, error))
}

/// A transport-level refusal: `status` with a JSON-RPC error body of `code`.
pub fn refuse(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    rpc_error(status, None, &RpcError::new(code, message))
}

//! The small error responses the request handlers share: 404, 400 for a
//! missing id, 413, 503, 500 and 405.

use super::app::App;
use super::body::{self, Body};
use super::jsonrpc::{self, RpcError};
use super::manager::Inner;
use http::header::{HeaderValue, ALLOW, RETRY_AFTER};
use http::{Response, StatusCode};

pub(super) fn not_found() -> Response<Body> {
    body::refuse(
        StatusCode::NOT_FOUND,
        jsonrpc::SESSION_NOT_FOUND,
        "session not found",
    )
}

pub(super) fn missing_id() -> Response<Body> {
    body::refuse(
        StatusCode::BAD_REQUEST,
        jsonrpc::SERVER_ERROR,
        "missing MCP-Session-Id",
    )
}

pub(super) fn too_large() -> Response<Body> {
    body::refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        jsonrpc::SERVER_ERROR,
        "request body too large",
    )
}

/// 503 with `Retry-After`, for an `initialize` that found no room.
pub(super) fn unavailable<A: App>(
    inner: &Inner<A>,
    id: &serde_json::Value,
    why: &str,
) -> Response<Body> {
    let mut response = body::rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        Some(id),
        &RpcError::new(jsonrpc::SERVER_ERROR, why),
    );
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(inner.config.retry_after));
    response
}

pub(super) fn shutting_down() -> Response<Body> {
    body::refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        jsonrpc::SERVER_ERROR,
        "server is shutting down",
    )
}

pub(super) fn internal_error(id: Option<&serde_json::Value>) -> Response<Body> {
    body::rpc_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        id,
        &RpcError::new(
            jsonrpc::INTERNAL_ERROR,
            "the handler failed; the session has ended",
        ),
    )
}

pub(super) fn not_allowed(allow: &'static str) -> Response<Body> {
    let mut response = body::refuse(
        StatusCode::METHOD_NOT_ALLOWED,
        jsonrpc::SERVER_ERROR,
        "method not allowed",
    );
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

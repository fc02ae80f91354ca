//! The small error responses the request handlers share: 404, 400 for a
//! missing or duplicated id, 408, 413, 429, 503, 500 and 405.

use super::app::App;
use super::body::{self, Body};
use super::jsonrpc::{self, RpcError};
use super::manager::Inner;
use super::rules;
use http::header::{HeaderValue, ALLOW, CONNECTION, RETRY_AFTER};
use http::{Response, StatusCode};

pub(super) fn not_found() -> Response<Body> {
    body::refuse(
        StatusCode::NOT_FOUND,
        jsonrpc::SESSION_NOT_FOUND,
        "session not found",
    )
}

/// 404 for a request whose session ended while it ran (deleted, idle,
/// failed): as for any request with that id from now on.
pub(super) fn session_ended(id: Option<&serde_json::Value>) -> Response<Body> {
    body::rpc_error(
        StatusCode::NOT_FOUND,
        id,
        &RpcError::new(
            jsonrpc::SESSION_NOT_FOUND,
            "the session ended while the request ran",
        ),
    )
}

pub(super) fn missing_id() -> Response<Body> {
    body::refuse(
        StatusCode::BAD_REQUEST,
        jsonrpc::SERVER_ERROR,
        "missing MCP-Session-Id",
    )
}

/// 400 for a header given more than once that may be given once only
/// (`name` as [`rules::SINGLE_VALUED`] shows it).
pub(super) fn duplicate_header(name: &str) -> Response<Body> {
    body::refuse(
        StatusCode::BAD_REQUEST,
        jsonrpc::INVALID_REQUEST,
        &format!("more than one {name}"),
    )
}

/// 408: the body did not arrive within the body read timeout. The
/// connection is closed after it (the body was not read to its end).
pub(super) fn body_timeout() -> Response<Body> {
    let mut response = body::refuse(
        StatusCode::REQUEST_TIMEOUT,
        jsonrpc::SERVER_ERROR,
        "the request body took too long",
    );
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// `status` with `Retry-After` and a JSON-RPC error for request `id`.
fn retry_later<A: App>(
    inner: &Inner<A>,
    status: StatusCode,
    id: Option<&serde_json::Value>,
    why: &str,
) -> Response<Body> {
    let mut response = body::rpc_error(status, id, &RpcError::new(jsonrpc::SERVER_ERROR, why));
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(inner.config.retry_after));
    response
}

/// 429 with `Retry-After`: the session has as many requests in flight as
/// it may. The session itself is untouched.
pub(super) fn too_many_requests<A: App>(
    inner: &Inner<A>,
    id: Option<&serde_json::Value>,
) -> Response<Body> {
    retry_later(
        inner,
        StatusCode::TOO_MANY_REQUESTS,
        id,
        "too many requests in flight in this session; retry later",
    )
}

/// 503 with `Retry-After`: the manager runs as many handlers as it may.
pub(super) fn overloaded<A: App>(
    inner: &Inner<A>,
    id: Option<&serde_json::Value>,
) -> Response<Body> {
    retry_later(
        inner,
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        "the server is busy; retry later",
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
    retry_later(inner, StatusCode::SERVICE_UNAVAILABLE, Some(id), why)
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

/// 400 for a protocol version the endpoint does not serve, with the
/// `UnsupportedProtocolVersionError` of the 2026-07-28 schema (code
/// `-32022`, `data.supported` and `data.requested`), which older clients
/// read as the plain 400 their revisions ask for. `stateless` says whether
/// 2026-07-28 is among the supported versions.
pub(super) fn unsupported_version(
    requested: &str,
    stateless: bool,
    id: Option<&serde_json::Value>,
) -> Response<Body> {
    // Echoed back, so bounded: a header can be kilobytes long.
    let requested = match requested.char_indices().nth(64) {
        Some((end, _)) => &requested[..end],
        None => requested,
    };
    let mut supported: Vec<&str> = Vec::with_capacity(rules::SUPPORTED_VERSIONS.len() + 1);
    if stateless {
        supported.push(rules::STATELESS_VERSION);
    }
    supported.extend(rules::SUPPORTED_VERSIONS.iter().rev());
    let mut error = RpcError::new(
        jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version: {requested} (supported: {})",
            supported.join(", ")
        ),
    );
    error.data = Some(serde_json::json!({ "supported": supported, "requested": requested }));
    body::rpc_error(StatusCode::BAD_REQUEST, id, &error)
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

//! Every refusal the layer answers, declared once: its HTTP status, its
//! JSON-RPC error code and text, and the headers it carries
//! (`Retry-After`, `Allow`, `WWW-Authenticate`, `Connection: close`), as
//! axum's `extract/rejection.rs` declares its rejections. A step of the
//! pipeline that refuses a request returns one of these; nothing else
//! builds an error response.
//!
//! The body of each is a JSON-RPC error object, with the request's id when
//! it is known (a refusal decided before the body is read has none).

use crate::http::wire::body::{self, Body};
use crate::http::wire::config::Config;
use crate::http::wire::jsonrpc::{self, RpcError};
use crate::http::wire::protocol::{LEGACY_VERSIONS, MODERN_VERSION};
use crate::http::wire::rate::Rate;
use http::header::{HeaderName, HeaderValue, ALLOW, CONNECTION, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{Response, StatusCode};
use serde_json::Value;

/// Why the layer refused a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reject {
    /// 403: an `Origin` that is not allowed.
    ForbiddenOrigin,
    /// 403: a `Host` that is not allowed.
    ForbiddenHost,
    /// 403: a CORS preflight from an origin not allowed by name.
    CrossOriginPreflight,
    /// 400: a header that may be given once was given more than once (its
    /// name as refusals show it).
    DuplicateHeader(&'static str),
    /// 401 with this `WWW-Authenticate` challenge.
    Unauthorized(HeaderValue),
    /// 403: the authenticator refused valid credentials.
    Forbidden,
    /// 403 with this `WWW-Authenticate` challenge (`error="insufficient_scope"`):
    /// a valid access token without a required scope.
    #[cfg(feature = "oauth")]
    InsufficientScope(HeaderValue),
    /// 503: the OAuth resource server cannot check an access token now:
    /// its authorization server's keys are older than their maximum age
    /// and could not be fetched again; `retry_after` (whole seconds): when
    /// it may fetch them again.
    #[cfg(feature = "oauth")]
    AuthorizationUnavailable { retry_after: u64 },
    /// 400: a protocol version this endpoint does not serve (bounded
    /// copy), and whether it serves the modern one.
    UnsupportedVersion { requested: String, modern: bool },
    /// 405, with the methods the endpoint answers.
    MethodNotAllowed(&'static str),
    /// 406: `Accept` does not list what the method answers with.
    NotAcceptable(&'static str),
    /// 415: the body is not `application/json`.
    NotJson,
    /// 413: the body is larger than the limit.
    BodyTooLarge,
    /// 408: the body did not arrive within the body read timeout (the
    /// connection is closed after it: the body was not read to its end).
    BodyTimedOut,
    /// 400: a JSON-RPC batch.
    Batch,
    /// 400: the connection failed mid-body.
    BodyUnreadable,
    /// 400: a legacy request other than `initialize` without a session id.
    MissingSessionId,
    /// 400: an `initialize` that names a session.
    InitializeInSession,
    /// 404: no session of this principal has this id (unknown, stale,
    /// forged, expired, terminated, another principal's: all alike).
    SessionNotFound,
    /// 404: the request's session ended while it ran.
    SessionEnded,
    /// 429: the session has as many requests in flight as it may.
    TooManyRequests,
    /// 503: the manager runs as many handlers as it may.
    Overloaded,
    /// 503: no room for another session.
    AtCapacity,
    /// 503: the node is draining and takes no new session.
    Draining,
    /// 503: the server is shutting down.
    ShuttingDown,
    /// 503: what the request needs (said here) goes through the fleet's
    /// bus, whose link is down: retry once it is back (nothing was done).
    BusUnavailable(&'static str),
    /// 429: the principal holds its whole share of a store every principal
    /// shares (`bound`: the setting; `limit` places of `held`); `retry_after`
    /// (whole seconds): when one of its places frees. Nobody else notices.
    OverShare {
        bound: &'static str,
        store: &'static str,
        held: &'static str,
        limit: usize,
        retry_after: u64,
    },
    /// 429: past a rate limit (`limit`: which, as `RateLimit-Policy` names
    /// it, and its `tool` for a tool's; `rate`: what it allows);
    /// `retry_after` (whole seconds): when the next request is allowed.
    RateLimited {
        limit: std::borrow::Cow<'static, str>,
        tool: Option<Box<str>>,
        rate: Rate,
        retry_after: u64,
    },
    /// 503: a store every principal shares is full (`bound`: the setting;
    /// `limit` places of `held` in all); `retry_after` (whole seconds): when
    /// the soonest place frees.
    StoreFull {
        bound: &'static str,
        store: &'static str,
        held: &'static str,
        limit: usize,
        retry_after: u64,
    },
    /// 500: a handler failed (or panicked); with a session, the session
    /// has ended.
    HandlerFailed { in_session: bool },
    /// 409: the SSE stream is connected already.
    StreamConnected,
    /// 400: `Last-Event-ID` names no stream (or event) of the session.
    UnknownStream,
    /// 400: a request whose message, headers or fields fail the checks;
    /// its error says which (`-32700` not JSON, `-32600` not a JSON-RPC
    /// message, `-32602` malformed params or `_meta`, `-32020` a header
    /// that disagrees with the body).
    Malformed(RpcError),
    /// 400: the application refused to open a session (its
    /// [`App::open`](crate::http::App::open) error), or answered `initialize` with
    /// an error.
    OpenRefused(RpcError),
    /// 404 with `-32601`: a method this endpoint does not answer at this
    /// version (one 2026-07-28 removed, say).
    NoSuchMethod(String),
    /// 400 with `-32021`: the request needs client capabilities (this
    /// `ClientCapabilities` object) that it did not declare.
    MissingCapability(Value),
    /// 400 with `-32602`: a 2026-07-28 `requestState` that does not open
    /// (the cause is counted, not told: it would help a forger).
    RequestStateInvalid,
    /// 200 with `-32602`: no task of the requester's has this id (unknown,
    /// forged, freed, another principal's: all alike).
    TaskNotFound,
    /// 200 with `-32602`: the task this id named has ended and was freed
    /// (proven minted here).
    TaskExpired,
    /// 200 with `-32602`: a task method's params are not what it takes.
    TaskParams(&'static str),
    /// A 2026-07-28 application's error answer, with the transport's status
    /// for its code (see [`modern_status`]).
    Answered(RpcError),
}

/// The HTTP status of a JSON-RPC error answered at 2026-07-28, as the
/// transport page gives them: an unknown method 404; a missing client
/// capability (and the protocol's own header and version refusals) 400;
/// any other error is an answer, 200.
pub(crate) fn modern_status(error: &RpcError) -> StatusCode {
    match error.code {
        jsonrpc::RpcError::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        jsonrpc::RpcError::MISSING_REQUIRED_CLIENT_CAPABILITY
        | jsonrpc::RpcError::HEADER_MISMATCH
        | jsonrpc::RpcError::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// The IETF rate-limit headers (draft-ietf-httpapi-ratelimit-headers).
const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// The message of the `-32602` a refused `requestState` gets.
const REQUEST_STATE_INVALID: &str = "Invalid requestState";

/// Why a draining node refuses an `initialize`: nothing was created, so the
/// client (or its balancer) may send it again, to this node's peers.
const DRAINING: &str = "this node is draining and takes no new sessions; retry (another node will)";

impl Reject {
    /// The HTTP status.
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Reject::ForbiddenOrigin
            | Reject::ForbiddenHost
            | Reject::CrossOriginPreflight
            | Reject::Forbidden => StatusCode::FORBIDDEN,
            #[cfg(feature = "oauth")]
            Reject::InsufficientScope(_) => StatusCode::FORBIDDEN,
            Reject::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Reject::DuplicateHeader(_)
            | Reject::UnsupportedVersion { .. }
            | Reject::Batch
            | Reject::BodyUnreadable
            | Reject::MissingSessionId
            | Reject::InitializeInSession
            | Reject::UnknownStream
            | Reject::Malformed(_)
            | Reject::OpenRefused(_)
            | Reject::MissingCapability(_)
            | Reject::RequestStateInvalid => StatusCode::BAD_REQUEST,
            Reject::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Reject::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Reject::NotJson => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Reject::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Reject::BodyTimedOut => StatusCode::REQUEST_TIMEOUT,
            Reject::SessionNotFound | Reject::SessionEnded | Reject::NoSuchMethod(_) => {
                StatusCode::NOT_FOUND
            }
            Reject::TaskNotFound | Reject::TaskExpired | Reject::TaskParams(_) => StatusCode::OK,
            Reject::TooManyRequests | Reject::OverShare { .. } | Reject::RateLimited { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            Reject::Overloaded
            | Reject::AtCapacity
            | Reject::Draining
            | Reject::ShuttingDown
            | Reject::BusUnavailable(_)
            | Reject::StoreFull { .. } => StatusCode::SERVICE_UNAVAILABLE,
            #[cfg(feature = "oauth")]
            Reject::AuthorizationUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Reject::HandlerFailed { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            Reject::StreamConnected => StatusCode::CONFLICT,
            Reject::Answered(error) => modern_status(error),
        }
    }

    /// The `Retry-After` (whole seconds) of a refusal that asks for a retry:
    /// its own where it knows when a place frees, else `configured`; `None`
    /// for the others.
    fn retry_after(&self, configured: u64) -> Option<u64> {
        match self {
            Reject::OverShare { retry_after, .. }
            | Reject::StoreFull { retry_after, .. }
            | Reject::RateLimited { retry_after, .. } => Some(*retry_after),
            #[cfg(feature = "oauth")]
            Reject::AuthorizationUnavailable { retry_after } => Some(*retry_after),
            Reject::TooManyRequests
            | Reject::Overloaded
            | Reject::AtCapacity
            | Reject::BusUnavailable(_)
            | Reject::Draining => Some(configured),
            _ => None,
        }
    }

    /// The JSON-RPC error of the body.
    fn error(&self) -> RpcError {
        let server = |message: &str| RpcError::new(jsonrpc::RpcError::SERVER_ERROR, message);
        match self {
            Reject::ForbiddenOrigin => server("forbidden Origin"),
            Reject::ForbiddenHost => server("forbidden Host"),
            Reject::CrossOriginPreflight => {
                server("cross-origin requests are allowed only from origins on the allow-list")
            }
            Reject::DuplicateHeader(name) => RpcError::new(
                jsonrpc::RpcError::INVALID_REQUEST,
                format!("more than one {name}"),
            ),
            Reject::Unauthorized(_) => server("authentication required"),
            Reject::Forbidden => server("forbidden"),
            #[cfg(feature = "oauth")]
            Reject::InsufficientScope(_) => server("the access token lacks a required scope"),
            #[cfg(feature = "oauth")]
            Reject::AuthorizationUnavailable { .. } => server(
                "access tokens cannot be checked now: the authorization server's keys are out of \
                 date and it does not answer; retry later",
            ),
            Reject::UnsupportedVersion { requested, modern } => {
                unsupported_version(requested, *modern)
            }
            Reject::MethodNotAllowed(_) => server("method not allowed"),
            Reject::NotAcceptable(what) => server(what),
            Reject::NotJson => server("Content-Type must be application/json"),
            Reject::BodyTooLarge => server("request body too large"),
            Reject::BodyTimedOut => server("the request body took too long"),
            Reject::Batch => RpcError::new(
                jsonrpc::RpcError::INVALID_REQUEST,
                "JSON-RPC batches are not supported: send one message per POST",
            ),
            Reject::BodyUnreadable => server("could not read the request body"),
            Reject::MissingSessionId => {
                server("missing MCP-Session-Id (only initialize starts a session)")
            }
            Reject::InitializeInSession => RpcError::new(
                jsonrpc::RpcError::INVALID_REQUEST,
                "initialize must not carry an MCP-Session-Id",
            ),
            Reject::SessionNotFound => {
                RpcError::new(jsonrpc::RpcError::SESSION_NOT_FOUND, "session not found")
            }
            Reject::SessionEnded => RpcError::new(
                jsonrpc::RpcError::SESSION_NOT_FOUND,
                "the session ended while the request ran",
            ),
            Reject::TooManyRequests => {
                server("too many requests in flight in this session; retry later")
            }
            Reject::Overloaded => server("the server is busy; retry later"),
            Reject::AtCapacity => server("too many sessions; retry later"),
            Reject::Draining => server(DRAINING),
            Reject::ShuttingDown => server("server is shutting down"),
            Reject::BusUnavailable(what) => server(&format!("{what}; retry later")),
            Reject::OverShare {
                bound,
                store,
                held,
                limit,
                retry_after,
            } => at_bound(
                format!(
                    "this principal holds its whole {store} share: {limit} {held}; \
                     retry after {retry_after} s"
                ),
                bound,
                *limit,
                *retry_after,
            ),
            Reject::StoreFull {
                bound,
                store,
                held,
                limit,
                retry_after,
            } => at_bound(
                format!(
                    "the {store} store is full: {limit} {held} in all; retry after {retry_after} s"
                ),
                bound,
                *limit,
                *retry_after,
            ),
            Reject::RateLimited {
                limit,
                tool,
                rate,
                retry_after,
            } => {
                let what = match tool {
                    Some(tool) => format!("the limit of tool {tool}"),
                    None => format!("the {limit} limit"),
                };
                let mut error = RpcError::new(
                    RpcError::SERVER_ERROR,
                    format!("rate limit exceeded: {what} is {rate}; retry after {retry_after} s"),
                );
                let mut data = serde_json::json!({
                    "limit": limit,
                    "rate": rate.to_string(),
                    "retryAfterSeconds": retry_after,
                });
                if let Some(tool) = tool {
                    data["tool"] = serde_json::Value::from(&**tool);
                }
                error.data = Some(data);
                error
            }
            Reject::HandlerFailed { in_session: true } => RpcError::new(
                jsonrpc::RpcError::INTERNAL_ERROR,
                "the handler failed; the session has ended",
            ),
            Reject::HandlerFailed { in_session: false } => {
                RpcError::new(jsonrpc::RpcError::INTERNAL_ERROR, "the handler failed")
            }
            Reject::StreamConnected => server("this stream is already connected"),
            Reject::UnknownStream => server("Last-Event-ID names no stream of this session"),
            Reject::Malformed(error) | Reject::OpenRefused(error) | Reject::Answered(error) => {
                error.clone()
            }
            Reject::NoSuchMethod(method) => RpcError::method_not_found(method),
            Reject::MissingCapability(required) => RpcError::missing_capability(required.clone()),
            Reject::RequestStateInvalid => RpcError::invalid_params(REQUEST_STATE_INVALID),
            Reject::TaskNotFound => {
                RpcError::invalid_params("Failed to retrieve task: Task not found")
            }
            Reject::TaskExpired => {
                RpcError::invalid_params("Failed to retrieve task: Task has expired")
            }
            Reject::TaskParams(message) => RpcError::invalid_params(*message),
        }
    }

    /// The response for request `id` (when known), with the `Retry-After`
    /// that `config` sets.
    pub(crate) fn respond(self, id: Option<&Value>, config: &Config) -> Response<Body> {
        self.into_response(id, config.retry_after_secs())
    }

    /// The response: the status, a JSON-RPC error for request `id` (when
    /// known), and the refusal's headers; `retry_after` (whole seconds) is
    /// the `Retry-After` of those that ask for a retry.
    pub(crate) fn into_response(self, id: Option<&Value>, retry_after: u64) -> Response<Body> {
        let mut response = body::rpc_error(self.status(), id, &self.error());
        let headers = response.headers_mut();
        if let Some(after) = self.retry_after(retry_after) {
            headers.insert(RETRY_AFTER, HeaderValue::from(after));
        }
        match self {
            Reject::Unauthorized(challenge) => {
                headers.insert(WWW_AUTHENTICATE, challenge);
            }
            #[cfg(feature = "oauth")]
            Reject::InsufficientScope(challenge) => {
                headers.insert(WWW_AUTHENTICATE, challenge);
            }
            Reject::MethodNotAllowed(allow) => {
                headers.insert(ALLOW, HeaderValue::from_static(allow));
            }
            Reject::BodyTimedOut => {
                headers.insert(CONNECTION, HeaderValue::from_static("close"));
            }
            Reject::RateLimited {
                limit,
                rate,
                retry_after,
                ..
            } => {
                // draft-ietf-httpapi-ratelimit-headers (-08 and later):
                // structured fields, the policy's quota per window, and
                // what remains of it with the seconds until it resets.
                let policy = format!("\"{limit}\";q={};w={}", rate.count(), rate.window_secs());
                let state = format!("\"{limit}\";r=0;t={retry_after}");
                for (name, value) in [(RATELIMIT_POLICY, policy), (RATELIMIT, state)] {
                    if let Ok(value) = HeaderValue::try_from(value) {
                        headers.insert(name, value);
                    }
                }
            }
            _ => {}
        }
        response
    }
}

/// The error of a refusal at a store's bound: the message, and `data` that
/// says which bound (`bound`: the `Builder` setting), its `limit`, and the
/// `Retry-After` again (`retryAfterSeconds`).
fn at_bound(message: String, bound: &str, limit: usize, retry_after: u64) -> RpcError {
    let mut error = RpcError::new(RpcError::SERVER_ERROR, message);
    error.data = Some(serde_json::json!({
        "bound": bound,
        "limit": limit,
        "retryAfterSeconds": retry_after,
    }));
    error
}

/// The `UnsupportedProtocolVersionError` of the 2026-07-28 schema (code
/// `-32022`, `data.supported` and `data.requested`), which legacy clients
/// read as the plain 400 their revisions ask for. `modern` says whether
/// 2026-07-28 is among the versions served.
fn unsupported_version(requested: &str, modern: bool) -> RpcError {
    let mut supported: Vec<&str> = Vec::with_capacity(LEGACY_VERSIONS.len() + 1);
    if modern {
        supported.push(MODERN_VERSION);
    }
    supported.extend(LEGACY_VERSIONS.iter().rev());
    let mut error = RpcError::new(
        jsonrpc::RpcError::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version: {requested} (supported: {})",
            supported.join(", ")
        ),
    );
    error.data = Some(serde_json::json!({ "supported": supported, "requested": requested }));
    error
}

/// A requested version as an [`Reject::UnsupportedVersion`] carries it:
/// echoed back, so bounded (a header can be kilobytes long).
pub(crate) fn bounded(requested: &str) -> String {
    match requested.char_indices().nth(64) {
        Some((end, _)) => requested[..end].to_string(),
        None => requested.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_carry_retry_after_and_others_do_not() {
        for reject in [
            Reject::TooManyRequests,
            Reject::Overloaded,
            Reject::AtCapacity,
            Reject::Draining,
        ] {
            let response = reject.into_response(None, 3);
            assert_eq!(response.headers()[RETRY_AFTER], "3");
        }
        let response = Reject::ShuttingDown.into_response(None, 3);
        assert!(response.headers().get(RETRY_AFTER).is_none());
        // A store's bound says its own Retry-After, and which bound it is.
        let share = Reject::OverShare {
            bound: "task_share",
            store: "task",
            held: "tasks, running or kept",
            limit: 2,
            retry_after: 42,
        };
        assert_eq!(share.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(share.error().data.unwrap()["bound"], "task_share");
        let response = share.into_response(None, 3);
        assert_eq!(response.headers()[RETRY_AFTER], "42");
        let full = Reject::StoreFull {
            bound: "task_capacity",
            store: "task",
            held: "tasks, running or kept",
            limit: 9,
            retry_after: 7,
        };
        assert!(full.error().message.contains("task store is full"));
        let response = full.into_response(None, 3);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[RETRY_AFTER], "7");
        #[cfg(feature = "oauth")]
        {
            let unavailable = Reject::AuthorizationUnavailable { retry_after: 10 };
            let response = unavailable.into_response(None, 3);
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(response.headers()[RETRY_AFTER], "10");
        }
        let response = Reject::MethodNotAllowed("POST").into_response(None, 1);
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(response.headers()[ALLOW], "POST");
    }

    #[test]
    fn an_unsupported_version_lists_the_served_ones() {
        let error = unsupported_version("1999-01-01", true);
        assert_eq!(error.code, jsonrpc::RpcError::UNSUPPORTED_PROTOCOL_VERSION);
        let data = error.data.unwrap();
        assert_eq!(data["supported"][0], MODERN_VERSION);
        assert_eq!(data["requested"], "1999-01-01");
        assert_eq!(bounded(&"x".repeat(500)).len(), 64);
    }
}

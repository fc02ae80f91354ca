//! CORS for browser clients (the MCP Inspector, web apps) whose origin is
//! allowed by name: on the `Origin` allow-list, or a loopback origin while
//! DNS-rebinding protection restricts the endpoint to loopback.
//!
//! Such an origin gets `Access-Control-Allow-Origin` (its own value, with
//! `Vary: Origin`) on every response, and `Access-Control-Expose-Headers`
//! naming `Mcp-Session-Id` (a browser script cannot read the session id
//! otherwise), `Mcp-Protocol-Version` and `WWW-Authenticate`. A preflight
//! (`OPTIONS` with `Access-Control-Request-Method`) from it is answered 204
//! with the methods and the request headers it asked for. An origin that is
//! merely unrestricted (no allow-list, protection off) gets no CORS headers:
//! the browser then keeps a foreign page from reading the answers, which is
//! the safe default. No `Access-Control-Allow-Credentials`: MCP clients
//! send their credentials in `Authorization`, not cookies.

use crate::http::wire::body::{self, Body};
use http::header::{
    HeaderMap, HeaderValue, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE,
    ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY,
};
use http::{Method, Response, StatusCode};

const EXPOSE: &str = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate";
/// The request headers a preflight is granted when it names none.
const DEFAULT_REQUEST_HEADERS: &str = "Content-Type, Accept, Authorization, Mcp-Session-Id, \
     Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name";
const MAX_AGE_SECONDS: u32 = 600;

/// Whether the request is a CORS preflight.
pub(crate) fn is_preflight(method: &Method, headers: &HeaderMap) -> bool {
    method == Method::OPTIONS
        && headers.contains_key(ORIGIN)
        && headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD)
}

/// The answer to a preflight from an origin allowed by name: 204 granting
/// `methods` (any other origin's preflight is refused with 403 by the
/// router).
pub(crate) fn preflight(
    origin: HeaderValue,
    headers: &HeaderMap,
    methods: &'static str,
) -> Response<Body> {
    let mut response = body::status(StatusCode::NO_CONTENT);
    let out = response.headers_mut();
    // The headers a page may send, once its origin is trusted, are its own
    // business: the ones it asks for are granted (including any
    // `Mcp-Param-*` header of a 2026-07-28 tool call, which no fixed list
    // could name).
    let asked = headers
        .get(ACCESS_CONTROL_REQUEST_HEADERS)
        .filter(|v| v.to_str().is_ok_and(|s| !s.trim().is_empty()))
        .cloned()
        .unwrap_or(HeaderValue::from_static(DEFAULT_REQUEST_HEADERS));
    out.insert(ACCESS_CONTROL_ALLOW_HEADERS, asked);
    out.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(methods),
    );
    out.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from(MAX_AGE_SECONDS));
    decorate(&mut response, origin);
    response
}

/// Adds the CORS headers of an allowed origin to a response.
pub(crate) fn decorate(response: &mut Response<Body>, origin: HeaderValue) {
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.append(VARY, HeaderValue::from_static("Origin"));
    headers.insert(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSE),
    );
}

//! `POST` in the session era: one JSON-RPC message, in the session its
//! `MCP-Session-Id` names, run by the application (`dispatch.rs`) and
//! answered with JSON, 202 or an SSE stream; an `initialize` without a
//! session id opens a session (`initialize.rs`).

use super::initialize;
use crate::http::access::auth::Principal;
use crate::http::admission;
use crate::http::app::App;
use crate::http::body::{self, Body};
use crate::http::dispatch::{self, Extra};
use crate::http::headers;
use crate::http::jsonrpc::{self, Message, RpcError};
use crate::http::message;
use crate::http::protocol::Version;
use crate::http::reject::Reject;
use crate::http::state::State;
use http::{Response, StatusCode};
use hyper::body::Body as HttpBody;
use std::sync::Arc;

/// Serves one `POST` at legacy version `version`.
pub(super) async fn serve<A, B>(
    state: &Arc<State<A>>,
    request: http::Request<B>,
    version: &'static str,
) -> Response<Body>
where
    A: App,
    B: HttpBody + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = request.into_parts();
    let message = match message::read(state, &parts, body).await {
        Ok(message) => message,
        Err(reject) => return state.refuse(reject, None),
    };
    let id = message.request_id();
    // Checked here, and the handler spawned (if it must be) in the same
    // synchronous stretch of this poll: see `admission.rs`.
    if let Err(reject) = state.handlers().admit(state.config().max_handlers) {
        return state.refuse(reject, id.as_ref());
    }
    let session_header = parts.headers.get(headers::SESSION_ID).cloned();
    if session_header.is_none() && carries_modern_meta(&message) {
        // A 2026-07-28 request that forgot its version header: a modern
        // error, so that a dual-era client does not fall back to
        // `initialize` (the transport page: the header is required).
        let error = RpcError::new(
            jsonrpc::HEADER_MISMATCH,
            "Header mismatch: MCP-Protocol-Version header is required",
        );
        return state.refuse(Reject::Rpc(StatusCode::BAD_REQUEST, error), id.as_ref());
    }
    match (session_header, message) {
        (None, Message::Request(request)) if request.method == "initialize" => {
            initialize::open(state, request, Version::Legacy(version), parts).await
        }
        (None, _) => state.refuse(Reject::MissingSessionId, None),
        (Some(_), message) if message.is_initialize() => {
            state.refuse(Reject::InitializeInSession, None)
        }
        (Some(header), message) => {
            let session = match state.find(header.as_bytes(), Principal::of(&parts)) {
                Ok(session) => session,
                Err(reject) => return state.refuse(reject, None),
            };
            // Counted in flight from here, so the reaper cannot take the
            // session while the handler is being scheduled.
            let max = state.config().max_requests_per_session;
            let request = match admission::begin(&session, max) {
                Ok(request) => request,
                Err(reject @ Reject::TooManyRequests) => return state.refuse(reject, id.as_ref()),
                Err(reject) => return state.refuse(reject, None),
            };
            match &message {
                Message::Notification(note) if note.method == "notifications/cancelled" => {
                    dispatch::cancel_named(&request, note);
                }
                // An answer to one of the session's own requests goes to
                // the handler that asked, not to the application.
                Message::Response(response) if request.asks.answer(response) => {
                    return body::status(StatusCode::ACCEPTED);
                }
                _ => {}
            }
            let version = Version::Legacy(version);
            let started =
                dispatch::run(state, Some(request), message, version, parts, Extra::None).await;
            dispatch::reply(state, started.head.await, id.as_ref())
        }
    }
}

/// Whether a message carries the per-request `_meta` of 2026-07-28 (its
/// protocol version): a modern request, whatever its headers say.
fn carries_modern_meta(message: &Message) -> bool {
    let Message::Request(request) = message else {
        return false;
    };
    // Only the request's own `_meta.protocolVersion` is looked at; the rest
    // of the params is skipped, not built.
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta", default)]
        meta: Option<Meta>,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
        version: Option<serde::de::IgnoredAny>,
    }
    matches!(
        request.params_as::<Option<Params>>(),
        Ok(Some(Params {
            meta: Some(Meta { version: Some(_) })
        }))
    )
}

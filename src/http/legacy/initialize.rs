//! `initialize` without a session id: the request is checked first, and
//! only then is a session inserted (with this request already in flight),
//! run, and answered with its `MCP-Session-Id`. A refused or failed first
//! request creates nothing that outlives it.

use crate::http::access::auth::Principal;
use crate::http::app::App;
use crate::http::body::{self, Body};
use crate::http::dispatch::{self, Extra, Head};
use crate::http::headers;
use crate::http::jsonrpc::{Message, Request, RpcError};
use crate::http::protocol::{self, Version};
use crate::http::reject::Reject;
use crate::http::session::SessionEntry;
use crate::http::state::State;
use crate::Reason;
use http::header::HeaderValue;
use http::request::Parts;
use http::{Response, StatusCode};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Opens a session for a valid `initialize` and answers it.
pub(super) async fn open<A: App>(
    state: &Arc<State<A>>,
    request: Request,
    version: Version,
    parts: Parts,
) -> Response<Body> {
    let requested = match requested_version(&request) {
        Ok(requested) => requested,
        Err(error) => {
            return state.refuse(
                Reject::Rpc(StatusCode::BAD_REQUEST, error),
                Some(&request.id),
            )
        }
    };
    if state.is_shutting_down() {
        return state.refuse(Reject::ShuttingDown, None);
    }
    if state.is_draining() {
        return state.refuse(Reject::Draining, Some(&request.id));
    }
    let opened = std::panic::catch_unwind(AssertUnwindSafe(|| state.app().open(&request, &parts)));
    let app_state = match opened {
        Ok(Ok(app_state)) => app_state,
        Ok(Err(error)) => {
            return state.refuse(
                Reject::Rpc(StatusCode::BAD_REQUEST, error),
                Some(&request.id),
            )
        }
        Err(panic) => {
            let panic = dispatch::panic_message(&*panic);
            tracing::error!(panic, "App::open panicked");
            return state.refuse(
                Reject::HandlerFailed { in_session: false },
                Some(&request.id),
            );
        }
    };
    let entry = SessionEntry::new(
        app_state,
        state.new_streams(),
        Principal::of(&parts).cloned(),
    );
    // Created with this request already in flight: it cannot idle out
    // before its handler has even started.
    let Ok(first) = state.registry().insert_in_flight(entry) else {
        return state.refuse(Reject::AtCapacity, Some(&request.id));
    };
    let id = first.id();
    // The Debug form: index, generation, node; never the secret.
    tracing::Span::current().record("session", tracing::field::debug(id));
    if state.is_shutting_down() {
        // Inserted while `shutdown` swept: end it ourselves.
        let _ = state.registry().terminate_session(&first, Reason::Shutdown);
        return state.refuse(Reject::ShuttingDown, None);
    }
    let request_id = request.id.clone();
    // The version the session will speak (no header on initialize: the
    // body asks), e.g. for the priming event of a streamed answer.
    let version = match version {
        Version::Legacy(_) => Version::Legacy(protocol::negotiate(Some(&requested))),
        modern => modern,
    };
    let started = dispatch::run(
        state,
        Some(first),
        Message::Request(request),
        version,
        parts,
        Extra::None,
    )
    .await;
    let mut response = match started.head.await {
        Ok(Head::Reply(crate::http::app::Reply::Result(result))) => {
            body::result(&request_id, &result)
        }
        Ok(Head::Stream(outlet)) => state.sse(outlet),
        Ok(Head::Reply(crate::http::app::Reply::Error(error))) => {
            // The application rejected the first request: the session
            // ends, and its id is never shown.
            let _ = state.registry().terminate(&id, Reason::Rejected);
            return state.refuse(
                Reject::Rpc(StatusCode::BAD_REQUEST, error),
                Some(&request_id),
            );
        }
        Ok(Head::Reply(
            crate::http::app::Reply::Stream(_)
            | crate::http::app::Reply::Accepted
            | crate::http::app::Reply::InputRequired(_)
            | crate::http::app::Reply::Task(_),
        )) => {
            let _ = state.registry().terminate(&id, Reason::Rejected);
            return state.refuse(
                Reject::HandlerFailed { in_session: true },
                Some(&request_id),
            );
        }
        Ok(Head::Failed { .. }) => {
            return state.refuse(
                Reject::HandlerFailed { in_session: true },
                Some(&request_id),
            )
        }
        Ok(Head::Stopped(stop)) => {
            // Ended under it, or timed out: either way no session.
            let _ = state.registry().terminate(&id, Reason::Rejected);
            return dispatch::stopped(state, stop, Some(&request_id));
        }
        Err(_) => return state.refuse(Reject::ShuttingDown, None),
    };
    let mut text = [0u8; crate::SessionId::TEXT_LEN];
    let value = HeaderValue::from_str(id.encode(&mut text)).expect("session ids are visible ASCII");
    response.headers_mut().insert(headers::SESSION_ID, value);
    response
}

/// The shape an `initialize` request must have before a session is made
/// for it: params with the protocol version the client asks for (any
/// string: an unknown one is negotiated down, see [`protocol::negotiate`]).
fn requested_version(request: &Request) -> Result<String, RpcError> {
    /// Only the member checked here is read out of the raw params; the rest
    /// is walked over, not built.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Initialize {
        protocol_version: String,
    }
    match request.params_as::<Initialize>() {
        Ok(params) => Ok(params.protocol_version),
        Err(_) => Err(RpcError::invalid_params(
            "initialize needs params.protocolVersion (a string)",
        )),
    }
}

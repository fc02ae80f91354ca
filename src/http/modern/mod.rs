//! The modern era: requests at protocol version 2026-07-28, which has no
//! sessions: each `POST` stands alone, follows the rules of that revision's
//! Streamable HTTP page, and never touches the registry.
//!
//! Section names below are those of the 2026-07-28 transport page
//! (`basic/transports/streamable-http`):
//!
//! * **Request Metadata → Server Validation**: `Mcp-Method` is required on
//!   every request and must equal the body's `method`; `Mcp-Name` is
//!   required on `tools/call`, `resources/read` and `prompts/get` when the
//!   body names a target (`params.name`, or `params.uri` for
//!   `resources/read`) and must equal it, after decoding the
//!   `=?base64?...?=` sentinel (**Value Encoding**); values are compared
//!   without surrounding whitespace (RFC 9110 §5.5). A header that is
//!   missing, malformed or different is answered 400 with a `HeaderMismatch`
//!   (`-32020`) error. The `MCP-Protocol-Version` header must also equal
//!   the body's `_meta["io.modelcontextprotocol/protocolVersion"]`. A
//!   notification's headers are checked when present (**Sending Messages**:
//!   "header requirements for notification POSTs are not defined by this
//!   revision").
//! * **Sending Messages**: a client must not send a JSON-RPC response (400).
//! * *Per-request protocol fields* (the 2026-07-28 `basic` page, `_meta`):
//!   a request without `params._meta` carrying
//!   `io.modelcontextprotocol/protocolVersion` (a string) and
//!   `io.modelcontextprotocol/clientCapabilities` (an object) is malformed:
//!   400 with `-32602` (Invalid params).
//! * **Protocol Version Header**: a method the application does not
//!   implement (its reply is a `-32601` error) is answered 404, so a client
//!   can tell a modern server from a legacy endpoint.
//! * **Cancellation**: closing the SSE response stream, or the connection
//!   before the answer, cancels the request: the handler's future (or its
//!   reply stream) is dropped. (Requests in a session keep running when the
//!   client goes, as the 2025-11-25 page says disconnection should not be
//!   read as cancellation.)
//! * **Backward Compatibility → Earlier Streamable HTTP Revisions**:
//!   `MCP-Session-Id` and `Last-Event-ID` are ignored; `GET` and `DELETE`
//!   answer 405 (in the router).
//!
//! The layer owns the envelope (see `envelope.rs`): removed methods
//! (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`,
//! `resources/unsubscribe`, the tasks extension's `tasks/result` and
//! `tasks/list`) get 404 with `-32601` before the application sees them;
//! `server/discover` is answered from [`App::discovery`]
//! (`discover.rs`); every result gets its `resultType` and, where the
//! schema wants them, caching hints; a JSON-RPC error gets its transport
//! status (`-32601`: 404; `-32020`, `-32021`, `-32022` and a malformed
//! request's `-32602`: 400; any other: 200). Multi-round-trip requests
//! (`request.rs`, `sealing.rs`): an application answers "input required"
//! with [`Modern::input_required`]; the layer seals the state it wants
//! back, and on the retry opens and verifies it before the application sees
//! it, refusing a tampered, expired, replayed or another request's or
//! principal's state with `-32602` (400), counted in
//! `sessionreg_request_state_rejected_total{cause}`. A tool's
//! `x-mcp-header` parameters are checked against their `Mcp-Param-*`
//! headers (`mirror.rs`).
//!
//! Such requests go through the [authenticator](crate::http::Builder::authenticator)
//! like every other; [`Builder::serve_modern`](crate::http::Builder::serve_modern)
//! switches them on (off, they get the `UnsupportedProtocolVersionError`).

mod binding;
pub(crate) mod discover;
pub(crate) mod envelope;
mod headers;
pub(crate) mod mirror;
pub(crate) mod request;
pub(crate) mod sealing;
mod single_use;

pub use discover::{CacheScope, Discovery};
pub use mirror::{MirrorError, MirroredParams};
pub use request::{
    missing_capability, InputRequests, InputRequired, LogLevel, Modern,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
};
pub use sealing::{RequestStateKeys, StateRejection};
// Not part of the API: a hook for benches/sealing.rs (see the module),
// only with the feature bench-hooks.
#[cfg(feature = "bench-hooks")]
#[doc(hidden)]
pub use sealing::bench as __bench_sealing;

pub(crate) use envelope::Envelope;

use crate::http::access::auth::Principal;
use crate::http::app::{App, Reply};
use crate::http::body::{self, Body};
use crate::http::dispatch::{self, Extra, Head};
use crate::http::jsonrpc::{self, Message, Request, RpcError};
use crate::http::message;
use crate::http::protocol::Version;
use crate::http::reject::{Reject, REQUEST_STATE_INVALID};
use crate::http::state::State;
use crate::http::tasks;
use http::{Method, Response, StatusCode};
use hyper::body::Body as HttpBody;
use sealing::Binding;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The methods 2026-07-28 removed (and the tasks extension's), answered
/// 404 with `-32601` whatever the application serves.
const REMOVED: [&str; 7] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "tasks/result",
    "tasks/list",
];

/// Cancels a request's token and aborts its spawned task when dropped: the
/// request's answer (or its SSE body) holds it, so a client that goes away
/// cancels the handler (and whatever it handed its token to).
struct AbortOnDrop(tokio::task::AbortHandle, CancellationToken);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.1.cancel();
        // A no-op for a task that has finished.
        self.0.abort();
    }
}

/// Serves one 2026-07-28 request: `POST` only (there is no session to
/// `GET` or `DELETE`).
pub(crate) async fn serve<A, B>(state: &Arc<State<A>>, request: http::Request<B>) -> Response<Body>
where
    A: App,
    B: HttpBody + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if request.method() != Method::POST {
        return state.refuse(Reject::MethodNotAllowed("POST"), None);
    }
    let (parts, body) = request.into_parts();
    let message = match message::read(state, &parts, body).await {
        Ok(message) => message,
        Err(reject) => return state.refuse(reject, None),
    };
    let id = message.request_id();
    if let Err(reject) = state.handlers().admit(state.config().max_handlers) {
        return state.refuse(reject, id.as_ref());
    }
    // "Server Validation", in the order the conformance suite pins: the
    // per-request fields, then the headers against the body. The members
    // both read (and the handler's view below) are read out of the body once.
    let fields = match headers::fields(&message).and_then(|fields| {
        headers::check_meta(&message, &fields)?;
        headers::check_headers(&parts.headers, &message, &fields)?;
        Ok(fields)
    }) {
        Ok(fields) => fields,
        Err(error) => {
            return state.refuse(Reject::Rpc(StatusCode::BAD_REQUEST, error), id.as_ref())
        }
    };
    let request = match &message {
        Message::Request(request) => request,
        // Notifications (this revision defines none over HTTP) are
        // accepted and passed on; responses were refused above.
        _ => {
            let extra = Extra::Modern {
                request: Box::new(Modern::of_notification(&message)),
                envelope: None,
            };
            let started = dispatch::run(state, None, message, Version::Modern, parts, extra).await;
            return dispatch::reply(state, started.head.await, None);
        }
    };
    if REMOVED.contains(&request.method.as_str()) {
        let error = RpcError::method_not_found(&request.method);
        return state.refuse(Reject::Rpc(StatusCode::NOT_FOUND, error), id.as_ref());
    }
    let mut discovery = state.app().discovery();
    if state.tasks().is_some() {
        tasks_advertised(&mut discovery.capabilities);
    }
    if request.method == "server/discover" {
        return body::result(&request.id, &discover::result(&discovery));
    }
    let (modern, opened) = match read(state, request, &fields, &parts) {
        Ok(read) => read,
        Err(reject) => return state.refuse(reject, id.as_ref()),
    };
    // What a sealed answer will be bound to: the binding the retry's state
    // was opened with, else (only if the application seals a state) one
    // computed from the params kept here.
    let binds = Binds {
        binding: opened,
        params: request::INPUT_METHODS
            .contains(&request.method.as_str())
            .then(|| request.params.clone())
            .flatten(),
    };
    let envelope = Arc::new(Envelope {
        id: request.id.clone(),
        method: request.method.clone().into_boxed_str(),
        log_level: modern.log_level,
        server_info: discovery.server_info.clone(),
    });
    let owner = Principal::of(&parts).cloned();
    if let Some(tasks) = state
        .tasks()
        .filter(|_| tasks::METHODS.contains(&&*request.method))
    {
        let params = request.params_value().unwrap_or(Value::Null);
        return match tasks::serve_method(
            tasks,
            request,
            &params,
            &modern,
            owner.as_ref(),
            &envelope,
        ) {
            Ok(result) => body::result(&envelope.id, &result),
            Err((status, error)) => state.refuse(Reject::Rpc(status, error), id.as_ref()),
        };
    }
    let extra = Extra::Modern {
        request: Box::new(modern),
        envelope: Some(Arc::clone(&envelope)),
    };
    let started = dispatch::run(state, None, message, Version::Modern, parts, extra).await;
    // Held while the answer is awaited, then by the SSE body: dropping
    // either (the client went away) aborts the handler.
    let token = started.cancel;
    let cancel = started.task.map(|task| AbortOnDrop(task, token));
    match started.head.await {
        Ok(Head::Stream(outlet)) => {
            if let Some(cancel) = cancel {
                // Let go when the stream ends, for whatever reason (the
                // client went away, or stopped reading).
                outlet.hold(Box::new(cancel));
            }
            state.sse(outlet)
        }
        Ok(Head::Reply(Reply::Result(result))) => {
            let result = envelope.result(result);
            body::result(&envelope.id, &result)
        }
        Ok(Head::Reply(Reply::InputRequired(asked))) => {
            input_required(state, &envelope, binds, owner.as_ref(), asked)
        }
        // Only a request that may become a task gets here with one (see
        // `dispatch::work`).
        Ok(Head::Reply(Reply::Task(work))) => match state.tasks() {
            Some(tasks) => match tasks::start(tasks, &envelope, owner, work) {
                Ok(created) => body::result(&envelope.id, &created),
                Err(reject) => state.refuse(reject, id.as_ref()),
            },
            None => state.refuse(Reject::Overloaded, id.as_ref()),
        },
        Ok(Head::Reply(Reply::Error(error))) => {
            let status = status_of(&error);
            state.refuse(Reject::Rpc(status, error), id.as_ref())
        }
        head => dispatch::reply(state, head, id.as_ref()),
    }
}

/// Adds the tasks extension to the capabilities `server/discover` gives.
fn tasks_advertised(capabilities: &mut Value) {
    if !capabilities.is_object() {
        *capabilities = json!({});
    }
    let extensions = capabilities
        .as_object_mut()
        .expect("an object")
        .entry("extensions")
        .or_insert_with(|| json!({}));
    if let Value::Object(extensions) = extensions {
        extensions
            .entry(tasks::TASKS_EXTENSION)
            .or_insert_with(|| json!({}));
    }
}

/// The HTTP status of a JSON-RPC error at 2026-07-28, as the transport page
/// gives them: an unknown method 404; a missing client capability (and the
/// layer's own header, version and `_meta` refusals) 400; any other error
/// is an answer, 200.
fn status_of(error: &RpcError) -> StatusCode {
    match error.code {
        jsonrpc::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        MISSING_REQUIRED_CLIENT_CAPABILITY
        | jsonrpc::HEADER_MISMATCH
        | jsonrpc::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// What a handler knows of a request: its `_meta`, and on a retry its input
/// responses and its verified state; also a tool's mirrored parameters,
/// checked here. Read from the members `fields` borrowed out of the body:
/// only what the handler is given is built. On a retry that carries a
/// state, the binding it was opened with comes back too.
fn read<A: App>(
    state: &State<A>,
    request: &Request,
    fields: &headers::Fields<'_>,
    parts: &http::request::Parts,
) -> Result<(Modern, Option<Binding>), Reject> {
    let bad = |error: RpcError| Reject::Rpc(StatusCode::BAD_REQUEST, error);
    let value = |raw: &RawValue| -> Result<Value, Reject> {
        serde_json::from_str(raw.get())
            .map_err(|e| bad(RpcError::invalid_params(format!("invalid params: {e}"))))
    };
    let meta = &fields.meta;
    // `check_meta` saw an object here.
    let capabilities = meta
        .capabilities
        .map(value)
        .transpose()?
        .unwrap_or(Value::Null);
    let log_level = match meta.log_level {
        None => None,
        Some(raw) => match headers::text(raw) {
            Some(level) => Some(LogLevel::named(&level).ok_or_else(|| {
                bad(RpcError::invalid_params(format!(
                    "unknown log level: {level}"
                )))
            })?),
            None => {
                return Err(bad(RpcError::invalid_params(
                    "the log level must be a string",
                )))
            }
        },
    };
    let progress_token = meta.progress_token.map(value).transpose()?;
    let params = &fields.params;
    if request.method == "tools/call" {
        if let Some(mirrored) = params
            .name
            .and_then(headers::text)
            .and_then(|name| state.app().mirrored_params(&name))
        {
            let arguments = params.arguments.map(value).transpose()?;
            mirrored
                .check(&parts.headers, arguments.as_ref())
                .map_err(bad)?;
        }
    }
    let input = request::INPUT_METHODS.contains(&request.method.as_str());
    let input_responses = match params.input_responses.filter(|_| input) {
        Some(responses) => Some(request::input_responses(value(responses)?).map_err(bad)?),
        // Elsewhere the parameter means nothing: ignored.
        None => None,
    };
    let (state_bytes, binding) = match params.request_state.filter(|_| input) {
        None => (None, None),
        Some(sealed) => {
            let Some(token) = headers::text(sealed) else {
                return Err(bad(RpcError::invalid_params(
                    "requestState must be a string",
                )));
            };
            let principal = Principal::of(parts).map(Principal::as_str);
            let binding =
                binding_of(principal, &request.method, request.params.as_deref()).map_err(bad)?;
            match state.sealer().open(&token, &binding) {
                Ok(opened) => (Some(opened.state), Some(binding)),
                Err(cause) => {
                    state.counters().state_rejected(cause);
                    tracing::debug!(%cause, "requestState refused");
                    return Err(bad(RpcError::invalid_params(REQUEST_STATE_INVALID)));
                }
            }
        }
    };
    let modern = Modern {
        method: request.method.clone().into_boxed_str(),
        capabilities,
        log_level,
        progress_token,
        input_responses,
        state: state_bytes,
    };
    Ok((modern, binding))
}

/// The refusal of an answer whose single-use state could not be recorded:
/// the principal past its share (429), or the record full (503), each
/// naming its bound, with a `Retry-After` of when a record expires.
fn single_use_refused(refused: sealing::Refused) -> Reject {
    const STORE: &str = "single-use requestState";
    const HELD: &str = "unused single-use states";
    match refused {
        sealing::Refused::OverShare { limit, retry_after } => {
            tracing::debug!(
                limit,
                retry_after,
                "a principal is past its single-use share: 429"
            );
            Reject::OverShare {
                bound: "single_use_share",
                store: STORE,
                held: HELD,
                limit,
                retry_after,
            }
        }
        sealing::Refused::Full { limit, retry_after } => {
            tracing::debug!(limit, retry_after, "the single-use record is full: 503");
            Reject::StoreFull {
                bound: "single_use_states",
                store: STORE,
                held: HELD,
                limit,
                retry_after,
            }
        }
    }
}

/// The binding of a request (see `Binding::new`), from its raw params.
fn binding_of(
    principal: Option<&str>,
    method: &str,
    params: Option<&RawValue>,
) -> Result<Binding, RpcError> {
    let params: Value = match params {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))?,
        None => Value::Null,
    };
    Ok(Binding::new(principal, method, &params))
}

/// What an answer's sealed state is bound to: the binding a retry's state
/// was opened with, or the request's params to compute it from (kept for
/// the methods that may answer `input_required`; computed only when the
/// application seals a state, so no other request pays for the digest).
struct Binds {
    binding: Option<Binding>,
    params: Option<Box<RawValue>>,
}

/// The answer "input required": the input requests, and the
/// application's state sealed for this request's retry.
fn input_required<A: App>(
    state: &State<A>,
    envelope: &Envelope,
    binds: Binds,
    owner: Option<&Principal>,
    asked: InputRequired,
) -> Response<Body> {
    let principal = owner.map(Principal::as_str);
    let asked = *asked.0;
    let mut result = json!({ "resultType": "input_required" });
    if !asked.requests.is_empty() {
        result["inputRequests"] = Value::Object(asked.requests);
    }
    if let Some(app_state) = &asked.state {
        let binding = match binds.binding {
            Some(binding) => binding,
            None => match binding_of(principal, &envelope.method, binds.params.as_deref()) {
                Ok(binding) => binding,
                Err(error) => {
                    let error = Reject::Rpc(StatusCode::BAD_REQUEST, error);
                    return state.refuse(error, Some(&envelope.id));
                }
            },
        };
        match state
            .sealer()
            .seal(&binding, app_state, asked.single_use, owner)
        {
            Ok(token) => result["requestState"] = token.into(),
            Err(refused) => return state.refuse(single_use_refused(refused), Some(&envelope.id)),
        }
    }
    if let Some(info) = &envelope.server_info {
        result["_meta"] = json!({ request::META_SERVER_INFO: info });
    }
    body::result(&envelope.id, &result)
}

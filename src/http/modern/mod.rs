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
//! Such requests go through the [authenticator](crate::http::Builder::authenticator)
//! like every other; [`Builder::serve_modern`](crate::http::Builder::serve_modern)
//! switches them on (off, they get the `UnsupportedProtocolVersionError`).

mod headers;

use crate::http::app::{App, Reply};
use crate::http::body::Body;
use crate::http::dispatch::{self, Head};
use crate::http::jsonrpc;
use crate::http::message;
use crate::http::protocol::Version;
use crate::http::reject::Reject;
use crate::http::state::State;
use http::{Method, Response, StatusCode};
use hyper::body::Body as HttpBody;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

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
    if let Err(reject) = state.tasks().admit(state.config().max_handlers) {
        return state.refuse(reject, id.as_ref());
    }
    if let Err(error) = headers::check_headers(&parts.headers, &message)
        .and_then(|()| headers::check_meta(&message))
    {
        return state.refuse(Reject::Rpc(StatusCode::BAD_REQUEST, error), id.as_ref());
    }
    let started = dispatch::run(state, None, message, Version::Modern, parts).await;
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
        Ok(Head::Reply(Reply::Error(error)))
            if id.is_some() && error.code == jsonrpc::METHOD_NOT_FOUND =>
        {
            state.refuse(Reject::Rpc(StatusCode::NOT_FOUND, error), id.as_ref())
        }
        head => dispatch::reply(state, head, id.as_ref()),
    }
}

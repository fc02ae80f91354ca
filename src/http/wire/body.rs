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
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use serde_json::Value;
use std::convert::Infallible;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The body of every response the session manager writes: a whole JSON
/// body, nothing, or a stream (an SSE stream, or any body given to
/// [`Body::new`]).
///
/// A whole body or an empty one is held as it is, not boxed: the answer to
/// a request costs no allocation of its own beyond its bytes.
///
/// ```
/// use hyper::body::Body as _;
/// use sessionreg::http::Body;
///
/// assert_eq!(Body::full("{}").size_hint().exact(), Some(2));
/// assert!(Body::empty().is_end_stream());
/// ```
pub struct Body(Held);

/// What a [`Body`] holds.
enum Held {
    Full(Full<Bytes>),
    Empty,
    Boxed(BoxBody<Bytes, Infallible>),
}

impl Body {
    /// Any body that cannot fail, boxed (a stream, a body of your own).
    pub fn new<B>(body: B) -> Body
    where
        B: HttpBody<Data = Bytes, Error = Infallible> + Send + Sync + 'static,
    {
        Body(Held::Boxed(body.boxed()))
    }

    /// A body holding `bytes`, whole.
    pub fn full(bytes: impl Into<Bytes>) -> Body {
        Body(Held::Full(Full::new(bytes.into())))
    }

    /// A body with nothing in it.
    pub fn empty() -> Body {
        Body(Held::Empty)
    }

    /// Whether the body is boxed (made by [`new`](Self::new): a stream, or
    /// a body of the caller's own), not held whole or empty.
    pub(crate) fn is_boxed(&self) -> bool {
        matches!(self.0, Held::Boxed(_))
    }
}

impl Default for Body {
    fn default() -> Body {
        Body::empty()
    }
}

impl From<BoxBody<Bytes, Infallible>> for Body {
    fn from(body: BoxBody<Bytes, Infallible>) -> Body {
        Body(Held::Boxed(body))
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Held::Full(_) => "Body::Full",
            Held::Empty => "Body::Empty",
            Held::Boxed(_) => "Body::Boxed",
        })
    }
}

impl HttpBody for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        // Every kind is `Unpin`: a `Full` and a `BoxBody` (a `Pin<Box>`).
        match &mut self.get_mut().0 {
            Held::Full(full) => Pin::new(full).poll_frame(cx),
            Held::Empty => Poll::Ready(None),
            Held::Boxed(boxed) => Pin::new(boxed).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Held::Full(full) => full.is_end_stream(),
            Held::Empty => true,
            Held::Boxed(boxed) => boxed.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Held::Full(full) => full.size_hint(),
            Held::Empty => SizeHint::with_exact(0),
            Held::Boxed(boxed) => boxed.size_hint(),
        }
    }
}

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
    Body::empty()
}

/// A body holding `bytes`.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Body::full(bytes)
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

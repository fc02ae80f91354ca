//! The SSE response: an outlet's frames as a `text/event-stream` body, with
//! the headers every stream carries.

use super::body::SseBody;
use super::outlet::Outlet;
use crate::http::access::validity::Term;
use crate::http::counters::HttpCounters;
use crate::http::wire::body::Body;
use http::header::{HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use http::Response;
use std::sync::Arc;
use std::time::Duration;

/// How an endpoint's SSE responses are made: the keep-alive period of their
/// bodies, and the gauges they count in.
#[derive(Clone)]
pub(crate) struct Responder {
    pub(crate) keep_alive: Option<Duration>,
    pub(crate) counters: Arc<HttpCounters>,
}

impl Responder {
    /// An SSE response carrying `outlet`'s frames.
    pub(crate) fn stream(&self, outlet: Arc<Outlet>) -> Response<Body> {
        self.stream_until(outlet, Term::default())
    }

    /// An SSE response carrying `outlet`'s frames until `term`, the term of
    /// the credential that opened it, runs out (a standalone `GET`
    /// stream's).
    pub(crate) fn stream_until(&self, outlet: Arc<Outlet>, term: Term) -> Response<Body> {
        let body = SseBody::new(outlet, self.keep_alive, term, Arc::clone(&self.counters));
        with_headers(Response::new(Body::new(body)))
    }

    /// An SSE response carrying any stream body (a listen stream's).
    pub(crate) fn listen<B>(&self, body: B) -> Response<Body>
    where
        B: hyper::body::Body<Data = bytes::Bytes, Error = std::convert::Infallible>
            + Send
            + Sync
            + 'static,
    {
        with_headers(Response::new(Body::new(body)))
    }

    /// An SSE response that ends at once (for a request with nothing more
    /// to say).
    pub(crate) fn ended(&self) -> Response<Body> {
        self.stream(Outlet::ended(Arc::clone(&self.counters)))
    }
}

/// The headers of every SSE response.
fn with_headers(mut response: Response<Body>) -> Response<Body> {
    {
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        // `no-transform`: no proxy may compress or rewrite the stream; and
        // `X-Accel-Buffering: no` keeps nginx from buffering it (both as the
        // official SDKs send them; the 2026-07-28 transport page asks for
        // the latter).
        headers.insert(
            CACHE_CONTROL,
            HeaderValue::from_static("no-cache, no-transform"),
        );
        headers.insert(
            HeaderName::from_static("x-accel-buffering"),
            HeaderValue::from_static("no"),
        );
    }
    response
}

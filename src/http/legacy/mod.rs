//! The session era: requests at a legacy protocol version (2024-11-05 to
//! 2025-11-25), which belong to a session (the MCP 2025-11-25 transport).
//!
//! * `POST` ([`post`]): one JSON-RPC message in the session its
//!   `MCP-Session-Id` names; an `initialize` without one opens a session
//!   ([`initialize`]).
//! * `GET` ([`get`]): the session's standalone SSE stream, or the resume
//!   of one of its streams.
//! * `DELETE` ([`delete`]): the client ends its session.
//!
//! Any other method gets 405 with `Allow`.

mod delete;
mod get;
mod initialize;
mod post;

use super::app::App;
use super::body::Body;
use super::reject::Reject;
use super::state::State;
use http::{Method, Response};
use hyper::body::Body as HttpBody;
use std::sync::Arc;

/// The methods a legacy request may use, for `Allow` and CORS.
pub(crate) fn allowed_methods<A: App>(state: &State<A>) -> &'static str {
    if state.config().standalone_stream {
        "GET, POST, DELETE"
    } else {
        "POST, DELETE"
    }
}

/// Serves a request at legacy version `version`, by its method.
pub(crate) async fn serve<A, B>(
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
    match *request.method() {
        Method::POST => post::serve(state, request, version).await,
        Method::GET if state.config().standalone_stream => get::serve(state, request),
        Method::DELETE => delete::serve(state, request),
        _ => state.refuse(Reject::MethodNotAllowed(allowed_methods(state)), None),
    }
}

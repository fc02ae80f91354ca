//! A legacy request routed by its HTTP method ([`serve`]), and the methods
//! allowed ([`allowed_methods`]).

use super::{delete, get, post};
use crate::http::app::App;
use crate::http::run::hub::Hub;
use crate::http::wire::body::{Body, SendBody};
use crate::http::wire::reject::Reject;
use crate::http::wire::request_headers::PostHeaders;
use http::{Method, Response};
use std::future::Future;
use std::sync::Arc;

/// The methods a legacy request may use, for `Allow` and CORS.
pub(crate) fn allowed_methods<A: App>(hub: &Hub<A>) -> &'static str {
    if hub.config.standalone_stream {
        "GET, POST, DELETE"
    } else {
        "POST, DELETE"
    }
}

/// Serves a request at legacy version `version`, by its method (`post`:
/// what the router found of a `POST`'s headers, `None` for any other
/// method).
#[allow(clippy::manual_async_fn)] // on purpose: see `modern::serve::serve`
pub(crate) fn serve<'a, A, B>(
    hub: &'a Arc<Hub<A>>,
    request: http::Request<B>,
    version: &'static str,
    post: Option<PostHeaders>,
) -> impl Future<Output = Response<Body>> + 'a
where
    A: App,
    B: SendBody,
{
    async move {
        if let Some(headers) = post {
            return post::serve(hub, request, version, headers).await;
        }
        match *request.method() {
            Method::GET if hub.config.standalone_stream => get::serve(hub, request, version),
            Method::DELETE => delete::serve(hub, request),
            _ => Reject::MethodNotAllowed(allowed_methods(hub)).respond(None, &hub.config),
        }
    }
}

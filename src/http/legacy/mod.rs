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
//! Any other method gets 405 with `Allow`. A message's work runs in its
//! session ([`scope`]), and its outcome is answered by [`respond`].

mod delete;
mod get;
mod initialize;
mod post;
mod respond;
mod scope;
mod subscriptions;

use crate::http::app::{App, Context, LegacyRequest};
use crate::http::run::dispatch::{self, Dispatched};
use crate::http::run::hub::Hub;
use crate::http::session::entry::SessionEntry;
use crate::http::tasks::TaskChoice;
use crate::http::wire::body::Body;
use crate::http::wire::body::SendBody;
use crate::http::wire::jsonrpc::Message;
use crate::http::wire::principal::Principal;
use crate::http::wire::protocol::Version;
use crate::http::wire::reject::Reject;
use crate::{InFlight, Session};
use http::request::Parts;
use http::{Method, Response};
use scope::InSession;
use std::sync::Arc;

/// The methods a legacy request may use, for `Allow` and CORS.
pub(crate) fn allowed_methods<A: App>(hub: &Hub<A>) -> &'static str {
    if hub.config.standalone_stream {
        "GET, POST, DELETE"
    } else {
        "POST, DELETE"
    }
}

/// Serves a request at legacy version `version`, by its method.
pub(crate) async fn serve<A, B>(
    hub: &Arc<Hub<A>>,
    request: http::Request<B>,
    version: &'static str,
) -> Response<Body>
where
    A: App,
    B: SendBody,
{
    match *request.method() {
        Method::POST => post::serve(hub, request, version).await,
        Method::GET if hub.config.standalone_stream => get::serve(hub, request),
        Method::DELETE => delete::serve(hub, request),
        _ => Reject::MethodNotAllowed(allowed_methods(hub)).respond(None, &hub.config),
    }
}

/// The live session a header names, if it belongs to the request's
/// principal; else [`Reject::SessionNotFound`], the same for every cause
/// (another principal's session is no more visible than an unknown one).
///
/// The binding holds whenever a principal is present, however it got into
/// the request (the authenticator, or a middleware in front): a session
/// opened by one principal, or by none, is found only by the same.
fn find<A: App>(
    hub: &Hub<A>,
    header: &[u8],
    principal: Option<&Principal>,
) -> Result<Session<SessionEntry<A::Session>>, Reject> {
    let id = hub
        .registry
        .parse_id(header)
        .map_err(|_| Reject::SessionNotFound)?;
    // Its public part on the request's span: never the secret.
    crate::http::observe::span::record_session(id);
    hub.registry
        .lookup_if(&id, |entry| entry.owner.as_ref() == principal)
        .map_err(|_| Reject::SessionNotFound)
}

/// Runs the application on one message of a session, counted in flight on
/// it (`request`) for as long as its work runs, and waits for its outcome.
async fn run<A: App>(
    hub: &Arc<Hub<A>>,
    request: InFlight<SessionEntry<A::Session>>,
    message: Message,
    version: &'static str,
    parts: Parts,
) -> Dispatched {
    // A request whose SSE reply is resumable gets its stream's number now,
    // so the handler can close the connection early
    // (`LegacyRequest::close_sse_stream`).
    let logged = (matches!(message, Message::Request(_))
        && hub.config.event_log_events > 0
        && Version::Legacy(version).resumes())
    .then(|| request.streams.next_stream());
    let legacy = LegacyRequest {
        session: Session::clone(&request),
        version,
        stream: logged,
    };
    let ctx = Context::for_legacy(parts, request.running.request(), legacy);
    let scope = InSession {
        hub: Arc::clone(hub),
        request,
        logged,
    };
    // Legacy clients know no tasks extension: a task's work answers the
    // call.
    let choice = TaskChoice::Inline {
        refuse_required: false,
    };
    dispatch::run(&hub.runner, scope, ctx, message, choice)
        .await
        .outcome()
        .await
}

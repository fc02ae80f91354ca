//! `DELETE`: the client ends its session, through the one terminate call.

use crate::http::app::App;
use crate::http::run::hub::Hub;
use crate::http::wire::body::{self, Body};
use crate::http::wire::headers;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use crate::Reason;
use http::{Response, StatusCode};

/// Ends the session the request names: 200, or 404 for a session that is
/// not there (or not the requester's).
///
/// The session is looked up first, as for any request, so a `DELETE` from
/// another principal than the session's owner finds nothing and ends
/// nothing; then exactly the session found is ended
/// ([`Registry::terminate_session`](crate::Registry::terminate_session)).
pub(super) fn serve<A: App, B>(hub: &Hub<A>, request: http::Request<B>) -> Response<Body> {
    let Some(header) = request.headers().get(headers::name::SESSION_ID) else {
        return Reject::MissingSessionId.respond(None, &hub.config);
    };
    let principal = request.extensions().get::<Principal>();
    let session = match super::find(hub, header.as_bytes(), principal) {
        Ok(session) => session,
        Err(reject) => return reject.respond(None, &hub.config),
    };
    if hub
        .registry
        .terminate_session(&session, Reason::Deleted)
        .is_won()
    {
        body::status(StatusCode::OK)
    } else {
        Reject::SessionNotFound.respond(None, &hub.config)
    }
}

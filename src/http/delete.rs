//! `DELETE`: the client ends its session.

use super::app::App;
use super::auth::Principal;
use super::body::{self, Body};
use super::responses::{missing_id, not_found};
use super::rules;
use super::SessionManager;
use crate::Reason;
use http::{Response, StatusCode};

impl<A: App> SessionManager<A> {
    /// `DELETE`: ends the session, through the one terminate call.
    ///
    /// The session is looked up first, as for any request, so a `DELETE`
    /// from another principal than the session's owner finds nothing (404)
    /// and ends nothing; then exactly the session found is ended
    /// ([`Registry::terminate_session`](crate::Registry::terminate_session)).
    pub(super) fn delete<B>(&self, request: http::Request<B>) -> Response<Body> {
        let Some(header) = request.headers().get(rules::SESSION_HEADER) else {
            return missing_id();
        };
        let principal = request.extensions().get::<Principal>();
        let session = match self.find(header.as_bytes(), principal) {
            Ok(session) => session,
            Err(response) => return response,
        };
        let registry = &self.inner.registry;
        if registry
            .terminate_session(&session, Reason::Deleted)
            .is_won()
        {
            body::status(StatusCode::OK)
        } else {
            not_found()
        }
    }
}

//! `DELETE`: the client ends its session.

use super::app::App;
use super::body::{self, Body};
use super::responses::{missing_id, not_found};
use super::rules;
use super::SessionManager;
use crate::Reason;
use http::{Response, StatusCode};

impl<A: App> SessionManager<A> {
    /// `DELETE`: ends the session, through the one terminate call.
    pub(super) fn delete<B>(&self, request: http::Request<B>) -> Response<Body> {
        let Some(header) = request.headers().get(rules::SESSION_HEADER) else {
            return missing_id();
        };
        let registry = &self.inner.registry;
        let Ok(id) = registry.parse_id(header.as_bytes()) else {
            return not_found();
        };
        tracing::Span::current().record("session", tracing::field::display(id));
        if registry.terminate(&id, Reason::Deleted).is_won() {
            body::status(StatusCode::OK)
        } else {
            not_found()
        }
    }
}

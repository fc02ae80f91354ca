//! `GET`: the session's standalone server-to-client SSE stream.

use super::app::App;
use super::auth::Principal;
use super::body::{self, Body};
use super::jsonrpc;
use super::responses::{missing_id, not_found};
use super::rules;
use super::sse;
use super::SessionManager;
use http::{Response, StatusCode};

impl<A: App> SessionManager<A> {
    /// `GET`: the session's standalone server-to-client stream.
    ///
    /// An open stream counts as a request in flight, so a client that keeps
    /// it open is never reaped as idle: its connection is the evidence that
    /// it is there, and keep-alive comments find out when it is not. When
    /// the stream drops, the guard goes with it and the idle clock starts
    /// from that moment; the session itself stays.
    pub(super) async fn get<B>(&self, request: http::Request<B>) -> Response<Body> {
        let headers = request.headers();
        if !rules::accepts(headers, "text/event-stream") {
            return body::refuse(
                StatusCode::NOT_ACCEPTABLE,
                jsonrpc::SERVER_ERROR,
                "Accept must list text/event-stream",
            );
        }
        let Some(header) = headers.get(rules::SESSION_HEADER) else {
            return missing_id();
        };
        let principal = request.extensions().get::<Principal>();
        let session = match self.find(header.as_bytes(), principal) {
            Ok(session) => session,
            Err(response) => return response,
        };
        let Some(in_flight) = session.begin() else {
            return not_found();
        };
        let last_event_id = headers
            .get(rules::LAST_EVENT_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let rx = match session.streams.open_standalone(last_event_id) {
            Ok(rx) => rx,
            Err(sse::Conflict) => {
                return body::refuse(
                    StatusCode::CONFLICT,
                    jsonrpc::SERVER_ERROR,
                    "this session already has a standalone SSE stream",
                )
            }
        };
        // The body holds the guard: the session is busy while the client
        // keeps the stream, and its idle clock starts when the body drops
        // (the client went away, or the session ended and the stream with it).
        self.sse(rx, Some(Box::new(in_flight)))
    }
}

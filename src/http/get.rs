//! `GET`: the session's standalone server-to-client SSE stream.

use super::app::App;
use super::auth::Principal;
use super::body::{self, Body};
use super::jsonrpc;
use super::responses::{missing_id, not_found};
use super::resume::{self, EventId, OpenError};
use super::rules;
use super::rules::Version;
use super::SessionManager;
use http::{Response, StatusCode};

/// 400 for a `Last-Event-ID` that names no stream (or event) of the session.
fn unknown_stream() -> Response<Body> {
    body::refuse(
        StatusCode::BAD_REQUEST,
        jsonrpc::SERVER_ERROR,
        "Last-Event-ID names no stream of this session",
    )
}

impl<A: App> SessionManager<A> {
    /// `GET`: the session's standalone server-to-client stream, or the
    /// resume of the stream a `Last-Event-ID` names (see `resume.rs`): 409
    /// while that stream is connected, 400 for an id of no stream of this
    /// session.
    ///
    /// An open stream counts as a request in flight, so a client that keeps
    /// it open is never reaped as idle: its connection is the evidence that
    /// it is there, and keep-alive comments find out when it is not. When
    /// the stream drops (or stalls: a client that reads nothing for the
    /// stall timeout while a message waits), the guard goes with it and the
    /// idle clock starts from that moment; the session itself stays.
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
        let logging = self.inner.config.event_log > 0;
        let last_event_id = match headers.get(rules::LAST_EVENT_ID) {
            None => None,
            Some(value) => match value.to_str().ok().and_then(EventId::parse) {
                Some(id) => Some(id),
                // Without a log the header is ignored (nothing to replay).
                None if !logging => None,
                None => return unknown_stream(),
            },
        };
        // A client that can resume gets a priming event and `retry`.
        let version = rules::protocol_version(headers).unwrap_or(Version::Stateless);
        let priming = (logging && resume::resumes(version)).then_some(self.inner.config.sse_retry);
        let outlet = match session.streams.open_get(last_event_id, priming) {
            Ok(outlet) => outlet,
            Err(OpenError::Conflict) => {
                return body::refuse(
                    StatusCode::CONFLICT,
                    jsonrpc::SERVER_ERROR,
                    "this stream is already connected",
                )
            }
            Err(OpenError::UnknownStream) => return unknown_stream(),
        };
        // The stream holds the guard: the session is busy while the client
        // keeps the stream, and its idle clock starts when the stream ends
        // (the client went away, the stream stalled, or the session ended
        // and the stream with it).
        outlet.hold(Box::new(in_flight));
        if self.inner.config.limits.stall_timeout.is_some() {
            // Notifications are pushed from anywhere, with nobody waiting on
            // the stream: this watch finds a client that stopped reading.
            let watched = std::sync::Arc::clone(&outlet);
            tokio::spawn(async move { watched.watch().await });
        }
        self.sse(outlet)
    }
}

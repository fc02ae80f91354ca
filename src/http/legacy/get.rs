//! `GET`: the session's standalone server-to-client SSE stream, or the
//! resume of one of its streams (`sse/resume.rs`).

use crate::http::access::validity::{Term, Validity};
use crate::http::app::App;
use crate::http::run::admission;
use crate::http::run::hub::Hub;
use crate::http::sse::resume::{EventId, OpenError};
use crate::http::wire::body::Body;
use crate::http::wire::header_rules;
use crate::http::wire::headers;
use crate::http::wire::principal::Principal;
use crate::http::wire::protocol::Version;
use crate::http::wire::reject::Reject;
use http::Response;

/// The session's standalone server-to-client stream, or the
/// resume of the stream a `Last-Event-ID` names (see `resume.rs`): 409
/// while that stream is connected, 400 for an id of no stream of this
/// session.
///
/// An open stream counts as a request in flight, so a client that keeps
/// it open is never reaped as idle: its connection is the evidence that
/// it is there, and keep-alive comments find out when it is not. When
/// the stream drops (or stalls: a client that reads nothing for the
/// stall timeout while a message waits), the guard goes with it and the
/// idle clock starts from that moment; the session itself stays. So when
/// the credential it was opened with expires or is withdrawn: the stream
/// ends, counted by reason, and the session stays.
pub(super) fn serve<A: App, B>(
    hub: &Hub<A>,
    request: http::Request<B>,
    version: &'static str,
) -> Response<Body> {
    match stream(hub, request, version) {
        Ok(response) => response,
        Err(reject) => reject.respond(None, &hub.config),
    }
}

/// The stream, at the legacy `version` the router read.
fn stream<A: App, B>(
    hub: &Hub<A>,
    request: http::Request<B>,
    version: &'static str,
) -> Result<Response<Body>, Reject> {
    let headers = request.headers();
    if !header_rules::accepts(headers, "text/event-stream") {
        return Err(Reject::NotAcceptable("Accept must list text/event-stream"));
    }
    let header = headers
        .get(headers::name::SESSION_ID)
        .ok_or(Reject::MissingSessionId)?;
    let principal = request.extensions().get::<Principal>();
    let session = super::find(hub, header.as_bytes(), principal)?;
    // An open stream is a request in flight: under the session's cap too.
    let in_flight = admission::begin(&session, hub.config.max_requests_per_session)?;
    let logging = hub.config.event_log_events > 0;
    let last_event_id = match headers.get(headers::name::LAST_EVENT_ID) {
        None => None,
        Some(value) => match value.to_str().ok().and_then(EventId::parse) {
            Some(id) => Some(id),
            // Without a log the header is ignored (nothing to replay).
            None if !logging => None,
            None => return Err(Reject::UnknownStream),
        },
    };
    // A client that can resume gets a priming event and `retry`.
    let priming = (logging && Version::Legacy(version).resumes()).then_some(hub.config.sse_retry);
    let outlet = match session.streams.open_get(last_event_id, priming) {
        Ok(outlet) => outlet,
        Err(OpenError::Conflict) => return Err(Reject::StreamConnected),
        Err(OpenError::UnknownStream) => return Err(Reject::UnknownStream),
    };
    // The stream holds the guard: the session is busy while the client
    // keeps the stream, and its idle clock starts when the stream ends
    // (the client went away, the stream stalled, or the session ended
    // and the stream with it).
    // While it is open, the stream hears list changes (see `Publisher`).
    let joined = super::subscriptions::ListChanges::join(&hub.listeners.topics, session.id());
    outlet.hold(Box::new((in_flight, joined)));
    if hub.config.stall_timeout.is_some() {
        // Notifications are pushed from anywhere, with nobody waiting on
        // the stream: this watch finds a client that stopped reading.
        let watched = std::sync::Arc::clone(&outlet);
        tokio::spawn(async move { watched.watch().await });
    }
    // The stream lasts as long as the credential it is opened with; its
    // end ends the stream, not the session (which belongs to the
    // principal: its next token may open another).
    let term = Term::of(request.extensions().get::<Validity>());
    Ok(hub.sse.stream_until(outlet, term))
}

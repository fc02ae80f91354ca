//! What a handler knows of a request in a session (protocol versions up to
//! 2025-11-25): [`LegacyRequest`], its session and what the session era
//! lets a server do there (requests to the client, notifications on the
//! standalone stream, SSE polling).

use crate::http::observe;
use crate::http::session::asks::ClientRequest;
use crate::http::session::entry::SessionEntry;
use crate::http::wire::jsonrpc::RpcError;
use crate::{Session, SessionId};
use serde_json::Value;
use std::fmt;

/// A request in a session, as its handler sees it (from
/// [`Context::era`](super::Context::era) or
/// [`Context::legacy`](super::Context::legacy)).
pub struct LegacyRequest<S: Send + Sync + 'static> {
    pub(crate) session: Session<SessionEntry<S>>,
    pub(crate) version: &'static str,
    /// The number of this request's SSE reply stream, when it would be
    /// resumable.
    pub(crate) stream: Option<u64>,
}

impl<S: Send + Sync + 'static> LegacyRequest<S> {
    /// The session's id.
    pub fn id(&self) -> SessionId {
        self.session.id()
    }

    /// The application's state of the session (what
    /// [`App::open`](crate::http::App::open) made).
    pub fn state(&self) -> &S {
        &self.session.state
    }

    /// The protocol version the request was sent at (for `initialize`, the
    /// one negotiated for the session).
    pub fn version(&self) -> &'static str {
        self.version
    }

    /// Whether the session has ended meanwhile (deleted, shut down, ...).
    /// The request is then cancelled too (see
    /// [`Context::cancelled`](super::Context::cancelled)).
    pub fn is_terminated(&self) -> bool {
        self.session.is_terminated()
    }

    /// Closes the connection carrying this request's SSE reply without
    /// ending the stream (2025-11-25 SSE polling): the handler goes on, its
    /// messages are logged, and the client resumes with `GET` and
    /// `Last-Event-ID` after the `retry` delay. Returns whether it applies:
    /// only with the event log on
    /// ([`Builder::event_log_events`](crate::http::Builder::event_log_events)),
    /// for a client at 2025-11-25 or later (older ones get no priming event
    /// to resume from). Called before the reply stream starts, the client
    /// gets just the priming event.
    pub fn close_sse_stream(&self) -> bool {
        match self.stream {
            Some(number) => {
                self.session.streams.lock().detach(number);
                true
            }
            None => false,
        }
    }

    /// A request to the client (sampling, elicitation, roots), with an id
    /// of the session's own: put its [`message`](ClientRequest::message) on
    /// this request's SSE reply ([`Reply::Stream`](crate::http::Reply::Stream))
    /// and await its [`answer`](ClientRequest::answer), which the client
    /// `POST`s and the layer hands back here. Refused past 64 unanswered
    /// requests in the session, and once it has ended. (At 2026-07-28 a
    /// server asks with
    /// [`ModernRequest::input_required`](super::ModernRequest::input_required)
    /// instead.)
    pub fn ask(&self, method: &str, params: Value) -> Result<ClientRequest, RpcError> {
        self.session.asks.ask(method, params)
    }

    /// Sends a server-to-client message on the session's standalone `GET`
    /// stream, without waiting. Returns whether an open stream took it:
    /// `false` when none is open, or when its queue is full (bounded by
    /// [`Builder::stream_queue`](crate::http::Builder::stream_queue); the
    /// message is then dropped and counted in
    /// `sessionreg_http_notifications_dropped_total`). It is also kept in
    /// the event log, when enabled, for a client that resumes.
    pub fn notify(&self, message: &Value) -> bool {
        // With feature `otel`, it carries the request's span as its parent.
        self.session.streams.push(&observe::stamped(message))
    }
}

impl<S: Send + Sync + fmt::Debug + 'static> fmt::Debug for LegacyRequest<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegacyRequest")
            .field("id", &self.id())
            .field("version", &self.version)
            .field("state", self.state())
            .finish()
    }
}

//! What a handler knows about the request it serves: [`Context`].

use super::access::auth::Principal;
use super::access::scopes::Scopes;
use super::asks::ClientRequest;
use super::jsonrpc::{self, RpcError};
use super::modern::request::Modern;
use super::protocol::Version;
use super::session::SessionEntry;
use crate::{Session, SessionId};
use http::request::Parts;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use tokio_util::sync::CancellationToken;

/// What a handler knows about the request it serves.
pub struct Context<S: Send + Sync + 'static> {
    pub(crate) session: Option<Session<SessionEntry<S>>>,
    pub(crate) version: Version,
    pub(crate) request: Parts,
    /// The number of this request's SSE reply stream, when it would be
    /// resumable.
    pub(crate) stream: Option<u64>,
    /// Cancelled when this request's work must stop (see `work.rs`).
    pub(crate) cancel: CancellationToken,
    /// What a 2026-07-28 request carries; `None` in a session.
    pub(crate) modern: Option<Box<Modern>>,
}

/// Which era a request is in, and what it brings there.
#[derive(Debug)]
pub enum Era<'a, S> {
    /// A legacy request, in its session (the application's state of it).
    Legacy(&'a S),
    /// A 2026-07-28 request: no session; its capabilities and the rest.
    Modern(&'a Modern),
}

impl<S: Send + Sync + 'static> Context<S> {
    /// The session's id; `None` for a modern (2026-07-28) request.
    pub fn id(&self) -> Option<SessionId> {
        self.session.as_ref().map(Session::id)
    }

    /// The application's state of this session; `None` for a modern
    /// request.
    pub fn state(&self) -> Option<&S> {
        self.session.as_ref().map(|s| &s.state)
    }

    /// The HTTP request's head: headers and extensions (see
    /// [`App::open`](super::App::open)).
    pub fn request(&self) -> &Parts {
        &self.request
    }

    /// The principal of the request, as the
    /// [authenticator](super::Builder::authenticator) (or a middleware in
    /// front) put it into its extensions: the session's owner. `None`
    /// without one.
    pub fn principal(&self) -> Option<&Principal> {
        Principal::of(&self.request)
    }

    /// The scopes the request's access token grants, as the OAuth
    /// resource server (feature `oauth`), a middleware in front or an
    /// authenticator put them into its extensions; `None` when nothing did
    /// (static bearer tokens grant no scopes).
    pub fn scopes(&self) -> Option<&Scopes> {
        Scopes::of(&self.request)
    }

    /// The protocol version the request was sent at.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Which era the request is in: its session's state, or what the
    /// modern request carries.
    pub fn era(&self) -> Era<'_, S> {
        match (&self.session, &self.modern) {
            (Some(session), _) => Era::Legacy(&session.state),
            (None, Some(modern)) => Era::Modern(modern),
            (None, None) => unreachable!("a request is in a session or modern"),
        }
    }

    /// What a 2026-07-28 request carries (its client capabilities, log
    /// level, input responses...); `None` for a request in a session.
    pub fn modern(&self) -> Option<&Modern> {
        self.modern.as_deref()
    }

    /// Whether the session has ended meanwhile (deleted, shut down, ...).
    /// The request is then cancelled too (see
    /// [`cancelled`](Context::cancelled)).
    pub fn is_terminated(&self) -> bool {
        self.session.as_ref().is_some_and(Session::is_terminated)
    }

    /// Resolves when this request's work must stop: its session ended (by
    /// any path: `DELETE`, idle timeout, a failed handler, shutdown), the
    /// client cancelled it (`notifications/cancelled`), it ran past the
    /// [handler timeout](super::Builder::handler_timeout), or, at
    /// 2026-07-28, the client went away. (A client that merely disconnects
    /// from a request in a session does not cancel it: at 2025-11-25
    /// disconnection is not cancellation.)
    ///
    /// The handler's own future is dropped then, wherever it waits: a
    /// handler needs this only for work it handed elsewhere, such as a
    /// spawned task (see [`cancellation`](Context::cancellation)).
    pub fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        self.cancel.cancelled()
    }

    /// Whether this request has been cancelled (see
    /// [`cancelled`](Context::cancelled)).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// This request's cancellation token, to hand to work the handler
    /// spawns: it is cancelled when [`cancelled`](Context::cancelled)
    /// resolves.
    pub fn cancellation(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Closes the connection carrying this request's SSE reply without
    /// ending the stream (2025-11-25 SSE polling): the handler goes on, its
    /// messages are logged, and the client resumes with `GET` and
    /// `Last-Event-ID` after the `retry` delay. Returns whether it applies:
    /// only for a request in a session, with the event log on
    /// ([`Builder::event_log_events`](super::Builder::event_log_events)), from a client at
    /// 2025-11-25 or later (older ones get no priming event to resume
    /// from). Called before the reply stream starts, the client gets just
    /// the priming event.
    pub fn close_sse_stream(&self) -> bool {
        match (&self.session, self.stream) {
            (Some(session), Some(number)) => {
                session.streams.lock().detach(number);
                true
            }
            _ => false,
        }
    }

    /// A request to the client (sampling, elicitation, roots: the legacy
    /// era's server-to-client requests), with an id of the session's own:
    /// put its [`message`](ClientRequest::message) on this request's SSE
    /// reply ([`Reply::Stream`](super::Reply::Stream)) and await its
    /// [`answer`](ClientRequest::answer), which the client `POST`s and the
    /// layer hands back here. Refused at 2026-07-28, which has no
    /// server-to-client requests (answer
    /// [`input_required`](super::modern::Modern::input_required) instead),
    /// and past 64 unanswered requests in the session.
    pub fn ask(&self, method: &str, params: Value) -> Result<ClientRequest, RpcError> {
        match &self.session {
            Some(session) => session.asks.ask(method, params),
            None => Err(RpcError::new(
                jsonrpc::INTERNAL_ERROR,
                "no requests to the client at 2026-07-28: answer input_required",
            )),
        }
    }

    /// Sends a server-to-client message on the session's standalone `GET`
    /// stream, without waiting. Returns whether an open stream took it:
    /// `false` when none is open, or when its queue is full (bounded by
    /// [`Builder::stream_queue`](super::Builder::stream_queue); the message
    /// is then dropped and counted in
    /// `sessionreg_http_notifications_dropped_total`). It is also kept in
    /// the event log, when enabled, for a client that resumes.
    pub fn notify(&self, message: &Value) -> bool {
        self.session
            .as_ref()
            .is_some_and(|s| s.streams.push(message))
    }
}

impl<S: Send + Sync + 'static> fmt::Debug for Context<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.id())
            .field("version", &self.version)
            .field("principal", &self.principal())
            .finish()
    }
}

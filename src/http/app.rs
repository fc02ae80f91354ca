//! The trait an application implements to serve MCP over the session
//! manager, and what its handlers receive and return.

use super::auth::Principal;
use super::entry::Entry;
use super::jsonrpc::{Message, Request, RpcError};
use super::rules::Version;
use crate::{Reason, Session, SessionId};
use futures_util::stream::BoxStream;
use http::request::Parts;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use tokio_util::sync::CancellationToken;

/// An MCP application served by a [`SessionManager`](super::SessionManager).
///
/// The manager owns everything about sessions (ids, lookups, status codes,
/// streams, expiry, shutdown); the application only sees messages.
pub trait App: Send + Sync + 'static {
    /// Per-session state, created by [`open`](App::open).
    type Session: Send + Sync + 'static;

    /// Opens a session for a valid `initialize` request, or refuses it
    /// (answered 400 with the error; nothing is registered). Called before
    /// the session is inserted: a refusal creates nothing. The request is
    /// then handed to [`handle`](App::handle) like any other, in the new
    /// session.
    ///
    /// `request` is the HTTP request's head: its headers, and its
    /// extensions, where tower/axum middleware put what they found (an
    /// authenticated user, the peer address) and where the manager's
    /// [authenticator](super::Builder::authenticator) puts the
    /// [`Principal`] (read it with [`Principal::of`]). The session is bound
    /// to that principal.
    fn open(&self, initialize: &Request, request: &Parts) -> Result<Self::Session, RpcError>;

    /// Handles one message from the client.
    ///
    /// Its params are the client's JSON text, not yet parsed: read them
    /// with [`Request::params_as`] (a type of the application's) or
    /// [`Request::params_value`] (a `Value`), so a message costs about its
    /// body's size until the application asks for more.
    ///
    /// For a request, reply with [`Reply::Result`], [`Reply::Error`] or
    /// [`Reply::Stream`]; for a notification or a response the reply is
    /// ignored (the client gets `202 Accepted`). An `Err` (or a panic) ends
    /// the session with [`Reason::Failed`] and answers 500; other sessions
    /// are not affected. If the reply to `initialize` is an error, the new
    /// session ends with [`Reason::Rejected`] and no id is sent.
    ///
    /// The session counts as busy (never idle) while this runs. The work
    /// (this future, then a streamed reply) ends with its session, by
    /// whichever path the session ends, and with
    /// [`Builder::handler_timeout`](super::Builder::handler_timeout): the
    /// future is then dropped where it waits. A handler that hands work
    /// elsewhere passes it [`Context::cancellation`].
    fn handle(
        &self,
        ctx: Context<Self::Session>,
        message: Message,
    ) -> impl Future<Output = Result<Reply, HandlerError>> + Send;

    /// The session ended, for `reason`. Called exactly once per session
    /// that was inserted, synchronously, by whichever end path won the
    /// registry's terminate. Keep it short; it must not block.
    fn closed(&self, id: &SessionId, session: &Self::Session, reason: Reason) {
        let _ = (id, session, reason);
    }
}

/// What a handler answers a request with.
pub enum Reply {
    /// `{"result": ...}` as `application/json`.
    Result(Value),
    /// `{"error": ...}` as `application/json` (HTTP 200: a JSON-RPC error,
    /// not a transport one).
    Error(RpcError),
    /// An SSE stream of JSON-RPC messages (notifications, server requests),
    /// the last of which should be the response to the request. Each gets
    /// an event id unique in the session. It ends early if the session ends.
    Stream(BoxStream<'static, Value>),
    /// Nothing to say: the answer for notifications and responses.
    Accepted,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Result(v) => f.debug_tuple("Result").field(v).finish(),
            Reply::Error(e) => f.debug_tuple("Error").field(e).finish(),
            Reply::Stream(_) => f.write_str("Stream(..)"),
            Reply::Accepted => f.write_str("Accepted"),
        }
    }
}

/// A handler failure: the session ends with [`Reason::Failed`].
#[derive(Debug)]
pub struct HandlerError(Box<dyn std::error::Error + Send + Sync>);

impl HandlerError {
    /// A failure with a message.
    pub fn msg(message: impl Into<String>) -> HandlerError {
        HandlerError(message.into().into())
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(error: E) -> HandlerError {
        HandlerError(Box::new(error))
    }
}

/// What a handler knows about the request it serves.
pub struct Context<S: Send + Sync + 'static> {
    pub(crate) session: Option<Session<Entry<S>>>,
    pub(crate) version: Version,
    pub(crate) request: Parts,
    /// The number of this request's SSE reply stream, when it would be
    /// resumable.
    pub(crate) stream: Option<u64>,
    /// Cancelled when this request's work must stop (see `work.rs`).
    pub(crate) cancel: CancellationToken,
}

impl<S: Send + Sync + 'static> Context<S> {
    /// The session's id; `None` for a stateless (2026-07-28) request.
    pub fn id(&self) -> Option<SessionId> {
        self.session.as_ref().map(Session::id)
    }

    /// The application's state of this session; `None` for a stateless
    /// request.
    pub fn state(&self) -> Option<&S> {
        self.session.as_ref().map(|s| &s.state)
    }

    /// The HTTP request's head: headers and extensions (see
    /// [`App::open`]).
    pub fn request(&self) -> &Parts {
        &self.request
    }

    /// The principal the [authenticator](super::Builder::authenticator)
    /// found for the request (the session's owner); `None` without one.
    pub fn principal(&self) -> Option<&Principal> {
        Principal::of(&self.request)
    }

    /// The protocol version the request was sent at.
    pub fn version(&self) -> Version {
        self.version
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
    /// ([`Builder::event_log`](super::Builder::event_log)), from a client at
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

//! The [`App`] trait: what an application implements to be served.

use super::discovery::Discovery;
use super::{Context, HandlerError, Reply};
use crate::http::listen::ListenFilter;
use crate::http::wire::jsonrpc::{Message, Request, RpcError};
use crate::http::wire::mirror::MirroredParams;
use crate::{Reason, SessionId};
use http::request::Parts;
use std::future::Future;
use std::sync::Arc;

/// An MCP application served by a [`SessionManager`](crate::http::SessionManager).
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
    /// [authenticator](crate::http::Builder::authenticator) puts the
    /// [`Principal`](crate::http::Principal) (read it with [`Principal::of`](crate::http::Principal::of)). The session is bound
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
    /// [`Reply::Stream`] (a result serialized by the handler is a
    /// [`Reply::Serialized`], a `tools/call`'s one text block a
    /// [`Reply::tool_text`]: neither builds a `Value` tree); for a notification or a response the reply is
    /// ignored (the client gets `202 Accepted`). An `Err` (or a panic) ends
    /// the session with [`Reason::Failed`] and answers 500; other sessions
    /// are not affected. If the reply to `initialize` is an error, the new
    /// session ends with [`Reason::Rejected`] and no id is sent.
    ///
    /// The session counts as busy (never idle) while this runs. The work
    /// (this future, then a streamed reply) ends with its session, by
    /// whichever path the session ends, and with
    /// [`Builder::handler_timeout`](crate::http::Builder::handler_timeout): the
    /// future is then dropped where it waits. A handler that hands work
    /// elsewhere passes it [`Context::cancellation`].
    fn handle(
        &self,
        ctx: Context<Self::Session>,
        message: Message,
    ) -> impl Future<Output = Result<Reply, HandlerError>> + Send;

    /// What the application says of itself to 2026-07-28 clients: the
    /// layer answers `server/discover` from it, and names the server in
    /// every modern result's `_meta` (default: no capabilities, no name).
    /// Asked once, when the manager is built.
    fn discovery(&self) -> Discovery {
        Discovery::default()
    }

    /// Which part of a 2026-07-28 `subscriptions/listen` the application
    /// serves, asked before the stream opens: `filter` is what the layer
    /// honours of the client's (every kind of list asked for, the resource
    /// URIs within the listen bounds), `request` the listen request's
    /// parts (its [`Principal`](crate::http::Principal), say). Narrow it (a
    /// kind of change the application never publishes, a URI the
    /// principal may not read: the acknowledgement then lists only what
    /// is left, as the spec's "the subset the server agreed to honor"), or
    /// return `None` to serve no listening (`-32601`, 404). Default: all
    /// of it.
    fn listen_filter(&self, filter: ListenFilter, request: &Parts) -> Option<ListenFilter> {
        let _ = request;
        Some(filter)
    }

    /// The mirrored parameters (`x-mcp-header`) of tool `tool`, if it has
    /// any: the layer then checks a 2026-07-28 `tools/call`'s
    /// `Mcp-Param-*` headers against its arguments before the handler runs
    /// (build them once with
    /// [`MirroredParams::from_input_schema`](crate::http::modern::MirroredParams::from_input_schema); default: none).
    fn mirrored_params(&self, tool: &str) -> Option<Arc<MirroredParams>> {
        let _ = tool;
        None
    }

    /// The session ended, for `reason`. Called exactly once per session
    /// that was inserted, synchronously, by whichever end path won the
    /// registry's terminate. Keep it short; it must not block.
    fn closed(&self, id: &SessionId, session: &Self::Session, reason: Reason) {
        let _ = (id, session, reason);
    }

    /// Called on every sweep of the layer's reaper (at least once a
    /// second while it runs): reap the application's own stores here,
    /// such as its [`Handles`](crate::handles::Handles), so that they
    /// expire without a timer of their own. Keep it short; it must not
    /// block.
    fn reap(&self) {}

    /// The application's own metrics, in Prometheus text, appended to
    /// [`SessionManager::metrics`](crate::http::SessionManager::metrics) (for
    /// instance a handle store's: [`crate::metrics::write_handles`]).
    fn metrics(&self, out: &mut String) {
        let _ = out;
    }
}

//! The streamable-HTTP session layer (feature `http`): MCP sessions over
//! hyper 1 and tokio, every one of them kept in a [`Registry`](crate::Registry).
//!
//! A [`SessionManager`] serves one MCP endpoint. The application implements
//! [`App`]: it opens a session from an `initialize` request, handles one
//! JSON-RPC message at a time, and hears, exactly once, that a session
//! ended and why. The manager does the rest, following the MCP 2025-11-25
//! transport:
//!
//! * `POST initialize` without a session id is validated completely
//!   (method, `Content-Type`, `Accept`, body size, JSON, JSON-RPC shape,
//!   protocol version, origin) before a session is inserted; a rejected
//!   request creates nothing and sees no id. The response carries
//!   `MCP-Session-Id`.
//! * Any other request without an id: 400. An id that is malformed,
//!   unknown, stale, forged, expired or terminated, or that belongs to
//!   another principal: 404 with a JSON-RPC error. An unsupported
//!   `MCP-Protocol-Version`: 400 with an `UnsupportedProtocolVersionError`
//!   listing the supported ones (any supported one is accepted; absent
//!   means 2025-03-26). Other methods: 405 with `Allow`. Oversized bodies:
//!   413. Wrong `Content-Type`: 415. `Accept` without both
//!   `application/json` and `text/event-stream`: 406. Bad JSON: 400 with a
//!   `-32700` parse error. Batches: 400, whatever the version (see below).
//! * Authentication ([`Builder::authenticator`], [`auth`](Authenticator)):
//!   401 with `WWW-Authenticate` or 403 for a refused request; each session
//!   is bound to the [`Principal`] that opened it. The application sees
//!   the request's `http::request::Parts` in [`App::open`] and
//!   [`Context::request`].
//! * Notifications and responses: 202. Requests: JSON, or an SSE stream
//!   when the handler returns [`Reply::Stream`].
//! * `DELETE` with a live id: `terminate(Deleted)`, 200; again: 404.
//! * `GET`: the session's one standalone SSE stream (409 for a second
//!   one), with keep-alive comments; with `Last-Event-ID` and the event log
//!   on ([`Builder::event_log`]), the resume of the one stream (standalone
//!   or a `POST` reply) the id names: 409 while it is connected, 400 for an
//!   id of no stream of the session. Event ids are `STREAM-SEQ`; clients at
//!   2025-11-25 get a priming event and `retry` first. An open stream counts
//!   as a request in flight; when it drops, the session stays and its idle
//!   clock starts. SSE responses carry `Cache-Control: no-cache,
//!   no-transform` and `X-Accel-Buffering: no`.
//! * Idle sessions are ended by the [reaper](SessionManager::start_reaper)
//!   (started by the first request, wherever the manager is mounted; or by
//!   the lookup that finds them expired); a request in flight keeps its
//!   session from being idle, and nothing is ever cancelled.
//! * A handler error or panic ends its session with `Failed` (500 to that
//!   request); every other session is served on.
//! * At capacity: 503 with `Retry-After`.
//! * [`serve`] shuts down gracefully: stop accepting, end every session
//!   with `Shutdown`, wait for requests in flight up to a deadline.
//! * [Draining](SessionManager::drain) for a rolling restart: new
//!   `initialize` requests get 503 with `Retry-After` and create nothing,
//!   live sessions are served to their end (or a deadline);
//!   [`readiness`](SessionManager::readiness) (503 while draining) and
//!   [`liveness`](SessionManager::liveness) (200 while serving) are the
//!   two answers a load balancer's health checks read.
//! * `Origin`/`Host` allow-lists answer 403 to foreign ones, and can be
//!   swapped at run time ([`SessionManager::set_allowed_origins`]); unless
//!   the manager is told it is served on a public address, only loopback
//!   hosts and origins are let in by default (DNS-rebinding protection,
//!   [`RebindingProtection`]), wherever it is mounted. Origins allowed by
//!   name get CORS headers and preflights.
//! * Requests at protocol version 2026-07-28 (no sessions), when switched
//!   on ([`Builder::stateless`]), bypass the registry and follow that
//!   revision's rules ([`stateless`]): `Mcp-Method`/`Mcp-Name` checked
//!   against the body, a disconnect cancels the handler; no id is minted or
//!   echoed; `GET` and `DELETE` answer 405.
//!
//! Each request runs in a `tracing` span `mcp` with the session id; the
//! close reason is logged once, by the terminate winner.
//!
//! ### How each end path reaches the registry
//!
//! | path | who | registry call |
//! |---|---|---|
//! | `DELETE` | request handler | `terminate(id, Deleted)` |
//! | idle | reaper task / any lookup | `reap_idle()` / `lookup` → `IdleTimeout` |
//! | handler error or panic | the handler's task | `terminate(id, Failed)` |
//! | `initialize` answered with an error | the initialize request | `terminate(id, Rejected)` |
//! | shutdown | [`SessionManager::shutdown`] | `terminate_all(Shutdown)` |
//!
//! In all of them the close callback (streams closed, reason logged,
//! [`App::closed`]) runs inside the winning call, once.
//!
//! ### Choices and limits
//!
//! * **An open `GET` stream counts as in flight.** The client is
//!   demonstrably there while it holds the stream, so the session is not
//!   reaped under it; keep-alive comments find out when the peer is gone,
//!   the body is dropped, and with it the in-flight guard, which stamps the
//!   activity: the idle clock runs from that moment. (The other choice, not
//!   counting it, would let the reaper end a session whose client is
//!   listening.)
//! * The event log ([`Builder::event_log`]) covers the standalone `GET`
//!   stream and the `POST` reply streams of clients at 2025-11-25 or later
//!   (older clients get no priming event, so their `POST` streams stay
//!   unlogged and end with their connection); at most 16 finished `POST`
//!   streams per session keep their logs.
//! * JSON-RPC batches are refused (400) at every version, including
//!   2025-03-26 (which allowed them, and which is assumed when the version
//!   header is missing): no MCP SDK client sends them, MCP 2025-06-18
//!   removed them, and a batch would need one answer assembled from several
//!   handlers' replies (some streamed). The error says so.
//! * In a session, a client that disconnects does not cancel its handler
//!   (2025-11-25: disconnection is not cancellation); at 2026-07-28 it
//!   does. The handler is
//!   first polled on the connection's task (most answer at once, with no
//!   task spawned and no other thread woken); one still pending after that
//!   poll goes on in a task of its own.
//! * `initialize` creates its session with that request already in flight
//!   ([`Registry::insert_in_flight`](crate::Registry::insert_in_flight)),
//!   so a session cannot idle out before its first request has started,
//!   however short the timeout.

mod app;
mod auth;
mod bearer;
mod body;
mod builder;
mod cors;
mod delete;
mod drain;
mod entry;
mod get;
pub mod jsonrpc;
mod manager;
mod policy;
mod post;
mod reaper;
mod responses;
mod resume;
pub mod rules;
mod shutdown;
mod sse;
pub mod stateless;

pub use app::{App, Context, HandlerError, Reply};
pub use auth::{Authenticator, Principal, Refusal};
pub use bearer::{BearerTokens, TokenFileError};
pub use body::{full as body_from, Body};

pub use builder::{
    Builder, RebindingProtection, DEFAULT_KEEP_ALIVE, DEFAULT_MAX_BODY, DEFAULT_SSE_RETRY,
};
pub use drain::DrainReport;
pub use entry::Entry;
pub use manager::{ResponseFuture, SessionManager};
pub use shutdown::{serve, ShutdownReport};
pub use sse::SseBody;

/// The registry's metrics in Prometheus text (moved to the core:
/// [`crate::metrics`]; re-exported here for servers that import it from the
/// HTTP layer).
pub use crate::metrics;

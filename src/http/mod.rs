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
//! * Any other request without an id, or with two: 400. An id that is malformed,
//!   unknown, stale, forged, expired or terminated, or that belongs to
//!   another principal: 404 with a JSON-RPC error. An unsupported
//!   `MCP-Protocol-Version`: 400 with an `UnsupportedProtocolVersionError`
//!   listing the supported ones (any supported one is accepted; absent
//!   means 2025-03-26). Other methods: 405 with `Allow`. Oversized bodies:
//!   413. A body slower than the body read timeout: 408. Wrong
//!   `Content-Type`: 415. `Accept` without both
//!   `application/json` and `text/event-stream`: 406. Bad JSON: 400 with a
//!   `-32700` parse error. Batches: 400, whatever the version (see below),
//!   known from their first byte and never buffered.
//! * A session with as many requests in flight as it may (100 by default):
//!   429 with `Retry-After`, and the session serves on. The manager running
//!   as many handlers as it may: 503 with `Retry-After`.
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
//!   session from being idle.
//! * A session's work ends with it: whichever path ends a session, its
//!   close callback cancels every request still running in it (the
//!   handler's future is dropped, a streamed reply ends; the request gets
//!   404, or 503 at shutdown); `notifications/cancelled` stops the request
//!   it names (no response is sent for it); the [handler
//!   timeout](Builder::handler_timeout) bounds every request's work. See
//!   [`Context::cancelled`].
//! * A handler error or panic ends its session with `Failed` (500 to that
//!   request); every other session is served on.
//! * At capacity: 503 with `Retry-After`.
//! * [`serve`] bounds connections: header read, idle and stalled-write
//!   timeouts, HTTP/2 keep-alive and streams, a cap on open connections,
//!   an accept loop that pauses on errors such as EMFILE; and it shuts
//!   down gracefully: stop accepting, end every session
//!   with `Shutdown`, wait for requests in flight up to a deadline.
//! * [Draining](SessionManager::drain) for a rolling restart: new
//!   `initialize` requests get 503 with `Retry-After` and create nothing,
//!   live sessions are served to their end (or a deadline);
//!   [`readiness`](SessionManager::readiness) (503 while draining) and
//!   [`liveness`](SessionManager::liveness) (200 while serving) are the
//!   two answers a load balancer's health checks read.
//! * A present `Origin` that is not allowed gets 403, on every bind;
//!   `Host` is kept to loopback names unless the manager is bound to a
//!   public address or the name is allowed (DNS-rebinding protection,
//!   [`RebindingProtection`]), wherever it is mounted. The allow-lists can
//!   be swapped at run time ([`SessionManager::set_allowed_origins`]).
//!   Origins allowed by name get CORS headers and preflights.
//! * Requests at protocol version 2026-07-28 (no sessions), when switched
//!   on ([`Builder::stateless`]), bypass the registry and follow that
//!   revision's rules ([`stateless`]): `Mcp-Method`/`Mcp-Name` checked
//!   against the body, a disconnect cancels the handler; no id is minted or
//!   echoed; `GET` and `DELETE` answer 405.
//!
//! Each request runs in a `tracing` span `mcp` with the session, named by
//! the `Debug` form of its id (index, generation, node: never the secret,
//! which grants access, at any level); the close reason is logged once, by
//! the terminate winner.
//!
//! [`SessionManager::metrics`] renders the registry's metrics followed by
//! the layer's (`sessionreg_http_connections_open`, `_streams_open`,
//! `_handlers_in_flight`, `_responses_total{code}`,
//! `_notifications_dropped_total`), all striped by thread: no request
//! writes a counter another thread writes.
//!
//! ### Bounds
//!
//! Every bound has a production default and a [`Builder`] method:
//!
//! | bound | default | what happens at it |
//! |---|---|---|
//! | [header read](Builder::header_read_timeout) | 10 s | the connection is closed (HTTP/1: hyper's timer, also between keep-alive requests; before the protocol is known and for HTTP/2: no first request in that time) |
//! | [body read](Builder::body_read_timeout) | 30 s | 408, the connection closed |
//! | [idle connection](Builder::connection_idle_timeout) | 60 s | a connection with no request for that long is shut down gracefully |
//! | [open connections](Builder::max_connections) | 10 000 | `serve` stops accepting until one closes (the kernel's backlog holds the rest) |
//! | [HTTP/2 keep-alive](Builder::http2_keep_alive) | ping every 20 s, 20 s to answer | the connection is closed |
//! | [HTTP/2 streams](Builder::http2_max_concurrent_streams) | 100 per connection | the client must wait (the protocol's own refusal) |
//! | [requests per session](Builder::max_requests_per_session) | 100 in flight | 429 with `Retry-After`; the session serves on |
//! | [handlers overall](Builder::max_handlers) | 10 000 in flight | 503 with `Retry-After` |
//! | [body size](Builder::max_body_bytes) | 4 MiB | 413 |
//! | [stream queue](Builder::stream_queue) | 64 messages and 256 KiB | a message that does not fit is dropped and counted |
//! | [stalled writes](Builder::stall_timeout) | 60 s | the stream (and in `serve`, the connection) ends |
//! | [handler timeout](Builder::handler_timeout) | 300 s | the work is dropped; a JSON-RPC error (-32603) |
//! | [event logs per session](Builder::event_log_bytes) | 256 KiB, all its streams (when a log is on) | the oldest events go first |
//! | [event logs in all](Builder::event_log_total_bytes) | 128 MiB | a session lets its own oldest go, or logs nothing |
//!
//! The connection bounds (the first six) are applied by [`serve`]; a
//! server that mounts the manager on its own hyper, axum or tower stack
//! sets its own (hyper's `header_read_timeout` with a timer, its HTTP/2
//! settings); all the others hold wherever the manager is mounted. A
//! server on the open network should also sit behind a proxy that limits
//! connections per client address: these bounds protect the process, not
//! one client from another.
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
//! * A message's params stay the client's JSON text
//!   ([`RawValue`](serde_json::value::RawValue)) until the application asks
//!   for them ([`jsonrpc::Request::params_as`],
//!   [`jsonrpc::Request::params_value`]): nothing builds a `Value` tree of
//!   a body, so a request costs about its body's size.
//! * SSE connections have bounded queues (messages and bytes). A server
//!   notification that does not fit is dropped and counted, never waited
//!   for (it stays in the event log, when there is one); a streamed reply
//!   waits for room. A connection whose client reads nothing for the stall
//!   timeout while a message waits is ended, and its session can then go
//!   idle.
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

mod admission;
mod app;
mod auth;
mod bearer;
mod body;
mod builder;
mod connection;
mod cors;
mod counters;
mod delete;
mod drain;
mod entry;
mod get;
pub mod jsonrpc;
mod limits;
mod manager;
mod outlet;
mod policy;
mod post;
mod reaper;
mod request_body;
mod responses;
mod resume;
pub mod rules;
mod serve;
mod shutdown;
mod sse;
mod stall_io;
pub mod stateless;
mod work;

pub use app::{App, Context, HandlerError, Reply};
pub use auth::{Authenticator, Principal, Refusal};
pub use bearer::{BearerTokens, TokenFileError};
pub use body::{full as body_from, Body};

pub use builder::{
    Builder, RebindingProtection, DEFAULT_KEEP_ALIVE, DEFAULT_MAX_BODY, DEFAULT_SSE_RETRY,
};
pub use counters::HttpStats;
pub use drain::DrainReport;
pub use entry::Entry;
pub use limits::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_CONNECTION_IDLE_TIMEOUT, DEFAULT_EVENT_LOG_BYTES,
    DEFAULT_EVENT_LOG_TOTAL_BYTES, DEFAULT_HANDLER_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_HTTP2_KEEP_ALIVE, DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HANDLERS, DEFAULT_MAX_REQUESTS_PER_SESSION, DEFAULT_STALL_TIMEOUT,
    DEFAULT_STREAM_QUEUE_BYTES, DEFAULT_STREAM_QUEUE_MESSAGES,
};
pub use manager::{ResponseFuture, SessionManager};
pub use serve::serve;
pub use shutdown::ShutdownReport;
pub use sse::SseBody;

/// The registry's metrics in Prometheus text (moved to the core:
/// [`crate::metrics`]; re-exported here for servers that import it from the
/// HTTP layer).
pub use crate::metrics;

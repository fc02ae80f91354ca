//! sessionreg's registry as [rmcp]'s streamable-HTTP `SessionManager`.
//!
//! An rmcp server keeps its sessions in whatever
//! [`SessionManager`](rmcp::transport::streamable_http_server::SessionManager)
//! its `StreamableHttpService` is given. Swap rmcp's `LocalSessionManager`
//! for [`RegistrySessionManager`], in one line:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
//! # #[derive(Clone)] struct Counter;
//! # impl rmcp::ServerHandler for Counter {}
//! # async fn run() -> std::io::Result<()> {
//! use axum::serve::ListenerExt;
//! use sessionreg_rmcp::{RegistrySessionManager, StatusLayer};
//!
//! let service = StreamableHttpService::new(
//!     || Ok(Counter),
//!     Arc::new(RegistrySessionManager::default()), // was LocalSessionManager::default()
//!     StreamableHttpServerConfig::default(),
//! );
//! // Optional, recommended: 503 at capacity and 404 for ended sessions
//! // where rmcp alone answers 500 or 202.
//! let router = axum::Router::new()
//!     .nest_service("/mcp", service)
//!     .layer(StatusLayer::new());
//! // TCP_NODELAY: axum::serve leaves Nagle on, and an SSE answer's last
//! // chunk then waits for the client's delayed ACK (~40 ms per call).
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080")
//!     .await?
//!     .tap_io(|tcp| {
//!         let _ = tcp.set_nodelay(true);
//!     });
//! axum::serve(listener, router).await
//! # }
//! ```
//!
//! (`StatusLayer` is a `tower_layer::Layer`: add `tower-layer = "0.3"` to
//! apply it by hand, `StatusLayer::new().layer(service)`.)
//!
//! What the swap gives (each is tested over real sockets in `tests/`):
//!
//! * **Exactly-once cleanup.** Every way a session ends — `DELETE`, the idle
//!   timeout, its worker exiting (handler failure, `initialize` rejected),
//!   shutdown — goes through [`sessionreg::Registry::terminate`]: one CAS
//!   picks the winner, which stops the session's worker and counts the
//!   reason, once, however often rmcp calls `close_session`.
//! * **In-flight-aware idle expiry.** rmcp's `keep_alive` restarts on
//!   worker events and ends a session whose tool call stays silent for longer
//!   than it. Here the same setting (or [`Builder::idle_timeout`]) ends only
//!   sessions with nothing in flight for that long: a request counts from
//!   the moment the manager takes it until its answer stream ends, an open
//!   GET stream while it is open.
//! * **A capacity**, refusing `initialize` (and a restore) at once when
//!   full (503 with `Retry-After` behind [`StatusLayer`]; rmcp alone answers
//!   500).
//! * **Registry ids**: 48 lowercase hex digits, generation-tagged and with a
//!   128-bit secret; the first two digits are the node id
//!   ([`Builder::node_id`]), so a fleet behind nginx or HAProxy routes rmcp
//!   servers by id exactly as it routes sessionreg's own HTTP layer. A
//!   malformed id is simply unknown (and counted as `malformed`).
//! * **Metrics**: [`RegistrySessionManager::metrics`] renders the registry's
//!   counters in Prometheus text (`sessionreg_sessions_live`,
//!   `sessionreg_sessions_terminated_total{reason}`, ... as
//!   [`sessionreg::metrics`] names them) for any route you mount.
//!
//! What rmcp's manager offers is kept: sessions restored from
//! `StreamableHttpServerConfig::session_store`, an SSE event store
//! ([`RegistrySessionManager::with_event_store`]), `SessionConfig` and its
//! `keep_alive` ([`Builder::session_config`]), and rmcp's session handles
//! ([`RegistrySessionManager::session`], [`RegistrySessionManager::sessions`]).
//!
//! # Tasks
//!
//! [`TaskManager`] is the other half: rmcp's `TaskManager` (the Tasks
//! extension, SEP-2663) with the same methods, on a
//! [`sessionreg::TaskStore`]: O(1) per call, a capacity, a background
//! reaper, the TTL never aborting running work unless asked, registry ids.
//! Swap the import, `TaskContext` included (the operation's context is
//! this crate's type):
//!
//! ```
//! // was: use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
//! use sessionreg_rmcp::tasks::{TaskContext, TaskExit, TaskManager, TaskOptions};
//! ```
//!
//! The [`tasks`] module lists every difference.
//!
//! # Servers of the 2026-07-28 revision
//!
//! At 2026-07-28 there are no sessions: rmcp serves such requests without
//! calling the session manager (only its event store, if it has one, keeps
//! their SSE answers for replay). What the swap gives such a server is the
//! [`TaskManager`] (tasks are how a 2026-07-28 server keeps work across
//! requests); a server that also speaks the earlier revisions gets both.
//!
//! # An rmcp handler on sessionreg's HTTP layer
//!
//! The [`http`] module (feature `http`, on by default) goes further: its
//! [`http::StreamableHttpService`] replaces rmcp's whole transport with
//! [`sessionreg::http`], for an unmodified handler (the README tabulates
//! every difference a user could notice).
//!
//! # rmcp versions
//!
//! Requires rmcp `>=3.11, <4` (3.11.0 is the newest release as of this
//! version; `.ci/rmcp-versions` in the repository tests the lowest and the
//! newest release the requirement admits). The manager uses rmcp's public
//! session API (`SessionManager`, `create_local_session`,
//! `LocalSessionHandle`, `WorkerTransport`, and, for an event store, rmcp's
//! own `LocalSessionManager` as the maker of workers, since rmcp gives a
//! worker an event store nowhere else); three behaviours it relies on are
//! rmcp's and not part of that API: `StreamableHttpService` calls the
//! manager inline in the request's future (what [`StatusLayer`] needs to
//! see a refusal; without it the answers fall back to rmcp's own), it calls
//! `close_session` after every session's worker exits (harmless here), and
//! `LocalSessionManager::restore_session` makes its worker within one poll
//! (if it ever does not, creating a session with an event store fails with
//! [`Error::WorkerNotMade`]; the event-store tests catch it).
//!
//! # Differences from `LocalSessionManager`
//!
//! | | rmcp's `LocalSessionManager` | [`RegistrySessionManager`] |
//! |---|---|---|
//! | state | `RwLock<HashMap>` of handles, UUIDv4 ids | a lock-free [`sessionreg::Registry`] |
//! | capacity | none | 65,536 by default ([`Builder::capacity`]); at it `initialize` and restores fail at once (503 behind [`StatusLayer`]) |
//! | idle timeout | `SessionConfig::keep_alive` (300 s), restarted by the worker's own events: a tool call silent for longer loses its session (the answer never comes; the client sees 404) | the same `keep_alive` (or [`Builder::idle_timeout`], which wins), counted from the end of the last request: never while anything is in flight ([`RegistrySessionManager::idle_timeout`] says which applies) |
//! | session ids | UUIDv4 | registry ids: node prefix ([`Builder::node_id`]), slot, generation, 128-bit secret |
//! | ending a session | removed from the map, its worker told to close | [`Registry::terminate`](sessionreg::Registry::terminate): exactly once, with a counted reason, the [`Builder::on_close`] hook |
//! | `restore_session` (`session_store`) | a new worker under the client's id | a fresh entry (new slot, a registry id with the restoring node's prefix) with rmcp's worker named by the client's id, which leads to the entry until it ends; rmcp's replay of `initialize` runs the same |
//! | restored sessions and routing | — | a restored session is reached by the id its client holds, whose prefix names the node that made it: behind a balancer that routes by prefix, requests go to that node while it lives (and a restore elsewhere happens only where the balancer sends them when it is gone); without owner routing each node that gets a request restores its own copy, as each `LocalSessionManager` does |
//! | event store | [`with_event_store`](RegistrySessionManager::with_event_store) | the same, also [`Builder::event_store`]: workers persist every event, `Last-Event-ID` replays from the store, rmcp's stateless replay uses it; without one, each worker's own cache |
//! | `SessionConfig` | `session_config` field | [`Builder::session_config`]: the same settings; `keep_alive` as above |
//! | session handles (SEP-1699 `close_sse_stream`, `close_standalone_sse_stream`) | the public `sessions` map | [`session`](RegistrySessionManager::session) by the client's id, [`sessions`](RegistrySessionManager::sessions) for all: rmcp's own `LocalSessionHandle`s; end a session with `DELETE` / `close_session`, not the handle's `close` (counted `failed`) |
//! | shutdown | none: sessions end with the server's cancellation token | [`shutdown`](RegistrySessionManager::shutdown), or [`Builder::cancellation_token`]: new sessions refused, every live one ended as `shutdown` |
//! | metrics | none | [`metrics`](RegistrySessionManager::metrics), [`stats`](RegistrySessionManager::stats) |
//! | logs | `create new session` with the id, at INFO (`rmcp::transport::streamable_http_server::session::local`) | the same line from the same target (rmcp's worker logs it); ids grant access, so keep that target at WARN in production (the examples do); this crate logs no id |
//! | rmcp's `close_session` after every worker exit | removes nothing | finds the session over; the registry counts it as a `stale` lookup, so `sessionreg_lookups_rejected_total{cause="stale"}` also grows by about one per ended session |
//! | 2026-07-28 requests | not seen by the manager | not seen either (see above) |
//!
//! Where rmcp's own behaviour is the defect this crate exists for (a silent
//! long call losing its session to `keep_alive`; the task TTL aborting
//! running work, in [`tasks`]), the table's right column is deliberate.
//!
//! # Shutdown
//!
//! [`RegistrySessionManager::shutdown`] refuses new sessions and ends every
//! live one with reason `shutdown`. Call it when the server stops, or give
//! the manager the server's cancellation token
//! ([`Builder::cancellation_token`]), so that sessions its cancellation
//! stops are counted as `shutdown` too. Dropping the manager would end what
//! is left the same way, but under rmcp it is not dropped while a session
//! lives: each session's task holds it.
//!
//! [rmcp]: https://docs.rs/rmcp/3.11.0

#![deny(unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

mod aliases;
mod builder;
mod entry;
mod error;
#[cfg(feature = "http")]
pub mod http;
mod manager;
mod reaper;
mod state;
mod status;
mod stream;
pub mod tasks;
mod transport;
mod workers;

pub use builder::{Builder, DEFAULT_IDLE_TIMEOUT};
pub use error::Error;
pub use manager::RegistrySessionManager;
pub use status::{StatusBody, StatusLayer, StatusService};
pub use tasks::{SpawnError, TaskContext, TaskManager, TaskManagerBuilder};
pub use transport::SessionTransport;

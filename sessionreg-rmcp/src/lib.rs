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
//! use sessionreg_rmcp::{RegistrySessionManager, StatusLayer};
//! use tower_layer::Layer;
//!
//! let service = StreamableHttpService::new(
//!     || Ok(Counter),
//!     Arc::new(RegistrySessionManager::default()), // was LocalSessionManager::default()
//!     StreamableHttpServerConfig::default(),
//! );
//! // Optional, recommended: 503 at capacity and 404 for ended sessions
//! // where rmcp alone answers 500 or 202.
//! let service = StatusLayer::new().layer(service);
//! ```
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
//!   than it. Here it is off, and the registry's reaper ends only sessions
//!   with nothing in flight: a request counts from the moment the manager
//!   takes it until its answer stream ends, an open GET stream while it is
//!   open.
//! * **A capacity**, refusing `initialize` at once when full (503 with
//!   `Retry-After` behind [`StatusLayer`]; rmcp alone answers 500).
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
//! # Tasks
//!
//! [`TaskManager`] is the other half: rmcp's `TaskManager` (the Tasks
//! extension, SEP-2663) with the same methods, on a
//! [`sessionreg::TaskStore`]: O(1) per call, a capacity, a background
//! reaper, the TTL never aborting running work unless asked, registry ids.
//! Swap `use rmcp::task_manager::{TaskManager, ...}` for
//! `use sessionreg_rmcp::tasks::{TaskManager, ...}`; the [`tasks`] module
//! lists every difference.
//!
//! # rmcp versions
//!
//! Built and tested against **rmcp 3.11.0** exactly (the manifest pins
//! `=3.11.0`). The manager uses rmcp's public session API only
//! (`SessionManager`, `create_local_session`, `LocalSessionHandle`,
//! `WorkerTransport`), but two behaviours it relies on are rmcp's and not
//! part of that API: `StreamableHttpService` calls the manager inline in the
//! request's future (what [`StatusLayer`] needs to see a refusal; without it
//! the answers fall back to rmcp's own), and it calls `close_session` after
//! every session's worker exits (harmless here). Check both before moving
//! the pin.
//!
//! # Differences from `LocalSessionManager` a user may notice
//!
//! * Sessions are capped (65,536 by default; [`Builder::capacity`]).
//! * The idle timeout counts from the end of the last request, not from the
//!   worker's last event; the default is the same 300 s.
//! * `restore_session` answers `NotSupported` (rmcp's default): a registry id
//!   names a slot of this process, so a session cannot be re-created under
//!   it elsewhere; a fleet routes each id to its node instead. Likewise no
//!   shared `EventStore`: resumption uses each worker's own cache, as
//!   `LocalSessionManager` does without an event store.
//! * rmcp's own logs still name session ids in full (`create new session` at
//!   INFO, from `rmcp::transport::streamable_http_server::session::local`),
//!   as they do with `LocalSessionManager`; ids grant access, so keep that
//!   target at WARN in production (the example does). This crate logs none.
//! * rmcp calls `close_session` once more after every worker exit; that call
//!   finds the session ended, and the registry counts it as a `stale`
//!   lookup, so on an rmcp server `sessionreg_lookups_rejected_total{cause="stale"}`
//!   also grows by about one per ended session.
//!
//! # Shutdown
//!
//! [`RegistrySessionManager::shutdown`] refuses new sessions and ends every
//! live one with reason `shutdown`; dropping the manager does the same. Or
//! give the manager the server's cancellation token
//! ([`Builder::cancellation_token`]), so that sessions its cancellation stops
//! are counted as `shutdown` too.
//!
//! [rmcp]: https://docs.rs/rmcp/3.11.0

#![deny(unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

mod aliases;
mod builder;
mod entry;
mod error;
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

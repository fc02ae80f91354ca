//! A lock-free registry of sessions, for servers whose sessions come and go
//! by the thousands per second.
//!
//! Sessions live in a slab. Each id names a slot, the slot's *generation* when
//! the session was created, and a secret, so an id that outlives its session
//! never reaches another one: after termination the generation moves on and
//! the old id finds nothing. And every way a session ends goes through one
//! call, [`Registry::terminate`], in which a single compare-and-swap picks one
//! winner; only the winner runs the close callback, once.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use sessionreg::{Reason, Registry, Termination};
//!
//! let closed = Arc::new(AtomicUsize::new(0));
//! let counter = closed.clone();
//! let registry = Registry::builder()
//!     .capacity(1000)
//!     .on_close(move |_id, _name: &String, _reason| {
//!         counter.fetch_add(1, Ordering::SeqCst);
//!     })
//!     .build()
//!     .unwrap();
//!
//! let id = registry.insert("alice".to_string()).unwrap();
//! assert_eq!(*registry.get(&id).unwrap(), "alice");
//!
//! // Two paths race to end the session: exactly one wins.
//! assert_eq!(registry.terminate(&id, Reason::Deleted), Termination::Won);
//! assert_eq!(registry.terminate(&id, Reason::IdleTimeout), Termination::AlreadyTerminated);
//! assert_eq!(closed.load(Ordering::SeqCst), 1);
//! assert!(registry.get(&id).is_none());
//! assert!(registry.is_empty());
//! ```
//!
//! The same registry holds what a server keeps without protocol sessions:
//! [`TaskStore`] (long-running work with exactly one outcome, kept for a
//! retention after it ends) and [`handles`] (values behind unguessable ids,
//! bound to their owner, expiring when unused).
//!
//! ## Features
//!
//! | feature | default | what it adds | what it brings in |
//! |---|---|---|---|
//! | *(none)* | | the core: [`Registry`], [`TaskStore`], [`handles`], [`Outcome`], [`metrics`] | `rand`, `coarsetime`, `crossbeam-utils` (and `libc` on Unix): no async runtime, no HTTP, no serde |
//! | `http` | yes | `http`: an MCP streamable-HTTP endpoint (both protocol eras, tasks, sealed request state) on hyper 1 | tokio, hyper, hyper-util, serde, serde_json, tracing, RustCrypto's `aes-gcm` and `sha2`, ... |
//! | `loom` | | with `--cfg sessionreg_loom`: every atomic of the core is loom's (for `loom-tests/`) | loom |
//!
//! The core alone:
//!
//! ```toml
//! sessionreg = { version = "0.2", default-features = false }
//! ```
//!
//! ## Versions
//!
//! 0.x: a minor version (0.2 → 0.3) may rename or remove public items, or
//! change documented behaviour; a patch version never does. `CHANGELOG.md`
//! lists every such change with what to use instead. The minimum Rust
//! version (`rust-version`, 1.85) is raised only in a minor version.
//!
//! The design, in prose, is in [`docs::design`].
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod activity;
mod builder;
mod clock;
mod config;
pub mod docs;
pub mod handles;
mod id;
mod insert;
mod live;
mod lookup;
// What a listen stream reads from (src/http/listen/): a bounded queue that
// many threads push into and one consumer pops, closed once. Not API: the
// listen layer is its one user; its tests, bench and loom models reach the
// whole of it through `internals`, so without that feature the parts only
// they use are not dead code.
#[cfg(feature = "internals")]
pub mod mailbox;
#[cfg(not(feature = "internals"))]
#[allow(dead_code, unused_imports)]
pub(crate) mod mailbox;
pub mod metrics;
mod outcome;
mod pack;
mod panic;
#[cfg_attr(not(feature = "http"), allow(dead_code))]
mod prefetch;
mod reason;
mod registry;
mod secret;
mod session;
pub mod shares;
mod slab;
mod stats;
mod striped;
mod sweep;
mod sync;
pub mod tasks;
mod terminate;
mod tid;
mod wrap;

// The streamable-HTTP session layer for MCP servers (hyper 1 + tokio); its
// docs are in src/http/mod.rs (outer docs here would break its links).
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;

pub use builder::{BuildError, Builder};
pub use clock::ManualClock;
pub use config::{DEFAULT_CAPACITY, MAX_CAPACITY, MAX_SHARDS};
pub use id::{ParseIdError, PublicPart, SessionId};
pub use insert::InsertError;
pub use outcome::{Outcome, Settle};
pub use reason::{Miss, Reason};
pub use registry::{Registry, Termination};
pub use session::{BeginError, InFlight, Session};
pub use stats::Stats;
pub use sweep::{SweepStep, SWEEP_BUDGET};
pub use tasks::{
    EndKind, Ended, Running, Settled, Task, TaskRef, TaskStats, TaskStore, TaskStoreBuilder,
};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

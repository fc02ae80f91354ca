//! What a registry is built from: the limits the builder checks, and the
//! configuration it hands to the storage and the registry once it has.
//!
//! A leaf, as sharded-slab's `cfg.rs` is: constants and plain data that the
//! builder, the registry and the storage all read, and that import none of
//! them back.

use crate::clock::IdleClock;
use crate::id::{SessionId, INDEX};
use crate::reason::Reason;
use crate::wrap::Wrap;

/// The largest capacity a registry accepts: 2^25 = 33,554,432 sessions, half
/// of what the id's 26-bit index field addresses, leaving room for the last
/// page of every shard to be partly unused.
pub const MAX_CAPACITY: usize = 1 << (INDEX.bits() - 1);
/// The most shards a registry accepts.
pub const MAX_SHARDS: usize = 256;
/// The capacity of a registry built without
/// [`Builder::capacity`](crate::Builder::capacity).
pub const DEFAULT_CAPACITY: usize = 1 << 16;

/// The close callback, as [`Builder::on_close`](crate::Builder::on_close)
/// takes it and the registry calls it.
pub(crate) type OnClose<S> = Box<dyn Fn(&SessionId, &S, Reason) + Send + Sync>;

/// Configuration the storage needs, validated by the builder. (One of the
/// crate's two deliberate pairs of names: the HTTP layer's own `Config` is
/// its bounds, `crate::http`'s; the core never sees it.)
pub(crate) struct Config {
    pub(crate) capacity: usize,
    pub(crate) shards: usize,
    pub(crate) stripes: usize,
    /// Whether to count the entries' own ends (a task store's).
    pub(crate) outcomes: bool,
    pub(crate) node: u64,
    /// The clock and the idle timeout.
    pub(crate) clock: IdleClock,
    /// How slot generations wrap (the whole field but in tests).
    pub(crate) generations: Wrap,
    /// How free-list tags wrap (likewise).
    pub(crate) tags: Wrap,
}

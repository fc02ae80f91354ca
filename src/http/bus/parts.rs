//! What a bus's handle, its queue, its record and its task share
//! ([`BusParts`]).

use super::keys;
use crate::http::listen::bus::BusLink;
use arc_swap::{ArcSwap, ArcSwapOption};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

/// What the bus's handle, its queue, its record and its task share.
pub(super) struct BusParts {
    /// The channel every node publishes to and listens on.
    pub(super) channel: String,
    /// The keys frames are sealed and opened with (`keys.rs`, `wire.rs`).
    pub(super) keys: ArcSwap<keys::FrameKeys>,
    /// The prefix of the record's keys.
    pub(super) used_prefix: String,
    /// The key of the record's epoch (`epoch.rs`).
    pub(super) epoch_key: String,
    /// The record's epoch, as last read (0: never read yet): the one this
    /// node seals single-use states in.
    pub(super) epoch: AtomicU64,
    /// Told by the record when a redemption finds `epoch` behind Redis's:
    /// the task reads it again at once.
    pub(super) epoch_behind: tokio::sync::Notify,
    /// The commands connection while the link is up (`PUBLISH`, `SET`,
    /// `PING`); `None` while it is down.
    pub(super) commands: ArcSwapOption<redis::aio::MultiplexedConnection>,
    pub(super) link: Arc<BusLink>,
    /// Set when a publication of this node could not be handed to Redis:
    /// the task then tells the other nodes, at its first chance.
    pub(super) lost: AtomicBool,
    pub(super) timeout: Duration,
    /// The prefix of the rate limits' cells (`fleet_rates.rs`).
    pub(super) rate_prefix: String,
    /// The key of the set of the fleet's nodes, and this node's member of
    /// it (random, drawn when the bus starts).
    pub(super) nodes_key: String,
    pub(super) member: String,
    /// The SHA-1 Redis names the rate limits' script by, once loaded
    /// (`fleet_rates.rs`): decisions call it by name.
    pub(super) decide_sha: std::sync::OnceLock<String>,
}

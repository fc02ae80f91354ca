//! Rate limits that hold for a fleet: the seam a fleet's bus plugs into
//! ([`FleetRates`]; Redis, feature `redis`).
//!
//! Without it each node counts alone, so a principal spread over `n`
//! nodes gets `n` times its limit. With it, every decision is the fleet's:
//! one atomic step in the shared store decides all the limits a request
//! meets (its principal's, its tool's), on one clock (the store's), so
//! the combined rate of a principal through any number of nodes stays
//! within its limit plus its burst. When the store cannot decide (its link
//! is down, or it does not answer within the bus's timeout) the node falls
//! back to its share of each limit ([`share`]: the rate and the burst
//! divided by the nodes last seen), never to no limit and never to
//! refusing everyone.

// Without a bus (feature `redis`) nothing implements the seam.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Where a fleet decides its rate limits.
pub(crate) trait FleetRates: Send + Sync {
    /// Whether a decision can be asked now (the link is up): while it is
    /// not, the node decides on its share without waiting.
    fn is_up(&self) -> bool;

    /// The nodes of the fleet last seen (at least 1): each node's share of
    /// a limit while the fleet cannot decide.
    fn nodes(&self) -> u32;

    /// One request against `cells`, all or none: allowed (each cell
    /// counts it), or refused by the first cell past its limit (none
    /// counts it). Bounded in time by the implementation (a store that
    /// does not answer is [`FleetDecided::Unavailable`]).
    fn decide(&self, cells: Vec<FleetCell>) -> FleetDecision;
}

/// The future of a [`FleetRates::decide`].
pub(crate) type FleetDecision = Pin<Box<dyn Future<Output = FleetDecided> + Send + 'static>>;

/// What the fleet decided.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FleetDecided {
    /// Within every limit: counted by each.
    Allowed,
    /// Past the limit of `cells[cell]`; the next request is allowed in
    /// `wait`.
    Refused { cell: usize, wait: Duration },
    /// The store could not decide: the node decides on its share.
    Unavailable,
}

/// One limit's cell for one principal (or key), as the store keeps it: a
/// GCRA cell (its theoretical arrival time) under a key that names
/// neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FleetCell {
    /// The first 16 bytes of SHA-256 over the limit's label and the
    /// principal's name (or key): the same on every node; not the name.
    pub(crate) key: [u8; 16],
    /// The time between two requests at the limit's rate, in microseconds.
    pub(crate) interval_us: u64,
    /// How far ahead of now a cell's arrival time may be and still allow a
    /// request: `(burst - 1) × interval`, in microseconds.
    pub(crate) tolerance_us: u64,
}

impl FleetCell {
    /// The cell of `key` (a principal's name, or an application's key) in
    /// the limit labelled `label` (the same label on every node:
    /// `principal`, `tool` and the tool's name, or a keyed limit's name),
    /// allowing `count` requests per `window` in bursts of `burst`.
    pub(crate) fn new(
        label: &[&str],
        key: &str,
        count: u32,
        window: Duration,
        burst: u32,
    ) -> FleetCell {
        use sha2::{Digest, Sha256};
        let mut digest = Sha256::new();
        digest.update(b"sessionreg rate limit cell\0");
        for part in label {
            // Lengths first: no two labels run into each other.
            digest.update((part.len() as u64).to_be_bytes());
            digest.update(part.as_bytes());
        }
        digest.update(key.as_bytes());
        let mut key = [0u8; 16];
        key.copy_from_slice(&digest.finalize()[..16]);
        let interval_us = (window.as_micros() / u128::from(count.max(1))).max(1) as u64;
        FleetCell {
            key,
            interval_us,
            tolerance_us: interval_us * u64::from(burst.max(1) - 1),
        }
    }

    /// The key in lowercase hex, as the store names it.
    pub(crate) fn hex(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(32);
        for byte in self.key {
            // Writing to a String cannot fail.
            let _ = write!(out, "{byte:02x}");
        }
        out
    }
}

/// One node's share of a limit of `count` requests in bursts of `burst`
/// among `nodes`: both divided, rounded down, at least 1 (a node is never
/// left refusing everyone).
pub(crate) fn share(count: u32, burst: u32, nodes: u32) -> (u32, u32) {
    let nodes = nodes.max(1);
    ((count / nodes).max(1), (burst / nodes).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_the_same_on_every_node_and_names_no_one() {
        let ada = "ada";
        let a = FleetCell::new(&["principal"], ada, 20, Duration::from_secs(1), 20);
        let b = FleetCell::new(&["principal"], ada, 20, Duration::from_secs(1), 20);
        assert_eq!(a, b);
        assert_eq!(a.interval_us, 50_000);
        assert_eq!(a.tolerance_us, 19 * 50_000);
        assert!(!a.hex().contains("ada") && a.hex().len() == 32);
        // Another limit, or another principal: another cell; labels that
        // run together do not meet.
        let tool = FleetCell::new(&["tool", "x"], ada, 20, Duration::from_secs(1), 20);
        let joined = FleetCell::new(&["toolx"], ada, 20, Duration::from_secs(1), 20);
        let bob = FleetCell::new(&["principal"], "bob", 20, Duration::from_secs(1), 20);
        assert_ne!(a.key, tool.key);
        assert_ne!(tool.key, joined.key);
        assert_ne!(a.key, bob.key);
    }

    #[test]
    fn a_share_divides_the_rate_and_the_burst_and_never_reaches_zero() {
        assert_eq!(share(20, 40, 1), (20, 40));
        assert_eq!(share(20, 40, 3), (6, 13));
        assert_eq!(share(2, 2, 5), (1, 1));
        assert_eq!(share(20, 20, 0), (20, 20));
    }
}

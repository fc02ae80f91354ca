//! One configured rate limit ([`RatePolicy`]): what it allows, its limit
//! on this node, and, in a fleet whose store cannot decide, this node's
//! share of it.

use super::fleet::{self, FleetCell};
use super::limit::Limit;
use crate::http::wire::rate::Rate;
use arc_swap::ArcSwapOption;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One limit as configured: `rate` per principal in bursts of `burst`.
pub(crate) struct RatePolicy {
    pub(crate) rate: Rate,
    burst: u32,
    /// Cells per limiter, at most.
    max_cells: usize,
    /// The whole limit, on this node (alone, or the fleet's when it is a
    /// node of one).
    whole: Limit,
    /// This node's share while the fleet cannot decide, made for the
    /// number of nodes seen then (made again when it changes).
    share: ArcSwapOption<NodeShare>,
    /// Requests refused, by the fleet or the node.
    limited: AtomicU64,
}

/// A node's share of a limit, for a fleet of `nodes`.
struct NodeShare {
    nodes: u32,
    limit: Limit,
}

impl RatePolicy {
    /// `rate`, in bursts of `burst` (`None`: the rate's count), in at most
    /// `cells` cells per limiter; `None` for a count or a burst of 0.
    pub(crate) fn new(rate: Rate, burst: Option<u32>, cells: usize) -> Option<RatePolicy> {
        let burst = burst.unwrap_or(rate.count());
        Some(RatePolicy {
            whole: Limit::counting(rate.count(), rate.window(), burst, cells)?,
            rate,
            burst,
            max_cells: cells,
            share: ArcSwapOption::empty(),
            limited: AtomicU64::new(0),
        })
    }

    /// Counts one request of `key` on this node, against the whole limit
    /// (`nodes` 1) or this node's share of it among `nodes`; past it, how
    /// long until the next is allowed.
    pub(crate) fn check(&self, key: &str, nodes: u32) -> Result<(), Duration> {
        if nodes <= 1 {
            return self.whole.check(key);
        }
        let share = match self.share.load_full() {
            Some(share) if share.nodes == nodes => share,
            _ => {
                let (count, burst) = fleet::share(self.rate.count(), self.burst, nodes);
                // A share allows less than the whole, which was made: it
                // can be made too (`None` cannot happen; the whole serves).
                let Some(limit) = Limit::counting(count, self.rate.window(), burst, self.max_cells)
                else {
                    return self.whole.check(key);
                };
                let share = Arc::new(NodeShare { nodes, limit });
                // Two requests may both make one; either serves.
                self.share.store(Some(Arc::clone(&share)));
                share
            }
        };
        share.limit.check(key)
    }

    /// `key`'s cell of this limit in the fleet's store, the limit
    /// labelled `label` there.
    pub(crate) fn fleet_cell(&self, label: &[&str], key: &str) -> FleetCell {
        FleetCell::new(
            label,
            key,
            self.rate.count(),
            self.rate.window(),
            self.burst,
        )
    }

    /// Counts a refusal.
    pub(crate) fn refused(&self) {
        // Relaxed: a counter read by /metrics only.
        self.limited.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests refused.
    pub(crate) fn limited(&self) -> u64 {
        // Relaxed: a counter.
        self.limited.load(Ordering::Relaxed)
    }

    /// Principals with a cell of their own on this node.
    pub(crate) fn cells(&self) -> u64 {
        let share = self.share.load();
        self.whole.cells() + share.as_ref().map_or(0, |share| share.limit.cells())
    }

    /// Decisions made on the shared overflow cell on this node.
    pub(crate) fn overflowed(&self) -> u64 {
        let share = self.share.load();
        self.whole.overflowed() + share.as_ref().map_or(0, |share| share.limit.overflowed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_keeps_its_share_of_the_burst_among_the_nodes_seen() {
        // One an hour: nothing refills during the test.
        let policy = RatePolicy::new(Rate::per_hour(10), Some(10), 16).unwrap();
        let ada = "ada";
        // Among 3 nodes: 10 / 3 = 3 each.
        let allowed = (0..10).filter(|_| policy.check(ada, 3).is_ok()).count();
        assert_eq!(allowed, 3);
        // Among 2 (the count changed): a new share, 5.
        let allowed = (0..10).filter(|_| policy.check(ada, 2).is_ok()).count();
        assert_eq!(allowed, 5);
        // Alone: the whole, untouched by the shares.
        let allowed = (0..20).filter(|_| policy.check(ada, 1).is_ok()).count();
        assert_eq!(allowed, 10);
    }
}

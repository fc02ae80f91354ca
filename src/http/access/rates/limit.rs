//! One rate limit on one node ([`Limit`]): governor's GCRA limiter over
//! the bounded cells of `store.rs`, and the pruning that keeps them
//! bounded.

use super::store::{BoundedStore, CellKey, Cells};
#[cfg(test)]
use crate::http::wire::rate::Rate;
use governor::clock::{Clock, MonotonicClock};
use governor::{Quota, RateLimiter};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One limit on one node: so many requests per principal a window, in
/// bursts of so many.
pub(crate) struct Limit {
    limiter: RateLimiter<CellKey, BoundedStore, MonotonicClock>,
    /// The keys of the principals' digests (`CellKey`), this limit's own.
    keys: std::hash::RandomState,
    clock: MonotonicClock,
    /// The limiter's cells (it owns them too).
    pub(super) cells: Arc<Cells>,
    /// When the store was last pruned (nanoseconds since `started`).
    pruned: AtomicU64,
    /// The overflow count at the last look: a newer one asks for a prune.
    overflow_seen: AtomicU64,
    started: Instant,
    /// The least time between two prunes: the rate's window.
    prune_every: Duration,
}

impl Limit {
    /// `rate`, with bursts of `burst` (`None`: the rate's count), in at
    /// most `cells` cells; `None` for a count or a burst of 0.
    #[cfg(test)]
    pub(crate) fn new(rate: Rate, burst: Option<u32>, cells: usize) -> Option<Limit> {
        let burst = burst.unwrap_or(rate.count());
        Limit::counting(rate.count(), rate.window(), burst, cells)
    }

    /// `count` requests per `window`, in bursts of `burst`, in at most
    /// `cells` cells; `None` for a count or a burst of 0.
    pub(crate) fn counting(
        count: u32,
        window: Duration,
        burst: u32,
        cells: usize,
    ) -> Option<Limit> {
        let count = NonZeroU32::new(count)?;
        let burst = NonZeroU32::new(burst)?;
        let quota = Quota::with_period(window / count.get())?.allow_burst(burst);
        let clock = MonotonicClock;
        let cells = Arc::new(Cells::new(cells));
        let store = BoundedStore(Arc::clone(&cells));
        Some(Limit {
            limiter: RateLimiter::new(quota, store, clock.clone()),
            keys: std::hash::RandomState::new(),
            clock,
            cells,
            pruned: AtomicU64::new(0),
            overflow_seen: AtomicU64::new(0),
            started: Instant::now(),
            prune_every: window,
        })
    }

    /// Counts one request of `key` (a principal's name, or an
    /// application's key); past the limit, how long until the next is
    /// allowed.
    pub(crate) fn check(&self, key: &str) -> Result<(), Duration> {
        // Relaxed: a hint to prune; its exact moment does not matter.
        let overflowed = self.cells.overflowed();
        if overflowed != self.overflow_seen.load(Ordering::Relaxed) {
            self.overflow_seen.store(overflowed, Ordering::Relaxed);
            self.prune();
        }
        let key = CellKey::of(&self.keys, key);
        self.limiter
            .check_key(&key)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Drops the cells back at a full burst, at most once per window
    /// (a prune walks every cell).
    fn prune(&self) {
        let now = self.started.elapsed().as_nanos() as u64;
        // Relaxed: which thread prunes does not matter; one of them does.
        let last = self.pruned.load(Ordering::Relaxed);
        let every = self.prune_every.as_nanos() as u64;
        if last != 0 && now.saturating_sub(last) < every {
            return;
        }
        if self
            .pruned
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.limiter.retain_recent();
        }
    }

    /// Whether `principal` has a cell of its own.
    #[cfg(test)]
    pub(crate) fn holds(&self, key: &str) -> bool {
        self.cells.holds(CellKey::of(&self.keys, key))
    }

    /// Principals with a cell of their own.
    pub(crate) fn cells(&self) -> u64 {
        self.cells.len() as u64
    }

    /// Decisions made on the shared overflow cell.
    pub(crate) fn overflowed(&self) -> u64 {
        self.cells.overflowed()
    }
}

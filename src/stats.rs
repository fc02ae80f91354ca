//! Counters, striped by thread so that none of them is a contended cache line.
//!
//! Each thread id (`tid.rs`) below the stripe count owns one cache-padded
//! stripe and is its only writer, so a bump is a plain load and store: no
//! read-modify-write on the hot path. Threads beyond the stripe count (and
//! threads in teardown) share one overflow stripe, bumped with `fetch_add`.
//! A read sums every stripe.

use crate::reason::{Reason, Rejection};
use crate::sync::{AtomicU64, Ordering};
use crate::tid;
use crossbeam_utils::CachePadded;

#[derive(Default)]
struct Stripe {
    created: AtomicU64,
    terminated: [AtomicU64; Reason::ALL.len()],
    rejected: [AtomicU64; Rejection::ALL.len()],
}

pub(crate) struct Counters {
    owned: Box<[CachePadded<Stripe>]>,
    shared: CachePadded<Stripe>,
}

impl Counters {
    pub(crate) fn new(stripes: usize) -> Counters {
        Counters {
            owned: (0..stripes).map(|_| CachePadded::default()).collect(),
            shared: CachePadded::default(),
        }
    }

    #[inline]
    fn bump(&self, counter: impl Fn(&Stripe) -> &AtomicU64) {
        match self.owned.get(tid::current()) {
            // This thread is the stripe's only writer (its id is held by no
            // other living thread), so load + store loses no update. Relaxed:
            // counters order nothing; readers sum a snapshot. (Under loom the
            // id handover goes through a std mutex loom cannot see, so there
            // it takes the RMW to stay exact.)
            #[cfg(not(sessionreg_loom))]
            Some(stripe) => {
                let cell = counter(stripe);
                cell.store(cell.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            }
            #[cfg(sessionreg_loom)]
            Some(stripe) => {
                counter(stripe).fetch_add(1, Ordering::Relaxed);
            }
            None => {
                counter(&self.shared).fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    #[inline]
    pub(crate) fn created(&self) {
        self.bump(|s| &s.created);
    }

    #[inline]
    pub(crate) fn terminated(&self, reason: Reason) {
        self.bump(|s| &s.terminated[reason.index()]);
    }

    #[inline]
    pub(crate) fn rejected(&self, cause: Rejection) {
        self.bump(|s| &s.rejected[cause.index()]);
    }

    fn sum(&self, counter: impl Fn(&Stripe) -> &AtomicU64) -> u64 {
        self.owned
            .iter()
            .map(|s| &**s)
            .chain(Some(&*self.shared))
            .map(|s| counter(s).load(Ordering::Relaxed))
            .sum()
    }

    pub(crate) fn snapshot(&self, capacity: usize, node: u8) -> Stats {
        // Terminations first: a session counted as terminated here was
        // created before, so reading created second never yields live < 0
        // for sessions that come and go during the read.
        let terminated = Reason::ALL.map(|r| self.sum(|s| &s.terminated[r.index()]));
        let created = self.sum(|s| &s.created);
        let rejected = Rejection::ALL.map(|c| self.sum(|s| &s.rejected[c.index()]));
        Stats {
            live: created.saturating_sub(terminated.iter().sum()),
            created,
            terminated,
            rejected,
            capacity,
            node,
        }
    }

    pub(crate) fn live(&self) -> usize {
        self.snapshot(0, 0).live as usize
    }
}

/// A snapshot of a registry's counters.
///
/// Counters are summed from per-thread stripes without stopping writers, so
/// while sessions come and go the figures are each a moment apart; once the
/// registry is quiet they are exact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Sessions created and not yet terminated.
    pub live: u64,
    /// Sessions ever created.
    pub created: u64,
    terminated: [u64; Reason::ALL.len()],
    rejected: [u64; Rejection::ALL.len()],
    /// The configured maximum of live sessions.
    pub capacity: usize,
    /// The node id in this registry's session ids.
    pub node: u8,
}

impl Stats {
    /// Sessions that ended for `reason`.
    pub fn terminated(&self, reason: Reason) -> u64 {
        self.terminated[reason.index()]
    }

    /// Sessions that ended, for any reason.
    pub fn terminated_total(&self) -> u64 {
        self.terminated.iter().sum()
    }

    /// Lookups that found nothing, because of `cause`.
    pub fn rejected(&self, cause: Rejection) -> u64 {
        self.rejected[cause.index()]
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn bumps_from_many_threads_all_count() {
        // More threads than stripes: some share the overflow stripe.
        let counters = Counters::new(2);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        counters.created();
                        counters.rejected(Rejection::Stale);
                    }
                    counters.terminated(Reason::Failed);
                });
            }
        });
        let stats = counters.snapshot(9, 0);
        assert_eq!(stats.created, 60_000);
        assert_eq!(stats.rejected(Rejection::Stale), 60_000);
        assert_eq!(stats.terminated(Reason::Failed), 6);
        assert_eq!(stats.live, 60_000 - 6);
        assert_eq!(counters.live(), 60_000 - 6);
    }
}

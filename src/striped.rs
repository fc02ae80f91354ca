//! Counters striped by thread, so that none of them is a contended cache
//! line: the registry's, and its entries' outcomes where it counts them (a
//! task store's), both in `stats.rs`.
//!
//! Each thread id (`tid.rs`) below the stripe count owns one cache-padded
//! stripe and is its only writer, so a bump is a plain load and store: no
//! read-modify-write on the hot path. Threads beyond the stripe count (and
//! threads in teardown) share one overflow stripe, bumped with `fetch_add`.
//! A read sums every stripe.

use crate::sync::{AtomicU64, Ordering};
use crate::tid;
use crossbeam_utils::CachePadded;

/// One `S` (a struct of counters) per thread id, and one shared.
pub(crate) struct Striped<S> {
    owned: Box<[CachePadded<S>]>,
    shared: CachePadded<S>,
}

impl<S: Default> Striped<S> {
    pub(crate) fn new(stripes: usize) -> Striped<S> {
        Striped {
            owned: (0..stripes).map(|_| CachePadded::default()).collect(),
            shared: CachePadded::default(),
        }
    }
}

impl<S> Striped<S> {
    /// Adds one to the counter `counter` picks, in this thread's stripe.
    #[inline]
    pub(crate) fn bump(&self, counter: impl Fn(&S) -> &AtomicU64) {
        match self.owned.get(tid::current()) {
            // This thread is the stripe's only writer (its id is held by no
            // other living thread, and the id's handover is ordered by the
            // pool's lock), so load + store loses no update. Release: a
            // reader that sees this count also sees what the thread did
            // before it (a termination's creation was counted before it).
            Some(stripe) => {
                let cell = counter(stripe);
                cell.store(cell.load(Ordering::Relaxed) + 1, Ordering::Release);
            }
            None => {
                counter(&self.shared).fetch_add(1, Ordering::Release);
            }
        }
    }

    /// The counter `counter` picks, summed over every stripe.
    pub(crate) fn sum(&self, counter: impl Fn(&S) -> &AtomicU64) -> u64 {
        self.owned
            .iter()
            .map(|s| &**s)
            .chain(Some(&*self.shared))
            // Acquire: pairs with the bumps' Release.
            .map(|s| counter(s).load(Ordering::Acquire))
            .sum()
    }
}

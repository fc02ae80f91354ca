//! A registry's counters, striped by thread so that none of them is a
//! contended cache line (`striped.rs`), and the [`Stats`] snapshot read
//! from them.
//!
//! ## How many are live, while sessions come and go
//!
//! `live` is `created - terminated`, but the two sums are read one stripe
//! at a time while other threads keep counting, so they are not one
//! instant's figures. The read is ordered to bound the error:
//!
//! 1. every termination counted is of a session whose creation was counted
//!    before (an insert counts before it publishes; a terminate counts
//!    after its CAS), and bumps are Release stores that reads Acquire;
//! 2. `terminated` is summed first and `created` second, so every session
//!    counted as terminated is also counted as created (never below zero),
//!    and every session live throughout the read is counted as created and
//!    not as terminated (never below the sessions that stayed live);
//! 3. `terminated` is summed again afterwards: if it did not move, no
//!    session ended during the read, the live count only rose while
//!    `created` was summed, and the figure is one it had at some instant:
//!    exact. If it moved, the read is tried again, a few times.
//! 4. Under unending churn the figure can overshoot by the sessions that
//!    ended during the read, so it is capped at the capacity, which the
//!    live count never exceeds.
//!
//! So `live` is never below the number of sessions live for the whole call,
//! never above the capacity, and exact whenever no session ended during one
//! of the reads.

use crate::reason::{Miss, Reason};
use crate::striped::Striped;
use crate::sync::AtomicU64;

#[derive(Default)]
struct StatsStripe {
    created: AtomicU64,
    terminated: [AtomicU64; Reason::ALL.len()],
    rejected: [AtomicU64; Miss::ALL.len()],
}

pub(crate) struct Counters {
    stripes: Striped<StatsStripe>,
    /// How the entries' own ends went, by kind, for stores whose entries
    /// have one (a task store's [`EndKind`](crate::EndKind)s): kept with
    /// the storage, so that whoever holds an entry (a task's running work)
    /// can count its end with no reference to the store.
    outcomes: Option<Striped<Outcomes>>,
}

/// Kinds of an entry's own end that [`Counters`] can count: a task store's
/// five (`tasks.rs` asserts it).
pub(crate) const OUTCOMES: usize = 5;

#[derive(Default)]
struct Outcomes {
    by_kind: [AtomicU64; OUTCOMES],
}

/// How many times a snapshot reads again when a session ended meanwhile.
const SNAPSHOT_TRIES: usize = 4;

impl Counters {
    /// Counters on `stripes` stripes, with the entries' outcomes if
    /// `outcomes`.
    pub(crate) fn new(stripes: usize, outcomes: bool) -> Counters {
        Counters {
            stripes: Striped::new(stripes),
            outcomes: outcomes.then(|| Striped::new(stripes)),
        }
    }

    /// Counts an entry's end of kind `kind` (below [`OUTCOMES`]), on this
    /// thread's stripe. Nothing without outcome counters.
    #[inline]
    pub(crate) fn outcome(&self, kind: usize) {
        if let Some(outcomes) = &self.outcomes {
            outcomes.bump(|o| &o.by_kind[kind]);
        }
    }

    /// The entries' ends of each kind (zero without outcome counters).
    pub(crate) fn outcomes(&self) -> [u64; OUTCOMES] {
        match &self.outcomes {
            Some(outcomes) => std::array::from_fn(|kind| outcomes.sum(|o| &o.by_kind[kind])),
            None => [0; OUTCOMES],
        }
    }

    #[inline]
    fn bump(&self, counter: impl Fn(&StatsStripe) -> &AtomicU64) {
        self.stripes.bump(counter);
    }

    fn sum(&self, counter: impl Fn(&StatsStripe) -> &AtomicU64) -> u64 {
        self.stripes.sum(counter)
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
    pub(crate) fn missed(&self, cause: Miss) {
        self.bump(|s| &s.rejected[cause.index()]);
    }

    fn terminations(&self) -> [u64; Reason::ALL.len()] {
        Reason::ALL.map(|r| self.sum(|s| &s.terminated[r.index()]))
    }

    /// Reads the counters as the module docs say: terminations, creations,
    /// terminations again; a few tries for a read no termination overlapped.
    fn read(&self) -> (u64, [u64; Reason::ALL.len()], bool) {
        let mut terminated = self.terminations();
        for _ in 1..SNAPSHOT_TRIES {
            let created = self.sum(|s| &s.created);
            let again = self.terminations();
            if again == terminated {
                return (created, terminated, true);
            }
            terminated = again;
        }
        (self.sum(|s| &s.created), terminated, false)
    }

    pub(crate) fn snapshot(&self, capacity: u64, node: u8) -> Stats {
        let (created, terminated, _) = self.read();
        let rejected = Miss::ALL.map(|c| self.sum(|s| &s.rejected[c.index()]));
        Stats {
            live: live(created, &terminated, capacity),
            created,
            terminated,
            rejected,
            capacity: capacity as usize,
            node,
        }
    }

    pub(crate) fn live(&self, capacity: u64) -> u64 {
        let (created, terminated, _) = self.read();
        live(created, &terminated, capacity)
    }
}

/// `created - terminated`, within `0..=capacity` (see the module docs: the
/// read order makes the difference non-negative, the cap bounds churn).
fn live(created: u64, terminated: &[u64], capacity: u64) -> u64 {
    let ended: u64 = terminated.iter().sum();
    debug_assert!(created >= ended, "{ended} ended of {created} created");
    created.saturating_sub(ended).min(capacity)
}

/// A snapshot of a registry's counters.
///
/// Counters are summed from per-thread stripes without stopping writers.
/// Once the registry is quiet every figure is exact. While sessions come and
/// go, `created` and each `terminated` figure is a value its counter had
/// during the call, and [`live`](Stats::live) is never below the number of
/// sessions that were live for the whole call and never above the capacity
/// (exact when no session ended while it was read).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Sessions created and not yet terminated, as described above.
    pub live: u64,
    /// Sessions ever created.
    pub created: u64,
    terminated: [u64; Reason::ALL.len()],
    rejected: [u64; Miss::ALL.len()],
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
    pub fn misses(&self, cause: Miss) -> u64 {
        self.rejected[cause.index()]
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn bumps_from_many_threads_all_count() {
        // More threads than stripes: some share the overflow stripe.
        let counters = Counters::new(2, false);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        counters.created();
                        counters.missed(Miss::Stale);
                    }
                    counters.terminated(Reason::Failed);
                });
            }
        });
        let stats = counters.snapshot(1 << 20, 0);
        assert_eq!(stats.created, 60_000);
        assert_eq!(stats.misses(Miss::Stale), 60_000);
        assert_eq!(stats.terminated(Reason::Failed), 6);
        assert_eq!(stats.live, 60_000 - 6);
        assert_eq!(counters.live(1 << 20), 60_000 - 6);
        assert_eq!(counters.live(100), 100, "capped at the capacity");
    }
}

//! The limiter's state, one GCRA cell per principal, bounded in count
//! ([`BoundedStore`]): governor's keyed limiter over a map of ours, so
//! that a flood of principals cannot grow it without end.
//!
//! A cell is keyed by a digest of the principal ([`CellKey`]), not by its
//! name: a principal is as long as the authenticator makes it, and a cell
//! keeps its key, so a cell holds the same few bytes whoever it is for.
//! The digest is SipHash-1-3 (std's `RandomState`) under keys drawn at
//! random for each limit when it is made: two principals share a cell
//! only if their 64-bit digests collide, about one chance in 10^9 among
//! 100,000 principals, and nobody can aim for it without the keys.
//!
//! Up to `max` principals have a cell of their own. Past it, a principal
//! without one is measured against one shared overflow cell (with the
//! same rate) until a prune (`retain_recent`: once a newcomer met the
//! bound, at most once per window, see `limit.rs`) drops the cells of
//! principals back at a full burst (indistinguishable from a new cell, so
//! nothing is forgotten that matters). The principals already known keep their own limits whatever
//! the newcomers do; only the newcomers past the bound share one.

use governor::nanos::Nanos;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::state::{InMemoryState, NotKeyed, StateStore};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a cell is keyed by: a digest of the principal's name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct CellKey(u64);

// What a cell keeps of its principal, whatever the name's length.
const _: () = assert!(std::mem::size_of::<CellKey>() == 8);

impl CellKey {
    /// The key of `key` (a principal's name, or an application's key)
    /// under the limit's `keys`.
    pub(crate) fn of(keys: &std::hash::RandomState, key: &str) -> CellKey {
        CellKey(keys.hash_one(key))
    }
}

/// The store the limiter owns: the cells, shared with the owner of the
/// limiter (which reads their count and counters).
pub(crate) struct BoundedStore(pub(crate) Arc<Cells>);

/// Principals' GCRA cells, at most `max` of them, and the overflow cell.
pub(crate) struct Cells {
    cells: papaya::HashMap<CellKey, InMemoryState>,
    overflow: InMemoryState,
    max: usize,
    /// Decisions made against the overflow cell.
    pub(crate) overflowed: AtomicU64,
}

impl Cells {
    pub(crate) fn new(max: usize) -> Cells {
        Cells {
            cells: papaya::HashMap::new(),
            overflow: InMemoryState::default(),
            max,
            overflowed: AtomicU64::new(0),
        }
    }

    /// Decisions made on the overflow cell so far: the limit prunes when
    /// it grows (the map's `len` sums a counter per CPU: not read on every
    /// request, only for a principal without a cell).
    pub(crate) fn overflowed(&self) -> u64 {
        // Relaxed: a counter; a prune that comes a request late is fine.
        self.overflowed.load(Ordering::Relaxed)
    }

    /// The principals with a cell of their own.
    pub(crate) fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether `key` has a cell of its own.
    #[cfg(test)]
    pub(crate) fn holds(&self, key: CellKey) -> bool {
        self.cells.pin().contains_key(&key)
    }
}

impl StateStore for BoundedStore {
    type Key = CellKey;

    fn measure_and_replace<T, F, E>(&self, key: &CellKey, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        let this = &*self.0;
        let cells = this.cells.pin();
        if let Some(cell) = cells.get(key) {
            return cell.measure_and_replace(&NotKeyed::NonKey, f);
        }
        if cells.len() >= this.max {
            // Relaxed: a counter read by /metrics only.
            this.overflowed.fetch_add(1, Ordering::Relaxed);
            return this.overflow.measure_and_replace(&NotKeyed::NonKey, f);
        }
        // Two requests of a new principal may race here: one cell wins,
        // both measure it. The bound may be passed by as many as race.
        let cell = cells.get_or_insert_with(*key, InMemoryState::default);
        cell.measure_and_replace(&NotKeyed::NonKey, f)
    }
}

impl ShrinkableKeyedStateStore<CellKey> for BoundedStore {
    fn retain_recent(&self, drop_below: Nanos) {
        // A cell's theoretical arrival time, read without a change (the
        // decision refused leaves the cell as it was).
        let arrival = |cell: &InMemoryState| {
            cell.measure_and_replace(&NotKeyed::NonKey, Err::<((), Nanos), _>)
                .err()
                .flatten()
        };
        self.0
            .cells
            .pin()
            .retain(|_, cell| arrival(cell).is_some_and(|tat| tat > drop_below));
    }

    fn len(&self) -> usize {
        self.0.cells.len()
    }

    fn is_empty(&self) -> bool {
        self.0.cells.is_empty()
    }
}

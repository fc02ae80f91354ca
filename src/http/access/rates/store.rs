//! The limiter's state, one GCRA cell per principal, bounded in count
//! ([`BoundedStore`]): governor's keyed limiter over a map of ours, so
//! that a flood of principals cannot grow it without end.
//!
//! Up to `max` principals have a cell of their own. Past it, a principal
//! without one is measured against one shared overflow cell (with the
//! same rate) until a prune (`retain_recent`: once a newcomer met the
//! bound, at most once per window, see `limit.rs`) drops the cells of
//! principals back at a full burst (indistinguishable from a new cell, so
//! nothing is forgotten that matters). The principals already known keep their own limits whatever
//! the newcomers do; only the newcomers past the bound share one.

use crate::http::wire::principal::Principal;
use governor::nanos::Nanos;
use governor::state::keyed::ShrinkableKeyedStateStore;
use governor::state::{InMemoryState, NotKeyed, StateStore};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The store the limiter owns: the cells, shared with the owner of the
/// limiter (which reads their count and counters).
pub(crate) struct BoundedStore(pub(crate) Arc<Cells>);

/// Principals' GCRA cells, at most `max` of them, and the overflow cell.
pub(crate) struct Cells {
    cells: papaya::HashMap<Principal, InMemoryState>,
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

    /// Whether `principal` has a cell of its own.
    #[cfg(test)]
    pub(crate) fn holds(&self, principal: &Principal) -> bool {
        self.cells.pin().contains_key(principal)
    }
}

impl StateStore for BoundedStore {
    type Key = Principal;

    fn measure_and_replace<T, F, E>(&self, key: &Principal, f: F) -> Result<T, E>
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
        let cell = cells.get_or_insert_with(key.clone(), InMemoryState::default);
        cell.measure_and_replace(&NotKeyed::NonKey, f)
    }
}

impl ShrinkableKeyedStateStore<Principal> for BoundedStore {
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

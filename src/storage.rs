//! Where the slots live: shards of pages that never move, with a free list
//! each, and the rule for when the storage itself may go.
//!
//! A slot's global index names its page and its place in the page (see
//! `pages.rs`), and through the page its shard. A thread allocates from its home shard (chosen by its
//! thread id), so threads that insert at the same time touch different free
//! lists; when the home shard has nothing, it takes from the others, so the
//! capacity is exact however sessions spread.
//!
//! Slots sit in fixed-size pages (`pages.rs`) allocated on first use and kept
//! until the storage is dropped, so a slot never moves and a reference to it
//! stays valid as long as the storage does. A shard takes fresh slots only
//! when its free list is empty, so the pages grow to the peak number of
//! sessions, not beyond.
//!
//! The storage outlives the [`Registry`](crate::Registry) that built it for as
//! long as any [`Session`](crate::Session) handle remains: see
//! [`Storage::orphan_all`] and [`release`].

use crate::clock::Clock;
use crate::free_list::FreeList;
use crate::lifecycle::{Freed, Release};
use crate::pages::Pages;
use crate::slot::Slot;
use crate::stats::Counters;
use crate::sync::{AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::ptr::NonNull;

/// The parts of a shard that inserting threads write: a cache line of their
/// own, away from the read-mostly page table that every lookup reads.
struct Shard {
    free: FreeList,
    /// How many slots of this shard have ever been handed out fresh.
    fresh: AtomicU64,
    /// This shard's share of the capacity: it never holds more slots.
    limit: u64,
}

/// Configuration the storage needs, validated by the builder.
pub(crate) struct Config {
    pub(crate) capacity: usize,
    pub(crate) shards: usize,
    pub(crate) stripes: usize,
    pub(crate) node: u64,
    pub(crate) idle_timeout_ms: Option<u64>,
    pub(crate) clock: Clock,
}

/// Everything a registry and its handles share.
pub(crate) struct Storage<S> {
    pages: Pages<S>,
    shards: Box<[CachePadded<Shard>]>,
    pub(crate) node: u64,
    pub(crate) clock: Clock,
    pub(crate) idle_timeout_ms: Option<u64>,
    pub(crate) counters: Counters,
    /// Used only once the registry is gone (see `orphan_all`).
    pending: AtomicU64,
}

/// The `pending` count the registry holds while it orphans slots, larger
/// than any number of slots.
const REGISTRY_HOLDS: u64 = 1 << 62;

impl<S> Storage<S> {
    pub(crate) fn new(config: &Config) -> Storage<S> {
        let n = config.shards as u64;
        let capacity = config.capacity as u64;
        Storage {
            pages: Pages::new(n, capacity.div_ceil(n)),
            shards: (0..n)
                .map(|i| {
                    CachePadded::new(Shard {
                        free: FreeList::new(),
                        fresh: AtomicU64::new(0),
                        limit: capacity / n + u64::from(i < capacity % n),
                    })
                })
                .collect(),
            node: config.node,
            clock: config.clock.clone(),
            idle_timeout_ms: config.idle_timeout_ms,
            counters: Counters::new(config.stripes),
            pending: AtomicU64::new(REGISTRY_HOLDS),
        }
    }

    /// The time for activity stamps, or 0 when sessions never expire (so
    /// registries without an idle timeout never read the clock).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        match self.idle_timeout_ms {
            Some(_) => self.clock.now_ms(),
            None => 0,
        }
    }

    /// The slot at global `index`, if its page exists.
    #[inline]
    pub(crate) fn slot(&self, index: u64) -> Option<&Slot<S>> {
        self.pages.get(index)
    }

    /// Takes a free slot, trying shard `home` first: the caller owns the slot
    /// until it publishes it. `None` means every slot is in use.
    pub(crate) fn allocate(&self, home: usize) -> Option<(u64, &Slot<S>)> {
        let mask = self.shards.len() - 1;
        (0..self.shards.len()).find_map(|k| self.take((home + k) & mask))
    }

    /// A free slot of shard `i`, from its free list or fresh.
    fn take(&self, i: usize) -> Option<(u64, &Slot<S>)> {
        let shard = &self.shards[i];
        // Free lists hold global indices (below 2^28: the id's index field).
        let link = |index: u32| {
            self.pages
                .get(u64::from(index))
                .expect("free-listed slots have pages")
                .link()
        };
        if let Some(index) = shard.free.pop(link) {
            let index = u64::from(index);
            let slot = self.pages.get(index).expect("popped slots have pages");
            slot.lifecycle.wait_free();
            return Some((index, slot));
        }
        // Relaxed: the counter only hands out distinct numbers below the
        // limit; the page, not this counter, publishes the slot.
        let mut fresh = shard.fresh.load(Ordering::Relaxed);
        loop {
            if fresh >= shard.limit {
                return None;
            }
            match shard.fresh.compare_exchange_weak(
                fresh,
                fresh + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => fresh = now,
            }
        }
        let index = self.pages.index(i as u64, fresh);
        Some((index, self.pages.get_or_install(index)))
    }

    pub(crate) fn home_shard(&self, tid: usize) -> usize {
        tid & (self.shards.len() - 1)
    }

    /// Every slot that has ever been handed out, with its global index.
    pub(crate) fn used_slots(&self) -> impl Iterator<Item = (u64, &Slot<S>)> {
        self.shards.iter().enumerate().flat_map(move |(i, shard)| {
            // Relaxed: `Pages::get` orders each page; a slot whose page is
            // not installed yet has never held a session.
            let fresh = shard.fresh.load(Ordering::Relaxed);
            (0..fresh).filter_map(move |local| {
                let index = self.pages.index(i as u64, local);
                self.pages.get(index).map(|slot| (index, slot))
            })
        })
    }

    /// Called by the registry as it drops, after it has terminated every
    /// session: marks every slot orphaned, so the last handle of each slot
    /// still held reports back. Returns whether the storage must be freed
    /// now (no handle was left).
    ///
    /// `pending` starts at `REGISTRY_HOLDS`, so that slots settling during
    /// the scan cannot bring it to zero early. Each slot found held, or being
    /// freed, counts one, which its last one out takes away when its `free`
    /// sees the orphan bit (`release`); the registry then takes away its own
    /// share, and whichever subtraction reaches zero frees the storage,
    /// exactly once.
    pub(crate) fn orphan_all(&self) -> bool {
        let held = self
            .used_slots()
            .filter(|(_, slot)| slot.lifecycle.orphan())
            .count() as u64;
        // AcqRel: whoever reaches zero frees the storage, so it must see every
        // other party's accesses (their Release) before it does (Acquire).
        self.pending
            .fetch_sub(REGISTRY_HOLDS - held, Ordering::AcqRel)
            == REGISTRY_HOLDS - held
    }

    /// A guard that gives back a slot taken by `allocate` (still `FREE`,
    /// never published) if it is dropped armed: while an insert's value is
    /// being made, so a panic there does not cost the slot.
    pub(crate) fn give_back_on_unwind<'a>(
        &'a self,
        index: u64,
        slot: &'a Slot<S>,
    ) -> GiveBack<'a, S> {
        GiveBack {
            storage: self,
            index,
            slot,
        }
    }

    /// Gives a freed slot back to its shard's free list.
    fn give_back(&self, index: u64, slot: &Slot<S>) {
        let shard = &self.shards[self.pages.shard_of(index)];
        // Global indices fit the list's 32 bits (the id's index field is 28).
        shard.free.push(index as u32, slot.link());
    }
}

/// See [`Storage::give_back_on_unwind`].
#[must_use]
pub(crate) struct GiveBack<'a, S> {
    storage: &'a Storage<S>,
    index: u64,
    slot: &'a Slot<S>,
}

impl<S> GiveBack<'_, S> {
    /// The slot is being published after all: keep it.
    #[inline(always)]
    pub(crate) fn disarm(self) {
        std::mem::forget(self);
    }
}

impl<S> Drop for GiveBack<'_, S> {
    #[cold]
    fn drop(&mut self) {
        // The slot is `FREE(g)` and ours: back on the list, unchanged.
        self.storage.give_back(self.index, self.slot);
    }
}

/// Who lets go of a slot, which says whether the registry may be gone.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum By {
    /// The registry itself, inside one of its `&self` methods: it cannot be
    /// dropped meanwhile, so nothing can orphan the slot.
    Registry,
    /// A [`Session`](crate::Session) handle, which may outlive the registry.
    Handle,
}

/// Gives back one reference on `slot`, the slot at `index`; the last one out
/// of a terminated session then [`retire`]s it.
///
/// # Safety
///
/// `storage` points to a live `Storage` whose slot at `index` is `slot`, and
/// the caller holds a reference on it, which it gives up here. (A held
/// reference keeps the storage alive: it is freed only after every held slot
/// is released.) `by` is `Registry` only inside a `&self` method of the
/// registry that owns `storage`.
pub(crate) unsafe fn release<S>(
    storage: NonNull<Storage<S>>,
    index: u64,
    slot: NonNull<Slot<S>>,
    by: By,
) {
    // SAFETY: the caller's reference keeps the slot (and its page) alive.
    if unsafe { slot.as_ref() }.lifecycle.release() == Release::Done {
        return;
    }
    // SAFETY: `release` said we are the last one out of a terminated slot;
    // the caller vouches for `by`.
    unsafe { retire(storage, index, slot, by) }
}

/// The last one out's work: drops the value, puts the slot back on its free
/// list and frees it under its next generation; if the registry is gone, it
/// also settles the storage's account and frees it when it was the last.
///
/// The slot is passed as a pointer, not a reference: the storage it lives in
/// may be freed before this returns.
///
/// # Safety
///
/// `storage` points to a live `Storage` whose slot at `index` is `slot`, and
/// the caller is that slot's last one out: it is `TERMINATED` with no refs
/// (`release` returned `LastOut`, or `try_terminate` returned `WonAlone`),
/// and the caller has not retired it yet. `by` is `Registry` only inside a
/// `&self` method of the registry that owns `storage`.
pub(crate) unsafe fn retire<S>(
    storage: NonNull<Storage<S>>,
    index: u64,
    slot: NonNull<Slot<S>>,
    by: By,
) {
    // SAFETY: a slot TERMINATED with no refs is "being freed", which
    // `orphan_all` counts as pending, so the storage stays until our `free`
    // below has settled the count.
    let (shared, slot) = unsafe { (storage.as_ref(), slot.as_ref()) };
    // SAFETY: we are the last one out, and have not dropped the value.
    unsafe { slot.drop_value() };
    shared.give_back(index, slot);
    // The last access to the slot, and to the storage unless orphaned. A
    // registry that is alive (borrowed by our caller) cannot be orphaning
    // the slot, so it frees with a store; a handle must learn, by a swap,
    // whether the registry has gone meanwhile.
    if by == By::Registry {
        slot.lifecycle.free_unorphaned();
        return;
    }
    if slot.lifecycle.free() == Freed::Orphaned {
        // AcqRel: see `Storage::orphan_all`.
        if shared.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: `pending` reached zero: the registry is gone and no
            // slot is held or being freed, so nobody else can reach the
            // storage (`shared` and `slot` are not used again); the registry
            // allocated it as a Box.
            drop(unsafe { Box::from_raw(storage.as_ptr()) });
        }
    }
}

//! Where the slots live: shards of pages that never move, with a free list
//! each; how a slot is taken and given back; and the rule for when the
//! storage itself may go.
//!
//! A slot's global index names its page and its place in the page (see
//! `pages.rs`), and through the page its shard. A thread allocates from its
//! home shard (chosen by its thread id), so threads that insert at the same
//! time touch different free lists; when the home shard has nothing, it
//! takes from the others, and fails only if every shard was out of slots at
//! one same instant, so the capacity is exact however sessions spread.
//!
//! Slots sit in fixed-size pages (`pages.rs`) allocated on first use and kept
//! until the storage is dropped, so a slot never moves and a reference to it
//! stays valid as long as the storage does. A shard takes fresh slots only
//! when its free list is empty, so the pages grow to the peak number of
//! sessions, not beyond.
//!
//! ## Freeing a slot, and why insert never waits
//!
//! The last one out of a terminated slot drops the value, then the slot goes
//! back to `FREE(g+1)` and onto its shard's free list. In which order depends
//! on who it is:
//!
//! * **The registry** (inside one of its `&self` methods, so it cannot be
//!   dropped meanwhile) frees the slot first and pushes it second: a popper
//!   always finds it `FREE`.
//! * **A handle**, which may outlive the registry, pushes first and frees
//!   second, because the free is its last access to the storage and must
//!   tell it whether the registry was dropped meanwhile (see below). A
//!   popper may therefore pop a slot that still reads `TERMINATED(g, 0)`.
//!   It does not wait for the handle's thread (which may be descheduled for
//!   as long as the OS likes): it frees the slot itself, after counting a
//!   *debt* in `pending`; the handle's final CAS then fails, and it settles
//!   the debt instead. So insert is lock-free.
//!
//! The storage outlives the [`Registry`](crate::Registry) that built it for as
//! long as any [`Session`](crate::Session) handle remains: see
//! [`Storage::orphan_all`] and [`release`].

use crate::clock::IdleClock;
use crate::config::{Config, MAX_SHARDS};
use crate::free_list::{Empty, FreeList};
use crate::lifecycle::{Finished, Release};
use crate::pages::Pages;
use crate::slot::Slot;
use crate::stats::Counters;
use crate::sync::{AtomicU64, Ordering};
use crate::wrap::Wrap;
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

/// Everything a registry and its handles share.
pub(crate) struct Storage<S> {
    pages: Pages<S>,
    shards: Box<[CachePadded<Shard>]>,
    pub(crate) node: u64,
    pub(crate) clock: IdleClock,
    pub(crate) counters: Counters,
    pub(crate) generations: Wrap,
    /// What must happen before the storage may be freed: the registry's
    /// share (`REGISTRY_HOLDS`) while it lives, one for each slot held or
    /// being freed when it was dropped, and one for each debt a helping
    /// inserter counted (see the module docs).
    pending: AtomicU64,
}

/// The `pending` count the registry holds while it lives, larger than any
/// number of slots and debts.
const REGISTRY_HOLDS: u64 = 1 << 62;

impl<S> Storage<S> {
    pub(crate) fn new(config: Config) -> Storage<S> {
        let n = config.shards as u64;
        let capacity = config.capacity as u64;
        Storage {
            pages: Pages::new(n, capacity.div_ceil(n)),
            shards: (0..n)
                .map(|i| {
                    CachePadded::new(Shard {
                        free: FreeList::new(config.tags),
                        fresh: AtomicU64::new(0),
                        limit: capacity / n + u64::from(i < capacity % n),
                    })
                })
                .collect(),
            node: config.node,
            clock: config.clock,
            counters: Counters::new(config.stripes),
            generations: config.generations,
            pending: AtomicU64::new(REGISTRY_HOLDS),
        }
    }

    /// The slot at global `index`, if its page exists.
    #[inline]
    pub(crate) fn slot(&self, index: u64) -> Option<&Slot<S>> {
        self.pages.get(index)
    }

    /// Takes a free slot, trying shard `home` first: the caller owns the slot
    /// (it is `FREE`) until it publishes it. `None` means every slot was in
    /// use at one instant during the call.
    ///
    /// Lock-free: it never waits for another thread (see the module docs),
    /// and it retries only when another thread pushed or popped a slot.
    #[inline]
    pub(crate) fn allocate(&self, home: usize) -> Option<(u64, &Slot<S>)> {
        match self.take(home) {
            Ok(taken) => Some(taken),
            Err(_) => self.allocate_elsewhere(home),
        }
    }

    /// The home shard had nothing: look at every shard, and fail only if
    /// they were all empty at once.
    ///
    /// One pass takes from the first shard that has a slot. If none had,
    /// each pass left the head word it found empty; a second look that finds
    /// every head unchanged proves there was an instant (between the two
    /// looks) at which every list was empty and every shard had handed out
    /// all its fresh slots (which stays so): every slot was in use. A head
    /// that changed means a slot was pushed or popped meanwhile: look again.
    ///
    /// "An instant" is a point of the single total order S of SeqCst
    /// operations: every push, pop and fresh take on every shard, and every
    /// load of a head or fresh count here, are SeqCst. A head read twice
    /// with the same value has no push or pop between the two reads in S
    /// (each one moves the tag); so at the point of S after this pass's last
    /// read and before the second look's first, every list was empty.
    /// Acquire/Release alone do not give such a point: loom found a refusal
    /// with a slot free, the push that freed it not yet visible to the
    /// second look although a later write of the same thread was.
    #[cold]
    #[inline(never)]
    fn allocate_elsewhere(&self, home: usize) -> Option<(u64, &Slot<S>)> {
        let n = self.shards.len();
        let mut seen = [Empty(0); MAX_SHARDS];
        loop {
            for k in 0..n {
                let i = (home + k) & (n - 1);
                match self.take(i) {
                    Ok(taken) => return Some(taken),
                    Err(empty) => seen[i] = empty,
                }
            }
            if (0..n).all(|i| self.shards[i].free.head() == seen[i].0) {
                return None;
            }
        }
    }

    /// A free slot of shard `i`, from its free list or fresh; or the empty
    /// head of its free list if it has handed out all its slots.
    #[inline]
    fn take(&self, i: usize) -> Result<(u64, &Slot<S>), Empty> {
        let shard = &self.shards[i];
        // Free lists hold global indices (below 2^26: the id's index field).
        let link = |index: u32| {
            self.pages
                .get(u64::from(index))
                .expect("free-listed slots have pages")
                .link()
        };
        let empty = match shard.free.pop(link) {
            Ok(index) => {
                let index = u64::from(index);
                let slot = self.pages.get(index).expect("popped slots have pages");
                self.claim(slot);
                return Ok((index, slot));
            }
            Err(empty) => empty,
        };
        // SeqCst, load and CAS (success and failure): a count found at the
        // limit is part of what the "every shard empty at once" check
        // reasons about, in the one order of `FreeList::head`. (The page,
        // not this counter, publishes the slot.)
        let mut fresh = shard.fresh.load(Ordering::SeqCst);
        loop {
            if fresh >= shard.limit {
                return Err(empty);
            }
            match shard.fresh.compare_exchange_weak(
                fresh,
                fresh + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => break,
                Err(now) => fresh = now,
            }
        }
        let index = self.pages.index(i as u64, fresh);
        Ok((index, self.pages.get_or_install(index)))
    }

    /// Makes sure a slot just popped is `FREE`, freeing it on behalf of a
    /// handle that pushed it and has not made its last step yet.
    #[inline]
    fn claim(&self, slot: &Slot<S>) {
        let _ = slot.lifecycle.try_help(
            self.generations,
            // Relaxed: the handle reads the helped word (Acquire) after this
            // CAS (Release), which is sequenced after this increment, so the
            // handle's decrement comes after it in `pending`'s order. The
            // registry's share keeps `pending` above zero meanwhile.
            || {
                self.pending.fetch_add(1, Ordering::Relaxed);
            },
            || {
                self.pending.fetch_sub(1, Ordering::Relaxed);
            },
        );
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
    /// now (no handle was left, and no debt is outstanding).
    ///
    /// `pending` holds `REGISTRY_HOLDS` while the registry lives, so that
    /// slots settling during the scan cannot bring it to zero early. Each
    /// slot found held, or being freed, counts one, which its last one out
    /// takes away when its final free sees the orphan bit (`release`); the
    /// registry then takes away its own share, and whichever subtraction
    /// reaches zero frees the storage, exactly once.
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

    /// Puts a slot on its shard's free list.
    fn give_back(&self, index: u64, slot: &Slot<S>) {
        let shard = &self.shards[self.pages.shard_of(index)];
        // Global indices fit the list's 27 bits (the id's index field is 26).
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
///
/// Inline: it is one RMW, in every handle's drop. [`retire`], the rare case
/// for a handle, stays out of line, so that the drop around this inlines
/// into its caller and the handle's fields never go back through memory
/// (loading the 16-byte id that `get` stored as two halves stalled every
/// drop on store forwarding).
#[inline]
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

/// The last one out's work: drops the value, frees the slot under its next
/// generation and puts it back on its free list; if the registry is gone, or
/// an inserter helped, it also settles the storage's account, and frees the
/// storage when it was the last.
///
/// If the value's `Drop` panics, the slot is freed and given back all the
/// same (and the storage settled), and then the panic goes on: it never
/// costs a slot or leaks the storage.
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
#[inline(never)]
pub(crate) unsafe fn retire<S>(
    storage: NonNull<Storage<S>>,
    index: u64,
    slot: NonNull<Slot<S>>,
    by: By,
) {
    /// Frees the slot when dropped: after the value is dropped, or while a
    /// panic from its `Drop` unwinds.
    struct Free<S> {
        storage: NonNull<Storage<S>>,
        index: u64,
        slot: NonNull<Slot<S>>,
        by: By,
    }
    impl<S> Drop for Free<S> {
        fn drop(&mut self) {
            // SAFETY: `retire`'s caller's guarantees, handed to `free` once.
            unsafe { free(self.storage, self.index, self.slot, self.by) }
        }
    }
    let free = Free {
        storage,
        index,
        slot,
        by,
    };
    // SAFETY: we are the last one out, so nobody else touches the slot (a
    // slot being freed is counted as pending by `orphan_all`, so the storage
    // stays), and we have not dropped the value.
    unsafe { slot.as_ref().drop_value() };
    drop(free);
}

/// [`retire`]'s second half, once the value is gone.
///
/// # Safety
///
/// As for `retire`, with the value already dropped.
unsafe fn free<S>(storage: NonNull<Storage<S>>, index: u64, slot: NonNull<Slot<S>>, by: By) {
    // SAFETY: a slot being freed keeps the storage (see `retire`).
    let (shared, slot) = unsafe { (storage.as_ref(), slot.as_ref()) };
    match by {
        By::Registry => {
            // The registry cannot be orphaning the slot, and nobody can pop
            // it before the push: free it, then list it.
            slot.lifecycle.free_unlisted(shared.generations);
            shared.give_back(index, slot);
        }
        By::Handle => {
            // Read before the push: once listed, the slot may be helped
            // free and reused.
            let generation = slot.lifecycle.load().generation();
            shared.give_back(index, slot);
            // The last access to the slot, and to the storage unless the
            // account must be settled. `shared` and `slot` are not used
            // again.
            match slot.lifecycle.finish_free(generation, shared.generations) {
                Finished::Done => {}
                // SAFETY: an orphaned slot that was counted, or a debt that
                // a helper counted for us: ours to take away, once.
                Finished::Orphaned | Finished::Helped => unsafe { settle(storage) },
            }
        }
    }
}

/// Takes one away from the storage's `pending` count, and frees the storage
/// if that brought it to zero.
///
/// # Safety
///
/// The caller owes `pending` one (a counted orphaned slot, or a debt), pays
/// it here, and does not touch the storage afterwards.
unsafe fn settle<S>(storage: NonNull<Storage<S>>) {
    // SAFETY: what the caller owes keeps `pending` above zero until now.
    let pending = unsafe { &storage.as_ref().pending };
    // AcqRel: see `Storage::orphan_all`.
    if pending.fetch_sub(1, Ordering::AcqRel) == 1 {
        // SAFETY: `pending` reached zero: the registry is gone, no slot is
        // held or being freed, and no debt is outstanding, so nobody else can
        // reach the storage; the registry allocated it as a Box.
        drop(unsafe { Box::from_raw(storage.as_ptr()) });
    }
}

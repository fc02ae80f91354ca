//! What a registry and its handles share ([`Storage`]), and how it is let
//! go of: a reference given back ([`release`]); the last one out of a
//! terminated session retiring its slot (dropping the value, freeing the
//! slot under its next generation, putting it back on its free list); an
//! inserter helping a free along instead of waiting for it; and the storage
//! itself freed once the registry and the last handle are gone, whichever
//! goes last ([`Storage::orphan_all`], `settle`).
//!
//! The protocol, and why insert never waits for it, is in the design notes
//! (`src/docs/design.md`: "Freeing a slot, and why insert never waits", "When
//! the registry is dropped before its handles"). Taking a slot is
//! `shards.rs`'s.

use crate::clock::IdleClock;
use crate::config::Config;
use crate::id::SessionId;
use crate::slab::lifecycle::{Finished, Release, Word};
use crate::slab::shards::Shards;
use crate::slab::slot::Slot;
use crate::stats::Counters;
use crate::sync::{AtomicU64, Ordering};
use crate::wrap::Wrap;
use crossbeam_utils::CachePadded;
use std::ptr::NonNull;

/// Everything a registry and its handles share.
pub(crate) struct Storage<S> {
    pub(crate) shards: Shards<S>,
    pub(crate) node: u64,
    pub(crate) clock: IdleClock,
    pub(crate) counters: Counters,
    pub(crate) generations: Wrap,
    /// How many pages budgeted sweep steps have visited: the next one
    /// starts at this count modulo the pages, whoever takes it (`sweep.rs`).
    pub(crate) sweep_cursor: CachePadded<AtomicU64>,
    /// What must happen before the storage may be freed: the registry's
    /// share (`REGISTRY_HOLDS`) while it lives, one for each slot held or
    /// being freed when it was dropped, and one for each debt a helping
    /// inserter counted.
    pending: AtomicU64,
}

/// The `pending` count the registry holds while it lives, larger than any
/// number of slots and debts.
const REGISTRY_HOLDS: u64 = 1 << 62;

impl<S> Storage<S> {
    pub(crate) fn new(config: Config) -> Storage<S> {
        Storage {
            shards: Shards::new(config.capacity, config.shards, config.tags),
            node: config.node,
            clock: config.clock,
            counters: Counters::new(config.stripes, config.outcomes),
            generations: config.generations,
            sweep_cursor: CachePadded::new(AtomicU64::new(0)),
            pending: AtomicU64::new(REGISTRY_HOLDS),
        }
    }

    /// The id of the session in `slot`, the slot at `index`, whose word was
    /// `word`, for a caller that holds the slot (so the generation and the
    /// secret are that session's).
    #[inline]
    pub(crate) fn id_of(&self, index: u64, slot: &Slot<S>, word: Word) -> SessionId {
        SessionId::new(index, word.generation(), self.node, slot.secret())
    }

    /// Takes a free slot, trying shard `home` first: the caller owns the slot
    /// (it is `FREE`) until it publishes it. `None` means every slot was in
    /// use at one instant during the call.
    ///
    /// Lock-free: it never waits for another thread. A popped slot that its
    /// last one out (a handle) has pushed but not freed yet is freed here on
    /// its behalf ([`help`](Self::help)).
    #[inline]
    pub(crate) fn allocate(&self, home: usize) -> Option<(u64, &Slot<S>)> {
        self.shards.allocate(home, |slot| self.help(slot))
    }

    /// Makes sure a slot just popped is `FREE`, freeing it on behalf of a
    /// handle that pushed it and has not made its last step yet, and
    /// counting the debt that handle will settle.
    #[inline]
    fn help(&self, slot: &Slot<S>) {
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
            .shards
            .used_slots()
            .filter(|(_, slot)| slot.lifecycle.orphan())
            .count() as u64;
        // AcqRel: whoever reaches zero frees the storage, so it must see every
        // other party's accesses (their Release) before it does (Acquire).
        self.pending
            .fetch_sub(REGISTRY_HOLDS - held, Ordering::AcqRel)
            == REGISTRY_HOLDS - held
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
/// into its caller.
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
    // SAFETY: we are the last one out, so the slot (and the storage: a slot
    // being freed is counted as pending by `orphan_all`) stays until we free
    // it, and its secret is whole until the push writes the link.
    let held = unsafe { slot.as_ref() };
    held.record_end();
    let free = Free {
        storage,
        index,
        slot,
        by,
    };
    // SAFETY: as above; nobody else touches the value, and we have not
    // dropped it.
    unsafe { held.drop_value() };
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
            shared.shards.give_back(index, slot);
        }
        By::Handle => {
            // Read before the push: once listed, the slot may be helped
            // free and reused.
            let generation = slot.lifecycle.load().generation();
            shared.shards.give_back(index, slot);
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

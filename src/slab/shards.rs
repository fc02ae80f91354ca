//! Where the slots live, and how an insert takes one: [`Shards`], each with
//! a free list, a count of slots handed out fresh and its share of the
//! capacity, over one table of pages that never move (`pages.rs`).
//!
//! A thread takes from its home shard first, then from the others, and is
//! refused only if every shard was out of slots at one same instant, so the
//! capacity is exact however sessions spread. Why that instant exists when
//! it refuses, and how pages grow, are in the design notes
//! (`src/docs/design.md`, "Memory and capacity"). Giving a slot back after
//! its session is the release protocol's, in `storage.rs`.

use crate::config::MAX_SHARDS;
use crate::slab::free_list::{Empty, FreeList};
use crate::slab::occupancy::Occupancy;
use crate::slab::pages::Pages;
use crate::slab::slot::Slot;
use crate::sync::{AtomicU64, Ordering};
use crate::wrap::Wrap;
use crossbeam_utils::CachePadded;

/// The parts of a shard that inserting threads write: a cache line of their
/// own, away from the read-mostly page table that every lookup reads.
struct Shard {
    free: FreeList,
    /// How many slots of this shard have ever been handed out fresh.
    fresh: AtomicU64,
    /// This shard's share of the capacity: it never holds more slots.
    limit: u64,
}

/// Every slot of a registry, in shards.
pub(crate) struct Shards<S> {
    pages: Pages<S>,
    shards: Box<[CachePadded<Shard>]>,
}

impl<S> Shards<S> {
    /// `shards` shards (a power of two) sharing `capacity` slots exactly,
    /// with free-list tags that wrap as `tags` says.
    pub(crate) fn new(capacity: usize, shards: usize, tags: Wrap) -> Shards<S> {
        let n = shards as u64;
        let capacity = capacity as u64;
        Shards {
            pages: Pages::new(n, capacity.div_ceil(n)),
            shards: (0..n)
                .map(|i| {
                    CachePadded::new(Shard {
                        free: FreeList::new(tags),
                        fresh: AtomicU64::new(0),
                        limit: capacity / n + u64::from(i < capacity % n),
                    })
                })
                .collect(),
        }
    }

    /// The slot at global `index`, if its page exists.
    #[inline]
    pub(crate) fn slot(&self, index: u64) -> Option<&Slot<S>> {
        self.pages.get(index)
    }

    /// The slot at global `index`, which the caller holds (see
    /// `Pages::held`).
    ///
    /// # Safety
    ///
    /// As for `Pages::held`.
    #[inline]
    pub(crate) unsafe fn held(&self, index: u64) -> &Slot<S> {
        // SAFETY: the caller's promise.
        unsafe { self.pages.held(index) }
    }

    /// The shard a thread with id `tid` inserts into first.
    pub(crate) fn home_shard(&self, tid: usize) -> usize {
        tid & (self.shards.len() - 1)
    }

    /// Takes a slot, trying shard `home` first. `None` means every slot was
    /// in use at one instant during the call.
    ///
    /// A slot popped from a free list is handed to `claim` first: its last
    /// one out may not have freed it yet (it pushes before it frees, see
    /// `storage.rs`), and `claim` must leave it `FREE`. The caller then owns
    /// the slot until it publishes it or gives it back.
    ///
    /// Lock-free: it retries only when another thread pushed or popped a
    /// slot.
    #[inline]
    pub(crate) fn allocate(
        &self,
        home: usize,
        claim: impl Fn(&Slot<S>),
    ) -> Option<(u64, &Slot<S>)> {
        match self.take(home, &claim) {
            Ok(taken) => Some(taken),
            Err(_) => self.allocate_elsewhere(home, &claim),
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
    fn allocate_elsewhere(
        &self,
        home: usize,
        claim: &impl Fn(&Slot<S>),
    ) -> Option<(u64, &Slot<S>)> {
        let n = self.shards.len();
        let mut seen = [Empty(0); MAX_SHARDS];
        loop {
            for k in 0..n {
                let i = (home + k) & (n - 1);
                match self.take(i, claim) {
                    Ok(taken) => return Some(taken),
                    Err(empty) => seen[i] = empty,
                }
            }
            if (0..n).all(|i| self.shards[i].free.head() == seen[i].0) {
                return None;
            }
        }
    }

    /// A slot of shard `i`, from its free list (claimed) or fresh; or the
    /// empty head of its free list if it has handed out all its slots.
    #[inline]
    fn take(&self, i: usize, claim: &impl Fn(&Slot<S>)) -> Result<(u64, &Slot<S>), Empty> {
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
                claim(slot);
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

    /// Counts a session just published in the slot at global `index` in
    /// its page's occupancy (after the publish: see `occupancy.rs`).
    #[inline]
    pub(crate) fn inserted(&self, index: u64) {
        self.pages.occupancy(index).inserted();
    }

    /// How many pages the table has room for: a sweep's pages are `0..`
    /// this.
    pub(crate) fn pages(&self) -> usize {
        self.pages.entries()
    }

    /// Page `entry`'s occupancy (see `occupancy.rs`).
    pub(crate) fn occupancy(&self, entry: usize) -> &Occupancy {
        self.pages.occupancy_of(entry)
    }

    /// Page `entry`'s slots that have ever been handed out, with their
    /// global indices (none for a page never used).
    ///
    /// Call it after looking at the page's occupancy: the shard's count of
    /// fresh slots handed out is read here, and it must cover every session
    /// the occupancy's count includes (each took its slot before it
    /// published, and counted itself after: the look's Acquire orders this
    /// read after both).
    pub(crate) fn page_slots(&self, entry: usize) -> impl Iterator<Item = (u64, &Slot<S>)> {
        let (shard, page) = self.pages.place(entry);
        let len = self.pages.page_len();
        // Relaxed: ordered after the look at the occupancy (see above);
        // `Pages::get` orders each page.
        let fresh = self.shards[shard].fresh.load(Ordering::Relaxed);
        let used = (page * len)..fresh.min((page + 1) * len);
        used.filter_map(move |local| {
            let index = self.pages.index(shard as u64, local);
            self.pages.get(index).map(|slot| (index, slot))
        })
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

    /// A guard that gives back a slot taken by `allocate` (still `FREE`,
    /// never published) if it is dropped armed: while an insert's value is
    /// being made, so a panic there does not cost the slot.
    pub(crate) fn give_back_on_unwind<'a>(
        &'a self,
        index: u64,
        slot: &'a Slot<S>,
    ) -> GiveBack<'a, S> {
        GiveBack {
            shards: self,
            index,
            slot,
        }
    }

    /// Puts the slot at global `index` on its shard's free list.
    pub(crate) fn give_back(&self, index: u64, slot: &Slot<S>) {
        let shard = &self.shards[self.pages.shard_of(index)];
        // Global indices fit the list's 27 bits (the id's index field is 26).
        shard.free.push(index as u32, slot.link());
    }
}

/// See [`Shards::give_back_on_unwind`].
#[must_use]
pub(crate) struct GiveBack<'a, S> {
    shards: &'a Shards<S>,
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
        self.shards.give_back(self.index, self.slot);
    }
}

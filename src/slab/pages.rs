//! The page table: every slot of every shard, in fixed-size pages that are
//! allocated on first use and never move until the storage is dropped; and
//! beside it each page's occupancy (`occupancy.rs`), which lets a sweep skip
//! the pages with nothing live.
//!
//! The table is flat: page `p` of shard `s` is entry `(p << shard_bits) | s`,
//! and a slot's global index is that page number above the slot's offset in
//! the page. So a lookup finds its page with one shift (`index >> page_shift`),
//! one bounds check and one load of the page pointer: no per-shard
//! indirection on the lookup path. Only allocation and freeing, which know
//! their shard, convert between a shard's own numbering and global indices.

use crate::secret::fresh_secret;
use crate::slab::occupancy::Occupancy;
use crate::slab::slot::Slot;
use crate::sync::{AtomicPtr, Ordering};
use crossbeam_utils::CachePadded;
use std::ptr;

/// Slots per page, at most: 48 KiB pages for pointer-sized values.
const MAX_PAGE: u64 = 1024;

/// Occupancies per cache line (two words each). A shard's pages' share
/// lines, no two shards one: inserters into different shards write no line
/// in common. (One under loom: models have a page or two.)
#[cfg(not(sessionreg_loom))]
const PER_LINE: usize = 8;
#[cfg(sessionreg_loom)]
const PER_LINE: usize = 1;

pub(crate) struct Pages<S> {
    table: Box<[AtomicPtr<Slot<S>>]>,
    /// The pages' occupancies, shard by shard (see `occupancy_of`).
    occupancy: Box<[CachePadded<[Occupancy; PER_LINE]>]>,
    /// A shard's run of occupancies is `1 << occupancy_shift` long (whole
    /// lines, a power of two so that finding one is a shift and an OR).
    occupancy_shift: u32,
    shard_bits: u32,
    page_shift: u32,
    /// `page_len - 1`: a slot's offset in its page is its index's low bits.
    /// (Kept, not computed from `page_shift`: three instructions fewer on
    /// every lookup and every handle's access to its slot.)
    offset_mask: u64,
}

impl<S> Pages<S> {
    /// A table for `shards` shards (a power of two) of at most `per_shard`
    /// slots each.
    pub(crate) fn new(shards: u64, per_shard: u64) -> Pages<S> {
        let page = per_shard.next_power_of_two().clamp(1, MAX_PAGE);
        let pages = per_shard.div_ceil(page) * shards;
        let run = (per_shard.div_ceil(page).div_ceil(PER_LINE as u64) * PER_LINE as u64)
            .next_power_of_two()
            .max(PER_LINE as u64);
        let lines = run / PER_LINE as u64 * shards;
        Pages {
            table: (0..pages)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            occupancy: (0..lines)
                .map(|_| CachePadded::new(std::array::from_fn(|_| Occupancy::new())))
                .collect(),
            occupancy_shift: run.trailing_zeros(),
            shard_bits: shards.trailing_zeros(),
            page_shift: page.trailing_zeros(),
            offset_mask: page - 1,
        }
    }

    /// How many pages the table has room for (entries, installed or not).
    pub(crate) fn entries(&self) -> usize {
        self.table.len()
    }

    /// The slots a page holds (the last page of a shard may have more than
    /// the shard's limit: those are never handed out).
    pub(crate) fn page_len(&self) -> u64 {
        1 << self.page_shift
    }

    /// Which shard page `entry` of the table belongs to, and which of that
    /// shard's pages it is.
    #[inline]
    pub(crate) fn place(&self, entry: usize) -> (usize, u64) {
        let shard = entry & ((1 << self.shard_bits) - 1);
        (shard, (entry >> self.shard_bits) as u64)
    }

    /// The occupancy of page `entry`: the shard's pages side by side, each
    /// shard's on lines of its own.
    #[inline]
    // `PER_LINE` is one under loom.
    #[cfg_attr(sessionreg_loom, allow(clippy::modulo_one))]
    pub(crate) fn occupancy_of(&self, entry: usize) -> &Occupancy {
        let (shard, page) = self.place(entry);
        let at = (shard << self.occupancy_shift) | page as usize;
        &self.occupancy[at / PER_LINE][at % PER_LINE]
    }

    /// The occupancy of the page of the slot at global `index`.
    #[inline]
    pub(crate) fn occupancy(&self, index: u64) -> &Occupancy {
        self.occupancy_of((index >> self.page_shift) as usize)
    }

    /// The global index of the `local`-th slot of shard `shard`.
    pub(crate) fn index(&self, shard: u64, local: u64) -> u64 {
        let page = ((local >> self.page_shift) << self.shard_bits) | shard;
        (page << self.page_shift) | (local & self.offset_mask)
    }

    /// The shard that the slot at global `index` belongs to.
    pub(crate) fn shard_of(&self, index: u64) -> usize {
        ((index >> self.page_shift) & ((1 << self.shard_bits) - 1)) as usize
    }

    /// Where the slot at global `index` sits: its page's cell, and its offset
    /// in the page.
    #[inline]
    fn locate(&self, index: u64) -> Option<(&AtomicPtr<Slot<S>>, usize)> {
        let (page, offset) = self.split(index);
        Some((self.table.get(page)?, offset))
    }

    /// The table entry of the slot at global `index`, and its offset in
    /// that page.
    #[inline]
    fn split(&self, index: u64) -> (usize, usize) {
        (
            (index >> self.page_shift) as usize,
            (index & self.offset_mask) as usize,
        )
    }

    /// The slot at global `index`, if its page exists.
    ///
    /// Slots past a shard's limit in its last page exist but are never handed
    /// out: they stay `FREE(0)`, which no id names.
    #[inline]
    pub(crate) fn get(&self, index: u64) -> Option<&Slot<S>> {
        let (cell, offset) = self.locate(index)?;
        // Acquire: pairs with the Release CAS that installed the page, so the
        // slots' initial state is visible.
        let page = cell.load(Ordering::Acquire);
        if page.is_null() {
            return None;
        }
        // SAFETY: an installed page is an allocation of `page_len` slots that
        // stays until the table is dropped (which needs `&mut`), and
        // `offset < page_len`.
        Some(unsafe { &*page.add(offset) })
    }

    /// The slot at global `index`, for a caller that holds a reference on
    /// it: no bounds check, no check for a page.
    ///
    /// # Safety
    ///
    /// The caller holds a reference on the slot at `index` of this table
    /// (which therefore is within it, in an installed page).
    #[inline]
    pub(crate) unsafe fn held(&self, index: u64) -> &Slot<S> {
        let (page, offset) = self.split(index);
        debug_assert!(page < self.table.len());
        // SAFETY: a held slot's index is within the table (the caller's
        // promise).
        let cell = unsafe { self.table.get_unchecked(page) };
        // Relaxed: the reference was taken on a slot of this page after the
        // page was seen installed (an Acquire load, in `get` or
        // `get_or_install`), and that happens before this holder's use of
        // it; a cell is written once, so coherence alone makes this load
        // return that same pointer.
        let page = cell.load(Ordering::Relaxed);
        debug_assert!(!page.is_null());
        // SAFETY: an installed page is an allocation of `page_len` slots
        // that stays until the table is dropped, and `offset < page_len`.
        unsafe { &*page.add(offset) }
    }

    /// The slot at global `index`, allocating its page if nobody has yet.
    ///
    /// # Panics
    ///
    /// If `index` is beyond the table (callers hand out only indices below
    /// their shard's limit).
    pub(crate) fn get_or_install(&self, index: u64) -> &Slot<S> {
        if let Some(slot) = self.get(index) {
            return slot;
        }
        let (cell, _) = self.locate(index).expect("index within the table");
        // Random words in place of the digests of previous sessions the
        // slots never had, so that no id one generation behind a fresh slot
        // matches one (see `Slot::ended_digest`).
        let page: Box<[Slot<S>]> = (0..self.page_len())
            .map(|_| Slot::new(fresh_secret().high))
            .collect();
        let page = Box::into_raw(page) as *mut Slot<S>;
        // AcqRel: Release publishes the new page's initialised slots; Acquire
        // (on failure too) sees those of the page another thread installed.
        if let Err(_other) =
            cell.compare_exchange(ptr::null_mut(), page, Ordering::AcqRel, Ordering::Acquire)
        {
            // SAFETY: `page` came from `Box::into_raw` of a slice of
            // `page_len` slots just above and was never shared.
            drop(unsafe {
                Box::from_raw(ptr::slice_from_raw_parts_mut(
                    page,
                    self.page_len() as usize,
                ))
            });
        }
        self.get(index).expect("the page is installed")
    }
}

impl<S> Drop for Pages<S> {
    fn drop(&mut self) {
        for page in self.table.iter() {
            let page = page.load(Ordering::Relaxed);
            if !page.is_null() {
                // SAFETY: installed pages come from `Box::into_raw` of a slice
                // of `page_len` slots; we have `&mut self`, so nobody else
                // uses them. Every value has been dropped already (see
                // `storage::retire`): a `Slot` drops none itself.
                drop(unsafe {
                    Box::from_raw(ptr::slice_from_raw_parts_mut(
                        page,
                        self.page_len() as usize,
                    ))
                });
            }
        }
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    /// Every page has an occupancy of its own, and the pages of different
    /// shards never share a cache line of them.
    #[test]
    fn every_page_has_its_own_occupancy_and_shards_share_no_line() {
        for (shards, per_shard) in [(1, 1), (4, 2500), (8, 1 << 16), (2, 3 * 1024 + 1)] {
            let pages = Pages::<u8>::new(shards, per_shard);
            let mut seen = std::collections::HashMap::new();
            for entry in 0..pages.entries() {
                let at = pages.occupancy_of(entry) as *const Occupancy as usize;
                let (shard, _) = pages.place(entry);
                assert!(seen.insert(at, shard).is_none(), "two pages share one");
            }
            let line = std::mem::align_of::<CachePadded<u8>>();
            let mut lines = std::collections::HashMap::new();
            for (at, shard) in seen {
                let other = lines.insert(at / line, shard);
                assert!(
                    other.is_none_or(|other| other == shard),
                    "shards share a line"
                );
            }
        }
    }

    #[test]
    fn every_index_of_every_shard_has_its_own_slot() {
        // 4 shards of up to 2500 slots: 3 pages of 1024 each.
        let pages = Pages::<u8>::new(4, 2500);
        let mut seen = std::collections::HashSet::new();
        let mut indices = std::collections::HashSet::new();
        for shard in 0..4u64 {
            for local in 0..2500u64 {
                let index = pages.index(shard, local);
                assert!(indices.insert(index), "two slots share an index");
                assert_eq!(pages.shard_of(index), shard as usize);
                let slot = pages.get_or_install(index) as *const Slot<u8>;
                assert!(seen.insert(slot as usize), "two indices share a slot");
                assert_eq!(pages.get(index).map(|s| s as *const _), Some(slot));
            }
        }
        // Every index is below the table's end; beyond it, no slot.
        assert!(indices.iter().all(|&i| i < 12 * 1024));
        assert!(pages.get(12 * 1024).is_none());
    }
}

//! Whether a page of slots may hold a live session: what lets a sweep skip
//! the pages that do not, so that it costs what is live and not every slot
//! ever used.
//!
//! Two words per page:
//!
//! * `inserted`: how many sessions have been published in the page, bumped
//!   by each insert *after* it publishes (Release);
//! * `swept`: what the last sweep of the whole page found: the `inserted`
//!   count it read before it looked at the slots, and how many slots it saw
//!   live.
//!
//! ```text
//!  63                          16 15          0
//! +------------------------------+-------------+
//! |  inserted, as read (48)      | live (16)   |   swept
//! +------------------------------+-------------+
//! ```
//!
//! A sweep skips the page when the last sweep saw nothing live and nothing
//! has been inserted since it read `inserted`. That is safe, because a
//! sweep reads `inserted` (Acquire) before it looks at the slots, so it sees
//! every session whose insert that count includes (each published before its
//! bump); a session inserted later moves `inserted` on, and the page is
//! looked at again. Sessions that end do not touch these words: the page
//! counts as occupied until a sweep has seen it empty. Sweeps that race
//! store `swept` in any order, which is harmless: every record says "no
//! live session among the first `inserted` inserts", true when it was made
//! and while no insert follows.
//!
//! The cost on the hot path is the one `fetch_add` per insert, on a line
//! that the inserters into the page (a shard's threads, which share its
//! free list's head already) write. The 48-bit count would wrap after 2^48
//! inserts into one page; a sweep skips the page wrongly only if a whole
//! multiple of that happens between its record and the next look.

use crate::pack::Field;
use crate::sync::{AtomicU64, Ordering};

const LIVE: Field = Field::lowest(16);
const INSERTED: Field = LIVE.then(48);
const _: () = assert!(INSERTED.end() == 64);

/// One page's occupancy.
pub(crate) struct Occupancy {
    inserted: AtomicU64,
    swept: AtomicU64,
}

/// What a sweep read before it looked at a page's slots: to be recorded
/// with what it found ([`Occupancy::record`]).
#[must_use]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen(u64);

impl Occupancy {
    pub(crate) fn new() -> Occupancy {
        Occupancy {
            inserted: AtomicU64::new(0),
            swept: AtomicU64::new(0),
        }
    }

    /// Counts a session just published in the page.
    ///
    /// Release, after the publish: a sweep that reads this count (Acquire)
    /// sees the session live.
    #[inline]
    pub(crate) fn inserted(&self) {
        self.inserted.fetch_add(1, Ordering::Release);
    }

    /// Whether the page may hold a live session, for a sweep about to look
    /// at it: `None` if it is empty since the last sweep's record.
    ///
    /// Acquire on both: `swept`, so that `inserted` reads no older than
    /// the count recorded in it; `inserted`, so that the sweep sees every
    /// session that count includes.
    #[inline]
    pub(crate) fn look(&self) -> Option<Seen> {
        let swept = self.swept.load(Ordering::Acquire);
        let inserted = self.inserted.load(Ordering::Acquire);
        let empty = LIVE.get(swept) == 0 && INSERTED.get(swept) == inserted & INSERTED.max();
        (!empty).then_some(Seen(inserted))
    }

    /// Records that a sweep which looked with `seen` found `live` sessions
    /// live in the page's slots.
    ///
    /// Release: a later look that reads this record reads `inserted` no
    /// older than `seen`.
    #[inline]
    pub(crate) fn record(&self, seen: Seen, live: u64) {
        let live = live.min(LIVE.max());
        let word = INSERTED.set(LIVE.set(0, live), seen.0 & INSERTED.max());
        self.swept.store(word, Ordering::Release);
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_skipped_only_while_nothing_is_inserted_after_a_sweep_saw_it_empty() {
        let page = Occupancy::new();
        // Never used: empty.
        assert!(page.look().is_none());
        page.inserted();
        let seen = page.look().expect("an insert since");
        // A session inserted while the sweep looks: not in its record.
        page.inserted();
        page.record(seen, 0);
        let seen = page
            .look()
            .expect("inserted after the sweep read the count");
        page.record(seen, 1);
        let seen = page.look().expect("one live");
        page.record(seen, 0);
        assert!(page.look().is_none(), "seen empty, nothing since");
        // Records that race may land in any order: an older one never hides
        // an insert that came after it.
        let old = page.look();
        assert!(old.is_none());
        page.inserted();
        let new = page.look().expect("an insert since");
        page.record(new, 1);
        page.record(Seen(new.0 - 1), 0);
        assert!(page.look().is_some());
    }
}

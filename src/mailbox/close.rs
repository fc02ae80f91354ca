//! The end of a mailbox: [`Mailbox::close`] (one `fetch_or`, whose winner
//! drops what was queued) and the walk over the written slots that it and
//! `Drop` share.

use super::queue::Mailbox;
use super::word::{CLOSED, LEN, TAIL};
use crate::panic::{resume, Caught};
use crate::sync::Ordering;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What [`Mailbox::close`] did.
#[must_use = "only the call that won closed the mailbox (and dropped what was queued)"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closing {
    /// This call closed the mailbox and dropped the items queued in it.
    Won,
    /// Another call had closed it. The mailbox is closed now; the winner
    /// may still be dropping the items.
    AlreadyClosed,
}

impl Closing {
    /// Whether this call closed the mailbox.
    pub fn is_won(&self) -> bool {
        matches!(self, Closing::Won)
    }
}

impl<T> Mailbox<T> {
    /// Closes the mailbox: no push is queued and no pop yields an item after
    /// it, and the call that closes it drops every item queued then (its
    /// winner). Never waits: an item whose push reserved its place before
    /// the close and is still writing it is dropped with the mailbox.
    ///
    /// If an item's `Drop` panics, the others are still dropped, and then
    /// the first panic propagates (unless the thread is already unwinding:
    /// then it is swallowed, as a second panic would abort).
    pub fn close(&self) -> Closing {
        // Acquire: pairs with every pop's Release commit (through the
        // word's release sequence: every change of it is an RMW), so the
        // stamps read below are at least as new as the ones those pops
        // read: each is the current lap's, written or not yet, never an
        // older lap's (one 256 laps old would read as written). The items
        // themselves are ordered by their stamps' Release/Acquire. (The
        // loom models cannot tell this from Relaxed: a stamp one lap behind
        // reads as not written, and `Drop` drops that item instead.)
        let word = self.state.fetch_or(CLOSED.mask(), Ordering::Acquire);
        if CLOSED.get(word) != 0 {
            return Closing::AlreadyClosed;
        }
        resume(self.drop_written(word, Ordering::Acquire));
        Closing::Won
    }

    /// Drops the written items of the positions `word` says are queued,
    /// marking each slot empty first; keeps the first panic of an item's
    /// `Drop` and goes on. `order` loads the stamps.
    ///
    /// The caller owns those positions: a close that won (no push reserves
    /// and no pop commits after its `fetch_or`), or `Drop` (`&mut self`).
    pub(super) fn drop_written(&self, word: u64, order: Ordering) -> Caught {
        let (tail, len) = (TAIL.get(word), LEN.get(word));
        let mut caught: Caught = None;
        for k in 0..len {
            let position = tail.wrapping_sub(len - k) & TAIL.max();
            let slot = self.slot(position);
            let written = self.written(position);
            // A position the caller owns reads `written` (its push has
            // published) or one less (reserved, not written yet: its push
            // will write it after a close, and `Drop` drops it).
            let stamp = self.stamps[slot].load(order);
            debug_assert!(
                stamp == written || stamp == written.wrapping_sub(1),
                "slot {slot}: stamp {stamp} for position {position}"
            );
            if stamp != written {
                continue;
            }
            // SAFETY: the stamp says the value is written (and the Acquire
            // load, or `&mut self`, orders that write before this), and the
            // caller owns the position: nobody else takes it out. A pop may
            // be copying it at this moment (its commit will find `closed`
            // and forget the copy): two reads, no write.
            let item = self.values[slot].with(|value| unsafe { (*value).assume_init_read() });
            // Relaxed: only `Drop` reads it again, after everything this
            // call does (it holds `&mut`). Marked before the item's drop,
            // so a panicking `Drop` leaves it marked.
            self.stamps[slot].store(written.wrapping_sub(1), Ordering::Relaxed);
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| drop(item))) {
                caught.get_or_insert(panic);
            }
        }
        caught
    }
}

impl<T> Drop for Mailbox<T> {
    /// Drops every item still in the ring: queued and never popped, or
    /// written after a close by a push that had reserved its place before
    /// it. If an item's `Drop` panics, the others are still dropped, and
    /// then the first panic propagates (swallowed if the thread is already
    /// unwinding).
    fn drop(&mut self) {
        // Relaxed, here and for the stamps: `&mut self`, so every push, pop
        // and close has happened before.
        let word = self.state.load(Ordering::Relaxed);
        resume(self.drop_written(word, Ordering::Relaxed));
    }
}

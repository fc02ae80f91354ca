//! The consumer's side: [`Consumer::pop`] and
//! [`Consumer::take_signals`], each one read of the state word and at most
//! one RMW.

use super::queue::{Consumer, Mailbox};
use super::signals::{Signals, Taken};
use super::word::{CLOSED, LEN, RAISED, TAIL};
use crate::sync::{Arc, Ordering};

/// What [`Consumer::pop`] found.
#[must_use = "an item popped is delivered: dropping it loses it"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Popped<T> {
    /// The oldest item.
    Item(T),
    /// Nothing to take now: no item, or the oldest is still being written
    /// by a push that has not returned (and will wake the consumer when it
    /// has). Register the waker and pop again (see [`Mailbox`]).
    Empty,
    /// The mailbox is closed: no item will ever come out of it.
    Closed,
}

impl<T> Consumer<T> {
    /// Takes the oldest item, if its push has written it.
    ///
    /// Never waits; wait-free (one RMW). After a [`close`](Mailbox::close)
    /// that happened before this call (it woke this consumer, say),
    /// [`Popped::Closed`]; an item a pop returns was committed before any
    /// close.
    pub fn pop(&mut self) -> Popped<T> {
        let mailbox = &*self.mailbox;
        // Relaxed: this consumer's own last commit, and anything that
        // happened before this call (a close, the push that woke it), is
        // seen by coherence; the slot's contents are ordered by its stamp.
        let word = mailbox.state.load(Ordering::Relaxed);
        if CLOSED.get(word) != 0 {
            return Popped::Closed;
        }
        let len = LEN.get(word);
        if len == 0 {
            return Popped::Empty;
        }
        // Only this consumer lowers `len`, and pushes raise `len` and
        // `tail` together: this position stays the consumer's until it
        // commits.
        let position = TAIL.get(word).wrapping_sub(len) & TAIL.max();
        let slot = mailbox.slot(position);
        // Acquire: pairs with the push's Release store, so its value is
        // seen whole below.
        if mailbox.stamps[slot].load(Ordering::Acquire) != mailbox.written(position) {
            // Reserved, not written yet.
            return Popped::Empty;
        }
        // SAFETY: the stamp says the value is written, and its position is
        // counted in `len`, so no push writes this slot until the commit
        // below (the one consumer is this `&mut self`). A close may be
        // reading it too (two reads); then the commit finds `closed`, the
        // close owns the item, and this copy is forgotten (`MaybeUninit`
        // drops nothing).
        let copy = mailbox.values[slot].with(|value| unsafe { value.read() });
        // Release: the read above happens before the write of the push that
        // reuses the slot (its Acquire CAS reads this RMW's release
        // sequence), and before a close's Acquire `fetch_or`.
        let before = mailbox.state.fetch_sub(LEN.one(), Ordering::Release);
        if CLOSED.get(before) != 0 {
            // The close came first: the item is its to drop (or, if not
            // written when it looked, `Drop`'s). Give `len` back, so that
            // `Drop` finds the positions the close left. Relaxed: nobody
            // reads `len` of a closed mailbox until `Drop`, which `&mut`
            // orders after this.
            mailbox.state.fetch_add(LEN.one(), Ordering::Relaxed);
            return Popped::Closed;
        }
        // SAFETY: the commit took the position, so the copy is the item,
        // moved out: nobody else reads or drops it (the slot counts as free).
        Popped::Item(unsafe { copy.assume_init() })
    }

    /// Takes every signal that is up (see [`Signal`](super::Signal)), leaving them down.
    ///
    /// Never waits; wait-free (a load, and one RMW only when a signal is
    /// up). After a [`close`](Mailbox::close) that happened before this
    /// call, [`Taken::Closed`]; signals it returns were raised before any
    /// close, and cleared before it.
    pub fn take_signals(&mut self) -> Taken {
        let state = &self.mailbox.state;
        // Relaxed: a look for the common case, nothing up; a raise that
        // happened before this call (the one that woke it) is seen by
        // coherence, as in `pop`.
        let word = state.load(Ordering::Relaxed);
        if CLOSED.get(word) != 0 {
            return Taken::Closed;
        }
        if RAISED.get(word) == 0 {
            return Taken::None;
        }
        // Acquire: pairs with the raises' Release (see `raise`).
        let before = state.fetch_and(!RAISED.mask(), Ordering::Acquire);
        if CLOSED.get(before) != 0 {
            // The close came first: the signals died with it.
            return Taken::Closed;
        }
        // Only this consumer clears them: what the load saw up is up still.
        Taken::Signals(Signals(RAISED.get(before) as u8))
    }

    /// The mailbox this consumer pops from (to close it, or to push).
    pub fn mailbox(&self) -> &Arc<Mailbox<T>> {
        &self.mailbox
    }
}

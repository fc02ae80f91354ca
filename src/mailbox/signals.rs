//! Signals: flags beside a mailbox's items that carry no value and
//! coalesce. A raise is one `fetch_or` of its bit; the consumer takes them
//! all at once ([`Consumer::take_signals`](super::Consumer::take_signals)(super::Consumer::take_signals)).

use super::queue::Mailbox;
use super::word::{CLOSED, RAISED, SIGNALS};
use crate::sync::Ordering;

/// One of a mailbox's [`SIGNALS`] signals: a flag beside its items that
/// carries no value, raised by any thread ([`Mailbox::raise`]) and taken by
/// the consumer ([`Consumer::take_signals`](super::Consumer::take_signals)). Raising one that is up already
/// changes nothing: signals coalesce, so they suit news whose repeats say
/// nothing more ("the list changed") and that must never fill the queue.
///
/// Signals are not ordered with the items: a signal raised after a push may
/// be taken before the item is popped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signal(pub(super) u8);

impl Signal {
    /// Signal `index`, if it is under [`SIGNALS`].
    pub const fn new(index: u32) -> Option<Signal> {
        if index < SIGNALS {
            Some(Signal(index as u8))
        } else {
            None
        }
    }

    /// Its index, under [`SIGNALS`].
    pub const fn index(self) -> u32 {
        self.0 as u32
    }

    /// Its bit in the state word.
    pub(super) const fn bit(self) -> u64 {
        RAISED.one() << self.0
    }
}

/// A set of signals, as [`Consumer::take_signals`](super::Consumer::take_signals) finds them raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Signals(pub(super) u8);

impl Signals {
    /// Whether `signal` is in the set.
    pub fn contains(self, signal: Signal) -> bool {
        self.0 & (1 << signal.0) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The signals in the set, lowest index first.
    pub fn iter(self) -> impl Iterator<Item = Signal> {
        (0..SIGNALS as u8)
            .filter(move |i| self.0 & (1 << i) != 0)
            .map(Signal)
    }
}

/// What [`Mailbox::raise`] did.
#[must_use = "a signal that went up must wake the consumer"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raised {
    /// The signal was down and is up now: wake the consumer.
    Up,
    /// The signal was up already, not taken yet: nothing changed, and the
    /// raise that put it up wakes the consumer (this one need not).
    AlreadyUp,
    /// The mailbox is closed: no signal will be taken from it.
    Closed,
}

/// What [`Consumer::take_signals`](super::Consumer::take_signals) found.
#[must_use = "signals taken are cleared: dropping them loses them"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// These signals were up (never empty); they are down now.
    Signals(Signals),
    /// No signal is up.
    None,
    /// The mailbox is closed: no signal will ever come out of it.
    Closed,
}

impl<T> Mailbox<T> {
    /// Raises `signal` (see [`Signal`]), unless the mailbox is closed. Never
    /// waits, never fails for want of room: one `fetch_or`, wait-free.
    ///
    /// Wake the consumer after [`Raised::Up`], as after a queued push; the
    /// consumer's protocol (pop, register, pop again) covers signals when it
    /// takes them at each of its two looks.
    pub fn raise(&self, signal: Signal) -> Raised {
        // Release: what the raiser did before it happens before the take
        // that clears the bit (its Acquire RMW reads this one, or a later
        // RMW of the word's release sequence).
        let before = self.state.fetch_or(signal.bit(), Ordering::Release);
        if CLOSED.get(before) != 0 {
            Raised::Closed
        } else if before & signal.bit() != 0 {
            Raised::AlreadyUp
        } else {
            Raised::Up
        }
    }
}

//! [`Outcome`]: a value set once, by whichever of several racing callers
//! gets there first. What a task's end is made of: completion, failure,
//! cancellation and expiry may all try to end it, and one compare-and-swap
//! picks the one that does.
//!
//! ```text
//!   OPEN ──CAS (one winner)──▶ WRITING ──store, Release──▶ SET
//! ```
//!
//! The winner of the CAS is the only writer of the value, and writes it
//! before the Release store that publishes it; a reader that loads `SET`
//! with Acquire sees the value whole. Losers get their value back. A reader
//! that finds `WRITING` sees no outcome yet (`get` is `None`), although one
//! is decided ([`is_decided`](Outcome::is_decided)): for a task, it still
//! reads as running for the few instructions the winner takes to write.

use crate::sync::{AtomicU8, Ordering, UnsafeCell};
use std::fmt;
use std::mem::MaybeUninit;

const OPEN: u8 = 0;
const WRITING: u8 = 1;
const SET: u8 = 2;

/// A value set at most once; of the callers racing to set it, exactly one
/// wins.
///
/// ```
/// use sessionreg::{Outcome, Settle};
///
/// let outcome = Outcome::new();
/// assert_eq!(outcome.settle("completed"), Settle::Won);
/// assert_eq!(outcome.settle("cancelled"), Settle::Lost("cancelled"));
/// assert_eq!(outcome.get(), Some(&"completed"));
/// ```
pub struct Outcome<T> {
    state: AtomicU8,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written once, by the CAS winner alone, before the
// Release store of `SET`; after that it is only read (`&T`, from any thread:
// `T: Sync`) and dropped by the owner of the `Outcome` (`T: Send`).
unsafe impl<T: Send + Sync> Sync for Outcome<T> {}
// SAFETY: moving the cell moves the value it may hold (`T: Send`).
unsafe impl<T: Send> Send for Outcome<T> {}

/// What [`Outcome::settle`] did.
#[must_use = "only the caller that won may act on the outcome (run its callback, count it)"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle<T> {
    /// This call set the outcome: its value is the one.
    Won,
    /// Another call had set it (or was setting it): this call's value,
    /// handed back.
    Lost(T),
}

impl<T> Settle<T> {
    /// Whether this call set the outcome.
    pub fn is_won(&self) -> bool {
        matches!(self, Settle::Won)
    }
}

impl<T> Outcome<T> {
    /// An outcome not decided yet.
    #[cfg(not(all(sessionreg_loom, feature = "loom")))]
    pub const fn new() -> Outcome<T> {
        Outcome {
            state: AtomicU8::new(OPEN),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// An outcome not decided yet.
    #[cfg(all(sessionreg_loom, feature = "loom"))]
    pub fn new() -> Outcome<T> {
        Outcome {
            state: AtomicU8::new(OPEN),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Sets the outcome to `value`, unless it is decided already.
    pub fn settle(&self, value: T) -> Settle<T> {
        // Relaxed on both sides: the winner reads nothing another thread
        // wrote (it writes the value, then publishes it with the Release
        // store below), and a loser only learns that it lost.
        if self
            .state
            .compare_exchange(OPEN, WRITING, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return Settle::Lost(value);
        }
        // SAFETY: the CAS from OPEN succeeds once in the cell's life, so
        // this thread is the only one ever to write the value, and no reader
        // touches it before the store of SET below.
        self.value.with_mut(|slot| unsafe { (*slot).write(value) });
        // Release: publishes the value to readers that load SET (Acquire).
        self.state.store(SET, Ordering::Release);
        Settle::Won
    }

    /// The outcome, once set.
    #[inline]
    pub fn get(&self) -> Option<&T> {
        // Acquire: pairs with the winner's Release store, so the value it
        // wrote before is visible here.
        if self.state.load(Ordering::Acquire) != SET {
            return None;
        }
        // SAFETY: SET is stored once, after the value was written, and the
        // value is never written again nor dropped while `&self` lives.
        Some(self.value.with(|slot| unsafe { (*slot).assume_init_ref() }))
    }

    /// Whether a call has won (its value may still be being written: then
    /// [`get`](Outcome::get) is still `None`).
    #[inline]
    pub fn is_decided(&self) -> bool {
        // Relaxed: a yes/no about the CAS alone; nothing is read after it.
        self.state.load(Ordering::Relaxed) != OPEN
    }
}

impl<T> Default for Outcome<T> {
    fn default() -> Outcome<T> {
        Outcome::new()
    }
}

impl<T> Drop for Outcome<T> {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, so every other access has happened before.
        // A cell dropped while WRITING cannot be: the winner holds `&self`
        // until it has stored SET.
        if self.state.load(Ordering::Relaxed) == SET {
            // SAFETY: SET means the value was written, and this is its only
            // drop.
            self.value
                .with_mut(|slot| unsafe { (*slot).assume_init_drop() });
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Outcome<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.get() {
            Some(value) => f.debug_tuple("Outcome").field(value).finish(),
            None if self.is_decided() => f.write_str("Outcome(<being set>)"),
            None => f.write_str("Outcome(<open>)"),
        }
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Barrier};

    #[test]
    fn of_many_racing_settlers_exactly_one_wins_and_its_value_stays() {
        for _ in 0..200 {
            let outcome = Arc::new(Outcome::new());
            let barrier = Arc::new(Barrier::new(4));
            let winners: Vec<_> = (0..4)
                .map(|i| {
                    let (outcome, barrier) = (Arc::clone(&outcome), Arc::clone(&barrier));
                    std::thread::spawn(move || {
                        barrier.wait();
                        outcome.settle(i).is_won().then_some(i)
                    })
                })
                .collect();
            let won: Vec<_> = winners
                .into_iter()
                .filter_map(|t| t.join().unwrap())
                .collect();
            assert_eq!(won.len(), 1);
            assert_eq!(outcome.get(), Some(&won[0]));
        }
    }

    #[test]
    fn the_value_is_dropped_once_with_the_cell_and_a_loser_gets_its_own_back() {
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let outcome = Outcome::new();
        assert!(outcome.get().is_none() && !outcome.is_decided());
        assert!(outcome.settle(Counted(Arc::clone(&drops))).is_won());
        let Settle::Lost(back) = outcome.settle(Counted(Arc::clone(&drops))) else {
            panic!("a second settle lost");
        };
        drop(back);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 1);
        drop(outcome);
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Never set: nothing to drop.
        drop(Outcome::<Counted>::new());
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}

//! The mailbox's state word: one `AtomicU64` on which every push, pop,
//! raise, take and close decides.
//!
//! One state word holds everything a decision needs:
//!
//! ```text
//!  63   62     60 59             39 38                          0
//! +------+---------+----------------+-----------------------------+
//! |closed| signals |    len (21)    |          tail (39)          |
//! |      |   (3)   |                |                             |
//! +------+---------+----------------+-----------------------------+
//! ```
//!
//! * `tail` is the next position a push takes; `len` the positions taken
//!   and not yet popped, so the consumer's position is `tail - len`. A
//!   position `p` lives in slot `p mod R` of a ring of `R` slots (`R` the
//!   capacity rounded up to a power of two), on lap `p / R`.
//! * A **push** reserves `tail` with one CAS (`len + 1`, `tail + 1`) that
//!   expects the word open and `len` under the capacity, writes its value
//!   into the slot, and publishes it with a Release store of the slot's
//!   *stamp*: one byte, the slot's lap (mod 256) plus one.
//! * A **pop** reads the word, checks the stamp of its position, copies the
//!   value out of the slot and only then *commits* with one `fetch_sub` of
//!   `len`. The copy comes first so that a slot never counts as free while
//!   it is being read (a push may reuse it the moment `len` falls), and the
//!   commit is an RMW so that it is ordered against `close`.
//! * **Close** is one `fetch_or` of `closed`. The call that sets the bit wins;
//!   the word it read says which positions hold items (`tail - len` up to
//!   `tail`), and it drops those whose stamp says they are written. No push
//!   reserves, and no pop commits, after it.
//! * Beside the items, the word holds [`SIGNALS`] **signals**: flags that
//!   carry no value and coalesce ("the list changed": two changes before the
//!   consumer looks say no more than one). A **raise** is one `fetch_or` of
//!   its bit, which never fails and needs no slot; the consumer **takes**
//!   them all with one `fetch_and` that clears them. A raise after the close
//!   is refused, and a take after it finds the mailbox closed.
//!
//! Every push, pop, raise, take and close decides on this one word, so they
//! are all totally ordered by its modification order, and close is
//! linearizable: a pop returns an item (a take, signals) only if its commit
//! came before the close, a push is queued (a raise raised) only if its
//! reservation did; anything after sees `closed`.
//!
//! ```text
//!  slot stamp:  lap(p)  ──push of p: value written, store lap(p)+1 (Release)──▶  lap(p)+1
//!               (free for p)                                                    (holds p's item)
//!  a pop of p leaves it lap(p)+1, which is lap(p+R): free for the next lap's push.
//!  a close that drops p's item stores lap(p) back: the slot holds nothing.
//! ```
//!
//! A push between its reservation and its publish holds its position: the
//! consumer finds that position's stamp not written yet and reports
//! [`Popped::Empty`], even if later positions are written (it never skips
//! one). If that push then meets a close, its item stays in the slot,
//! unreachable, and is dropped with the mailbox (`Drop`). `docs/design.md`
//! states the orderings, the progress of each operation and what a
//! panicking `Drop` of an item does.

use crate::pack::Field;

/// The next position a push takes (positions wrap at 2^39).
pub(super) const TAIL: Field = Field::lowest(39);
/// The positions taken and not yet popped.
pub(super) const LEN: Field = TAIL.then(21);
/// The signals that are up, one bit each.
pub(super) const RAISED: Field = LEN.then(SIGNALS);
/// Set once, by the close that wins.
pub(super) const CLOSED: Field = RAISED.then(1);
const _: () = assert!(CLOSED.end() == 64);
const _: () = assert!(LEN.max() >= MAX_CAPACITY as u64, "len holds every count");
// Positions wrap at 2^39. A slot's index and its lap mod 256 must read the
// same on both sides of that wrap: R (at most MAX_CAPACITY, a power of two)
// divides 2^39, and so does 256 R.
const _: () = assert!(MAX_CAPACITY.is_power_of_two());
const _: () = assert!(TAIL.bits() >= MAX_CAPACITY.trailing_zeros() + 8);

/// How many distinct signals a mailbox carries beside its items (see
/// [`Signal`](super::Signal)): the mailbox's own capacity for them, fixed by
/// the width its state word gives them. A user with more kinds of news than
/// this needs a second mailbox (a user asserts its count against this at
/// compile time).
pub const SIGNALS: u32 = 3;

/// The largest capacity a mailbox takes (2^20): the ring is allocated whole
/// at creation, and a mailbox is a queue of work one consumer falls behind
/// on, so a larger one is refused rather than allocated.
pub const MAX_CAPACITY: usize = 1 << 20;

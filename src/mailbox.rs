//! [`Mailbox`]: a bounded queue that many threads push into, one
//! [`Consumer`] pops from, and any thread may close, once. What a listen
//! stream is made of: every publisher pushes an event into each matching
//! listener's mailbox without a lock and without allocating, the listener's
//! stream pops, and the listener's end closes it.
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
use crate::sync::{Arc, AtomicU64, AtomicU8, Ordering, UnsafeCell};
use std::any::Any;
use std::fmt;
use std::mem::MaybeUninit;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

const TAIL: Field = Field::lowest(39);
const LEN: Field = TAIL.then(21);
const RAISED: Field = LEN.then(SIGNALS);
const CLOSED: Field = RAISED.then(1);
const _: () = assert!(CLOSED.end() == 64);
const _: () = assert!(LEN.max() >= MAX_CAPACITY as u64, "len holds every count");
// Positions wrap at 2^39. A slot's index and its lap mod 256 must read the
// same on both sides of that wrap: R (at most MAX_CAPACITY, a power of two)
// divides 2^39, and so does 256 R.
const _: () = assert!(MAX_CAPACITY.is_power_of_two());
const _: () = assert!(TAIL.bits() >= MAX_CAPACITY.trailing_zeros() + 8);

/// How many distinct signals a mailbox carries beside its items (see
/// [`Signal`]).
pub const SIGNALS: u32 = 3;

/// The largest capacity a mailbox takes (2^20): the ring is allocated whole
/// at creation, and a mailbox is a queue of work one consumer falls behind
/// on, so a larger one is refused rather than allocated.
pub const MAX_CAPACITY: usize = 1 << 20;

/// A bounded multi-producer, single-consumer queue with a linearizable
/// close.
///
/// Pushes come from any thread, through `&Mailbox`; pops from the one
/// [`Consumer`]; [`close`](Mailbox::close) from any thread, once. Items are
/// popped in the order their pushes reserved their places (so in order for
/// each producer). Nothing allocates after [`with_capacity`](Mailbox::with_capacity).
///
/// ```
/// use sessionreg::mailbox::{Closing, Mailbox, Popped, Pushed};
///
/// let (mailbox, mut consumer) = Mailbox::with_capacity(2).unwrap();
/// assert_eq!(mailbox.push("a"), Pushed::Queued);
/// assert_eq!(mailbox.push("b"), Pushed::Queued);
/// assert_eq!(mailbox.push("c"), Pushed::Full("c"), "never grows, never waits");
/// assert_eq!(consumer.pop(), Popped::Item("a"));
///
/// // The one close wins, and drops what is still queued ("b").
/// assert_eq!(mailbox.close(), Closing::Won);
/// assert_eq!(mailbox.close(), Closing::AlreadyClosed);
/// assert!(matches!(consumer.pop(), Popped::Closed));
/// assert_eq!(mailbox.push("d"), Pushed::Closed("d"));
/// ```
///
/// # Waking the consumer
///
/// The mailbox does not wake anyone: pair it with a waker cell (such as
/// `futures`' `AtomicWaker`). Every producer whose push is
/// [`Queued`](Pushed::Queued), and whoever closes, wakes after the call; the
/// consumer pops, and only when that finds nothing registers its waker and
/// pops **again** before it sleeps:
///
/// ```text
/// match consumer.pop() { Empty => {}, done => return Ready(done) }
/// waker.register(cx.waker());
/// match consumer.pop() { Empty => Pending, done => Ready(done) }
/// ```
///
/// A push that lands between the two pops is seen by the second; one that
/// lands after it wakes the registered waker. A consumer that also takes
/// [signals](Signal) takes them at both looks, and every raise that puts one
/// up ([`Raised::Up`]) wakes, as a queued push does.
/// A position whose push is still
/// writing reads as `Empty` even when later ones are written; its producer
/// wakes the consumer when it has written it, so nothing behind it is lost.
pub struct Mailbox<T> {
    /// `closed`, `len`, `tail` (see the module's diagram).
    state: AtomicU64,
    /// How many items it holds at most.
    capacity: u64,
    /// `R - 1`, for a position's slot.
    mask: u64,
    /// `log2 R`, for a position's lap.
    shift: u32,
    /// Each slot's lap (mod 256), plus one once its value is written.
    stamps: Box<[AtomicU8]>,
    /// The values; a slot's is initialised exactly while its stamp says so
    /// for a position between the consumer's and `tail`.
    values: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

// SAFETY: items move in (push) and out (pop, close, drop) by value, from
// whichever thread calls; no `&T` is ever handed out. So sending them
// between threads (`T: Send`) is all sharing the mailbox needs. Which thread
// may touch which slot, and when, is argued at each access.
unsafe impl<T: Send> Sync for Mailbox<T> {}
// SAFETY: moving the mailbox moves the items it holds (`T: Send`).
unsafe impl<T: Send> Send for Mailbox<T> {}

/// The receiving end of a [`Mailbox`]: the only way to pop, and there is
/// one per mailbox (it is not `Clone`, and [`pop`](Consumer::pop) takes
/// `&mut self`), so at most one pop runs at a time. The pop's protocol needs
/// that: it reads its slot before it commits.
pub struct Consumer<T> {
    mailbox: Arc<Mailbox<T>>,
}

/// What [`Mailbox::push`] did.
#[must_use = "an item not queued is handed back: drop it on purpose, or act on why (a full mailbox's consumer has fallen behind)"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed<T> {
    /// The item is queued: it will be popped, or dropped by the close or
    /// with the mailbox. Wake the consumer.
    Queued,
    /// The mailbox held its capacity: the item, handed back. Nothing
    /// waits and nothing grows; a caller that must not lose events ends the
    /// consumer that fell behind.
    Full(T),
    /// The mailbox is closed: the item, handed back.
    Closed(T),
}

impl<T> Pushed<T> {
    /// Whether the item was queued.
    pub fn is_queued(&self) -> bool {
        matches!(self, Pushed::Queued)
    }

    /// The item handed back, if it was not queued.
    pub fn into_inner(self) -> Option<T> {
        match self {
            Pushed::Queued => None,
            Pushed::Full(item) | Pushed::Closed(item) => Some(item),
        }
    }
}

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

/// One of a mailbox's [`SIGNALS`] signals: a flag beside its items that
/// carries no value, raised by any thread ([`Mailbox::raise`]) and taken by
/// the consumer ([`Consumer::take_signals`]). Raising one that is up already
/// changes nothing: signals coalesce, so they suit news whose repeats say
/// nothing more ("the list changed") and that must never fill the queue.
///
/// Signals are not ordered with the items: a signal raised after a push may
/// be taken before the item is popped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signal(u8);

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
    const fn bit(self) -> u64 {
        RAISED.one() << self.0
    }
}

/// A set of signals, as [`Consumer::take_signals`] finds them raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Signals(u8);

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

/// What [`Consumer::take_signals`] found.
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

/// Why [`Mailbox::with_capacity`] refused a capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacityError {
    /// A mailbox holds at least one item.
    Zero,
    /// Over [`MAX_CAPACITY`]; the capacity asked for.
    TooLarge(usize),
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapacityError::Zero => f.write_str("a mailbox's capacity must be at least 1"),
            CapacityError::TooLarge(n) => write!(
                f,
                "mailbox capacity {n} is over the maximum of {MAX_CAPACITY}"
            ),
        }
    }
}

impl std::error::Error for CapacityError {}

/// The first panic a walk over the slots caught, to be raised again once it
/// is done.
type Caught = Option<Box<dyn Any + Send>>;

impl<T> Mailbox<T> {
    /// A mailbox holding at most `capacity` items (1 to [`MAX_CAPACITY`]),
    /// and its one consumer.
    ///
    /// The ring is allocated here, once: `capacity` rounded up to a power of
    /// two slots of `size_of::<T>() + 1` bytes (64 `Arc`s: 576 bytes; a
    /// capacity that is a power of two wastes none).
    pub fn with_capacity(capacity: usize) -> Result<(Arc<Mailbox<T>>, Consumer<T>), CapacityError> {
        let mailbox = Arc::new(Mailbox::new(capacity, 0)?);
        let consumer = Consumer {
            mailbox: Arc::clone(&mailbox),
        };
        Ok((mailbox, consumer))
    }

    /// A mailbox whose first position is `start` (as if `start` items had
    /// been pushed and popped): tests reach the wrap of positions with it.
    fn new(capacity: usize, start: u64) -> Result<Mailbox<T>, CapacityError> {
        if capacity == 0 {
            return Err(CapacityError::Zero);
        }
        if capacity > MAX_CAPACITY {
            return Err(CapacityError::TooLarge(capacity));
        }
        let slots = capacity.next_power_of_two();
        let (mask, shift) = (slots as u64 - 1, slots.trailing_zeros());
        let start = start & TAIL.max();
        // Each slot free for the first position at or after `start` that
        // lands in it: its stamp is that position's lap.
        let stamps = (0..slots as u64)
            .map(|slot| {
                let position = start.wrapping_add(slot.wrapping_sub(start) & mask) & TAIL.max();
                AtomicU8::new((position >> shift) as u8)
            })
            .collect();
        let values = (0..slots)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect();
        Ok(Mailbox {
            state: AtomicU64::new(TAIL.set(0, start)),
            capacity: capacity as u64,
            mask,
            shift,
            stamps,
            values,
        })
    }

    /// Queues `item`, or hands it back if the mailbox is full or closed.
    /// Never waits, never allocates.
    pub fn push(&self, item: T) -> Pushed<T> {
        // Relaxed: a first guess at the word, which the CAS checks; a refusal
        // below reads nothing another thread wrote but this word.
        let mut word = self.state.load(Ordering::Relaxed);
        let position = loop {
            if CLOSED.get(word) != 0 {
                return Pushed::Closed(item);
            }
            let len = LEN.get(word);
            if len == self.capacity {
                return Pushed::Full(item);
            }
            let tail = TAIL.get(word);
            let next = TAIL.set(LEN.set(word, len + 1), (tail + 1) & TAIL.max());
            // Acquire on success: `len` under the capacity means the pop
            // that last used this slot (position `tail - R`, behind the
            // consumer's) has committed; its Release `fetch_sub` heads a
            // release sequence (every later change of the word is an RMW)
            // that this CAS reads from, so its read of the slot happens
            // before the write below. Relaxed on failure: only a new guess.
            match self
                .state
                .compare_exchange_weak(word, next, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break tail,
                Err(now) => word = now,
            }
        };
        let slot = self.slot(position);
        // SAFETY: the CAS gave this call position `position`, which no other
        // push can take; the slot's previous item was read out before its
        // pop committed (ordered before this by the Acquire above), and
        // nobody reads this slot until the stamp below says it is written.
        self.values[slot].with_mut(|value| unsafe { (*value).write(item) });
        // Release: the consumer (and a close) that load this stamp with
        // Acquire then see the value whole.
        self.stamps[slot].store(self.written(position), Ordering::Release);
        Pushed::Queued
    }

    /// Brings close the memory the next [`push`](Self::push) writes (the
    /// slot's stamp and value at the current tail): what a caller that
    /// pushes into many mailboxes in turn calls a few mailboxes ahead, so
    /// that their cache misses overlap. Only a hint: a push between this and
    /// the caller's may move the tail.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn prefetch_push(&self) {
        // Relaxed: a guess at the tail for a hint; nothing is read through
        // it.
        let tail = TAIL.get(self.state.load(Ordering::Relaxed));
        let slot = self.slot(tail);
        crate::prefetch::prefetch(&self.stamps[slot]);
        crate::prefetch::prefetch(&self.values[slot]);
    }

    /// Where this mailbox's state word is: for a caller to prefetch it
    /// before it can read it (see [`prefetch_push`](Self::prefetch_push)).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn prefetch_state(&self) {
        crate::prefetch::prefetch(&self.state);
    }

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
        raise(self.drop_written(word, Ordering::Acquire));
        Closing::Won
    }

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

    /// Whether the mailbox is closed.
    pub fn is_closed(&self) -> bool {
        // Relaxed: a yes/no about the one word; nothing is read after it.
        CLOSED.get(self.state.load(Ordering::Relaxed)) != 0
    }

    /// How many items are queued (counting those whose push is still writing
    /// them); 0 once closed. A snapshot: pushes and pops move it on.
    pub fn len(&self) -> usize {
        // Relaxed: one word, read whole.
        let word = self.state.load(Ordering::Relaxed);
        if CLOSED.get(word) != 0 {
            return 0;
        }
        LEN.get(word) as usize
    }

    /// Whether no item is queued (or the mailbox is closed).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most items it holds.
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }

    /// The slot of `position`.
    #[inline]
    fn slot(&self, position: u64) -> usize {
        (position & self.mask) as usize
    }

    /// The stamp of a slot holding `position`'s item: its lap, plus one.
    /// (It is also the stamp of the slot free for the next lap's position.)
    #[inline]
    fn written(&self, position: u64) -> u8 {
        ((position >> self.shift) as u8).wrapping_add(1)
    }

    /// Drops the written items of the positions `word` says are queued,
    /// marking each slot empty first; keeps the first panic of an item's
    /// `Drop` and goes on. `order` loads the stamps.
    ///
    /// The caller owns those positions: a close that won (no push reserves
    /// and no pop commits after its `fetch_or`), or `Drop` (`&mut self`).
    fn drop_written(&self, word: u64, order: Ordering) -> Caught {
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

    /// Takes every signal that is up (see [`Signal`]), leaving them down.
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
        raise(self.drop_written(word, Ordering::Relaxed));
    }
}

fn raise(caught: Caught) {
    if let Some(panic) = caught {
        // Not while the thread unwinds: a second panic would abort.
        if !std::thread::panicking() {
            resume_unwind(panic);
        }
    }
}

impl<T> fmt::Debug for Mailbox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mailbox")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Consumer").field(&*self.mailbox).finish()
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;
    use std::sync::atomic::AtomicBool;
    use std::sync::Mutex;

    /// Counts how often each item was dropped.
    #[derive(Default)]
    struct Drops(Mutex<Vec<usize>>);

    impl Drops {
        fn item(self: &Arc<Self>, panics: bool) -> Item {
            let mut drops = self.0.lock().unwrap();
            drops.push(0);
            Item {
                id: drops.len() - 1,
                panics,
                drops: Arc::clone(self),
            }
        }

        fn of(&self, id: usize) -> usize {
            self.0.lock().unwrap()[id]
        }

        fn all(&self) -> Vec<usize> {
            self.0.lock().unwrap().clone()
        }
    }

    #[derive(Debug)]
    struct Boom;

    struct Item {
        id: usize,
        panics: bool,
        drops: Arc<Drops>,
    }

    impl Drop for Item {
        fn drop(&mut self) {
            self.drops.0.lock().unwrap()[self.id] += 1;
            if self.panics && !std::thread::panicking() {
                std::panic::panic_any(Boom);
            }
        }
    }

    impl fmt::Debug for Item {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Item({})", self.id)
        }
    }

    fn id(popped: Popped<Item>) -> Option<usize> {
        match popped {
            Popped::Item(item) => Some(item.id),
            Popped::Empty => None,
            Popped::Closed => panic!("closed"),
        }
    }

    /// A mailbox whose positions start at `start`, with its consumer.
    fn starting_at<T>(capacity: usize, start: u64) -> (Arc<Mailbox<T>>, Consumer<T>) {
        let mailbox = Arc::new(Mailbox::new(capacity, start).unwrap());
        let consumer = Consumer {
            mailbox: Arc::clone(&mailbox),
        };
        (mailbox, consumer)
    }

    #[test]
    fn first_in_first_out_refused_at_exactly_the_capacity() {
        // 3 items in a ring of 4 slots: the bound is the capacity, not the ring.
        let (mailbox, mut consumer) = Mailbox::with_capacity(3).unwrap();
        assert_eq!(mailbox.capacity(), 3);
        assert_eq!(consumer.pop(), Popped::Empty);
        for i in 0..3 {
            assert_eq!(mailbox.push(i), Pushed::Queued);
        }
        assert_eq!(mailbox.len(), 3);
        assert_eq!(mailbox.push(3), Pushed::Full(3));
        assert_eq!(consumer.pop(), Popped::Item(0));
        assert_eq!(mailbox.push(3), Pushed::Queued);
        assert_eq!(mailbox.push(4).into_inner(), Some(4));
        for i in 1..4 {
            assert_eq!(consumer.pop(), Popped::Item(i));
        }
        assert_eq!(consumer.pop(), Popped::Empty);
        assert!(mailbox.is_empty() && !mailbox.is_closed());
    }

    #[test]
    fn bad_capacities_are_refused_with_a_reason() {
        let zero = Mailbox::<u8>::with_capacity(0).unwrap_err();
        assert_eq!(zero, CapacityError::Zero);
        assert!(zero.to_string().contains("at least 1"), "{zero}");
        let big = Mailbox::<u8>::with_capacity(MAX_CAPACITY + 1).unwrap_err();
        assert_eq!(big, CapacityError::TooLarge(MAX_CAPACITY + 1));
        assert!(big.to_string().contains("maximum"), "{big}");
        let (mailbox, mut consumer) = Mailbox::<()>::with_capacity(MAX_CAPACITY).unwrap();
        for _ in 0..MAX_CAPACITY {
            assert!(mailbox.push(()).is_queued());
        }
        assert_eq!(mailbox.push(()), Pushed::Full(()));
        assert_eq!(mailbox.len(), MAX_CAPACITY);
        assert_eq!(consumer.pop(), Popped::Item(()));
    }

    #[test]
    fn close_has_one_winner_drops_what_is_queued_and_refuses_after() {
        let drops = Arc::new(Drops::default());
        let (mailbox, mut consumer) = Mailbox::with_capacity(4).unwrap();
        for _ in 0..3 {
            assert!(mailbox.push(drops.item(false)).is_queued());
        }
        assert_eq!(id(consumer.pop()), Some(0));
        assert_eq!(drops.all(), [1, 0, 0], "a popped item is the caller's");
        assert_eq!(mailbox.close(), Closing::Won);
        assert_eq!(drops.all(), [1, 1, 1], "the close dropped what was queued");
        assert_eq!(mailbox.close(), Closing::AlreadyClosed);
        assert!(mailbox.is_closed() && mailbox.is_empty());
        assert!(matches!(consumer.pop(), Popped::Closed));
        let Pushed::Closed(back) = mailbox.push(drops.item(false)) else {
            panic!("a push after the close was queued");
        };
        assert_eq!(back.id, 3);
        drop(back);
        drop((mailbox, consumer));
        assert_eq!(drops.all(), [1, 1, 1, 1], "nothing dropped twice");
    }

    #[test]
    fn dropping_the_mailbox_drops_what_is_queued_once() {
        let drops = Arc::new(Drops::default());
        let (mailbox, mut consumer) = Mailbox::with_capacity(2).unwrap();
        assert!(mailbox.push(drops.item(false)).is_queued());
        assert!(mailbox.push(drops.item(false)).is_queued());
        assert_eq!(id(consumer.pop()), Some(0));
        assert!(mailbox.push(drops.item(false)).is_queued());
        drop(consumer);
        assert_eq!(drops.all(), [1, 0, 0]);
        drop(mailbox);
        assert_eq!(drops.all(), [1, 1, 1]);
    }

    #[test]
    fn slot_laps_wrap_past_the_stamps_byte() {
        // One slot: every push is a new lap of it; 1000 laps wrap the
        // stamp's byte several times.
        for capacity in [1, 2, 3] {
            let (mailbox, mut consumer) = Mailbox::with_capacity(capacity).unwrap();
            let mut next = 0;
            for i in 0..1000 {
                assert_eq!(mailbox.push(i), Pushed::Queued);
                if mailbox.len() == capacity {
                    assert_eq!(mailbox.push(i), Pushed::Full(i));
                    while let Popped::Item(got) = consumer.pop() {
                        assert_eq!(got, next);
                        next += 1;
                    }
                }
            }
            while let Popped::Item(got) = consumer.pop() {
                assert_eq!(got, next);
                next += 1;
            }
            assert_eq!(next, 1000);
        }
    }

    #[test]
    fn positions_wrap_at_the_tail_fields_end() {
        // Start a few positions before the 39-bit tail wraps to zero, and go
        // across it: pushes, pops, a close and the drop all find their
        // items on the other side.
        for capacity in [1, 3, 4] {
            let drops = Arc::new(Drops::default());
            let (mailbox, mut consumer) = starting_at(capacity, TAIL.max() - 4);
            let mut popped = Vec::new();
            for round in 0..6 {
                for _ in 0..=round % capacity {
                    assert!(mailbox.push(drops.item(false)).is_queued());
                }
                while let Some(id) = id(consumer.pop()) {
                    popped.push(id);
                }
            }
            assert!(
                TAIL.get(mailbox.state.load(Ordering::Relaxed)) < 100,
                "wrapped"
            );
            assert_eq!(popped, (0..popped.len()).collect::<Vec<_>>());
            // Queued across the wrap, then closed: dropped once, by the close.
            for _ in 0..capacity {
                assert!(mailbox.push(drops.item(false)).is_queued());
            }
            let n = drops.all().len();
            assert_eq!(mailbox.close(), Closing::Won);
            assert!(drops.all().iter().all(|d| *d == 1), "{:?}", drops.all());
            drop((mailbox, consumer));
            assert_eq!(drops.all(), vec![1; n]);
        }
        // The same, left to `Drop`.
        let drops = Arc::new(Drops::default());
        let (mailbox, consumer) = starting_at::<Item>(4, TAIL.max() - 1);
        for _ in 0..4 {
            assert!(mailbox.push(drops.item(false)).is_queued());
        }
        drop((mailbox, consumer));
        assert_eq!(drops.all(), [1, 1, 1, 1]);
    }

    #[test]
    fn a_panicking_drop_in_close_leaves_none_behind() {
        let drops = Arc::new(Drops::default());
        let (mailbox, mut consumer) = Mailbox::with_capacity(4).unwrap();
        for panics in [false, true, false, true] {
            assert!(mailbox.push(drops.item(panics)).is_queued());
        }
        assert_eq!(id(consumer.pop()), Some(0));
        let panic = catch_unwind(AssertUnwindSafe(|| mailbox.close())).unwrap_err();
        assert!(panic.is::<Boom>());
        assert_eq!(drops.all(), [1, 1, 1, 1], "the rest still dropped");
        assert!(mailbox.is_closed());
        assert!(matches!(consumer.pop(), Popped::Closed));
        assert_eq!(mailbox.close(), Closing::AlreadyClosed);
        drop((mailbox, consumer));
        assert_eq!(drops.all(), [1, 1, 1, 1], "and not again by the drop");
    }

    #[test]
    fn a_panicking_drop_in_drop_leaves_none_behind() {
        let drops = Arc::new(Drops::default());
        let (mailbox, consumer) = Mailbox::with_capacity(3).unwrap();
        for panics in [true, false, true] {
            assert!(mailbox.push(drops.item(panics)).is_queued());
        }
        drop(consumer);
        let panic = catch_unwind(AssertUnwindSafe(|| drop(mailbox))).unwrap_err();
        assert!(panic.is::<Boom>());
        assert_eq!(drops.all(), [1, 1, 1]);
    }

    #[test]
    fn a_mailbox_dropped_while_unwinding_swallows_its_items_panics() {
        let drops = Arc::new(Drops::default());
        let result = catch_unwind(AssertUnwindSafe(|| {
            let (mailbox, _consumer) = Mailbox::with_capacity(2).unwrap();
            // `Item` skips its planned panic while the thread unwinds; one
            // that panics regardless is what reaches `Drop` here.
            struct Always {
                _item: Item,
            }
            impl Drop for Always {
                fn drop(&mut self) {
                    std::panic::panic_any(Boom);
                }
            }
            assert!(mailbox
                .push(Always {
                    _item: drops.item(false)
                })
                .is_queued());
            assert!(mailbox
                .push(Always {
                    _item: drops.item(false)
                })
                .is_queued());
            panic!("unwinding");
        }));
        // Not aborted: the items' panics were caught and swallowed, and the
        // first panic is the one that comes out.
        let panic = result.unwrap_err();
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"unwinding"));
        assert_eq!(drops.all(), [1, 1]);
    }

    #[test]
    fn two_producers_one_consumer_lose_and_duplicate_nothing_in_order() {
        const EACH: usize = 20_000;
        let (mailbox, mut consumer) = Mailbox::with_capacity(8).unwrap();
        let producers: Vec<_> = (0..2)
            .map(|who| {
                let mailbox = Arc::clone(&mailbox);
                std::thread::spawn(move || {
                    let mut full = 0;
                    for i in 0..EACH {
                        let mut item = (who, i);
                        loop {
                            match mailbox.push(item) {
                                Pushed::Queued => break,
                                Pushed::Full(back) => {
                                    full += 1;
                                    item = back;
                                    std::thread::yield_now();
                                }
                                Pushed::Closed(_) => panic!("never closed"),
                            }
                        }
                    }
                    full
                })
            })
            .collect();
        let mut next = [0; 2];
        while next != [EACH; 2] {
            match consumer.pop() {
                Popped::Item((who, i)) => {
                    assert_eq!(i, next[who], "producer {who}'s items out of order");
                    next[who] += 1;
                }
                Popped::Empty => std::thread::yield_now(),
                Popped::Closed => panic!("never closed"),
            }
        }
        for producer in producers {
            producer.join().unwrap();
        }
        assert_eq!(consumer.pop(), Popped::Empty);
    }

    #[test]
    fn close_racing_pushes_and_pops_no_item_after_it_each_once() {
        for round in 0..50 {
            let drops = Arc::new(Drops::default());
            let (mailbox, mut consumer) = Mailbox::with_capacity(4).unwrap();
            let closed = Arc::new(AtomicBool::new(false));
            let producers: Vec<_> = (0..2)
                .map(|_| {
                    let (mailbox, drops) = (Arc::clone(&mailbox), Arc::clone(&drops));
                    std::thread::spawn(move || {
                        let mut queued = Vec::new();
                        loop {
                            let item = drops.item(false);
                            let id = item.id;
                            match mailbox.push(item) {
                                Pushed::Queued => queued.push(id),
                                Pushed::Full(back) => {
                                    drop(back);
                                    std::thread::yield_now();
                                }
                                Pushed::Closed(back) => {
                                    assert_eq!(back.id, id);
                                    return queued;
                                }
                            }
                        }
                    })
                })
                .collect();
            let consumer = {
                let (closed, drops) = (Arc::clone(&closed), Arc::clone(&drops));
                std::thread::spawn(move || {
                    let mut popped = Vec::new();
                    loop {
                        let after_close = closed.load(Ordering::Acquire);
                        match consumer.pop() {
                            Popped::Item(item) => {
                                assert!(!after_close, "an item popped after the close");
                                assert_eq!(drops.of(item.id), 0);
                                popped.push(item.id);
                            }
                            Popped::Empty => std::thread::yield_now(),
                            Popped::Closed => return (popped, consumer),
                        }
                    }
                })
            };
            std::thread::sleep(std::time::Duration::from_micros(50 * (round % 5)));
            assert_eq!(mailbox.close(), Closing::Won);
            closed.store(true, Ordering::Release);
            let queued: Vec<usize> = producers
                .into_iter()
                .flat_map(|p| p.join().unwrap())
                .collect();
            let (popped, consumer) = consumer.join().unwrap();
            drop((mailbox, consumer));
            // Every item was dropped once: popped ones by the consumer (after
            // it recorded them), queued ones by the close or the drop,
            // refused ones by their producers.
            assert!(drops.all().iter().all(|d| *d == 1), "round {round}");
            let mut both: Vec<usize> = popped.clone();
            both.retain(|id| !queued.contains(id));
            assert!(both.is_empty(), "popped but never queued: {both:?}");
        }
    }

    #[test]
    fn signals_coalesce_are_taken_once_and_die_with_the_close() {
        let (mailbox, mut consumer) = Mailbox::with_capacity(1).unwrap();
        let [a, b, c] = [0, 1, 2].map(|i| Signal::new(i).unwrap());
        assert_eq!(Signal::new(SIGNALS), None);
        assert_eq!(consumer.take_signals(), Taken::None);
        assert_eq!(mailbox.raise(a), Raised::Up);
        assert_eq!(mailbox.raise(a), Raised::AlreadyUp, "coalesced");
        assert_eq!(mailbox.raise(c), Raised::Up);
        // A full queue does not refuse a signal, and a signal takes no
        // place in the queue.
        assert_eq!(mailbox.push(7), Pushed::Queued);
        assert_eq!(mailbox.push(8), Pushed::Full(8));
        assert_eq!(mailbox.len(), 1);
        let Taken::Signals(up) = consumer.take_signals() else {
            panic!("two signals were up");
        };
        assert!(up.contains(a) && !up.contains(b) && up.contains(c));
        assert_eq!(up.iter().collect::<Vec<_>>(), [a, c]);
        assert_eq!(consumer.take_signals(), Taken::None, "taken once");
        assert_eq!(consumer.pop(), Popped::Item(7), "the item is untouched");
        assert_eq!(mailbox.raise(b), Raised::Up);
        assert_eq!(mailbox.close(), Closing::Won);
        assert_eq!(
            consumer.take_signals(),
            Taken::Closed,
            "died with the close"
        );
        assert_eq!(mailbox.raise(a), Raised::Closed);
        assert_eq!(consumer.take_signals(), Taken::Closed);
        assert_eq!(consumer.pop(), Popped::Closed);
    }

    #[test]
    fn signals_raised_between_pushes_and_pops_leave_the_queue_whole() {
        // Raises change the word under a push's CAS and around a pop's
        // commit: every item still comes out once, in order, across the
        // tail's wrap.
        let (mailbox, mut consumer) = starting_at(3, TAIL.max() - 5);
        let signal = Signal::new(1).unwrap();
        let mut next = 0;
        for i in 0..40u32 {
            assert!(mailbox.push(i).is_queued());
            let _ = mailbox.raise(signal);
            if i % 3 == 2 {
                assert!(matches!(consumer.take_signals(), Taken::Signals(_)));
                while let Popped::Item(got) = consumer.pop() {
                    assert_eq!(got, next);
                    next += 1;
                    let _ = mailbox.raise(signal);
                }
            }
        }
        assert_eq!(next, 39);
        assert_eq!(consumer.pop(), Popped::Item(39));
        assert_eq!(mailbox.len(), 0);
    }

    #[test]
    fn raisers_racing_the_consumer_lose_no_signal_before_the_close() {
        // Each raiser raises its own signal again and again; the consumer
        // takes. A raise that found its signal down was taken afterwards,
        // unless the close came first: counted on both sides.
        let (mailbox, mut consumer) = Mailbox::<()>::with_capacity(1).unwrap();
        let raisers: Vec<_> = (0..SIGNALS)
            .map(|i| {
                let mailbox = Arc::clone(&mailbox);
                std::thread::spawn(move || {
                    let signal = Signal::new(i).unwrap();
                    let mut ups = 0u64;
                    loop {
                        match mailbox.raise(signal) {
                            Raised::Up => ups += 1,
                            Raised::AlreadyUp => std::thread::yield_now(),
                            Raised::Closed => return ups,
                        }
                    }
                })
            })
            .collect();
        let mut taken = [0u64; SIGNALS as usize];
        for _ in 0..20_000 {
            if let Taken::Signals(up) = consumer.take_signals() {
                for signal in up.iter() {
                    taken[signal.index() as usize] += 1;
                }
            }
        }
        // Whatever is up at the close is lost with it; count it first.
        assert_eq!(mailbox.close(), Closing::Won);
        let ups: Vec<u64> = raisers.into_iter().map(|r| r.join().unwrap()).collect();
        for i in 0..SIGNALS as usize {
            assert!(
                ups[i] == taken[i] || ups[i] == taken[i] + 1,
                "signal {i}: up {} times, taken {}",
                ups[i],
                taken[i]
            );
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Push,
        Pop,
        Close,
        Raise(u32),
        Take,
    }

    proptest! {
        /// Random pushes, pops and closes on one thread, against a
        /// `VecDeque` that says what each must do: results, lengths, and
        /// which items are dropped when.
        #[test]
        fn behaves_as_a_bounded_deque(
            capacity in 1usize..6,
            start in prop_oneof![Just(0u64), Just(TAIL.max() - 7), any::<u64>()],
            ops in proptest::collection::vec(
                prop_oneof![
                    6 => Just(Op::Push),
                    5 => Just(Op::Pop),
                    1 => Just(Op::Close),
                    3 => (0..SIGNALS).prop_map(Op::Raise),
                    2 => Just(Op::Take),
                ],
                0..80,
            ),
        ) {
            let drops = Arc::new(Drops::default());
            let (mailbox, mut consumer) = starting_at(capacity, start);
            let mut model: VecDeque<usize> = VecDeque::new();
            let mut closed = false;
            let mut up = [false; SIGNALS as usize];
            for op in ops {
                match op {
                    Op::Push => {
                        let item = drops.item(false);
                        let id = item.id;
                        match mailbox.push(item) {
                            Pushed::Queued => {
                                prop_assert!(!closed && model.len() < capacity);
                                model.push_back(id);
                            }
                            Pushed::Full(back) => {
                                prop_assert!(!closed && model.len() == capacity);
                                prop_assert_eq!(back.id, id);
                            }
                            Pushed::Closed(back) => {
                                prop_assert!(closed);
                                prop_assert_eq!(back.id, id);
                            }
                        }
                    }
                    Op::Pop => match consumer.pop() {
                        Popped::Item(item) => {
                            prop_assert_eq!(Some(item.id), model.pop_front());
                            prop_assert_eq!(drops.of(item.id), 0);
                        }
                        Popped::Empty => prop_assert!(!closed && model.is_empty()),
                        Popped::Closed => prop_assert!(closed),
                    },
                    Op::Raise(i) => {
                        let raised = mailbox.raise(Signal::new(i).unwrap());
                        let expected = match (closed, up[i as usize]) {
                            (true, _) => Raised::Closed,
                            (false, true) => Raised::AlreadyUp,
                            (false, false) => Raised::Up,
                        };
                        prop_assert_eq!(raised, expected);
                        up[i as usize] |= !closed;
                    }
                    Op::Take => {
                        let taken = consumer.take_signals();
                        let expected: Vec<u32> =
                            (0..SIGNALS).filter(|i| up[*i as usize]).collect();
                        match taken {
                            Taken::Closed => prop_assert!(closed),
                            Taken::None => prop_assert!(!closed && expected.is_empty()),
                            Taken::Signals(set) => {
                                prop_assert!(!closed);
                                let got: Vec<u32> = set.iter().map(Signal::index).collect();
                                prop_assert_eq!(got, expected);
                            }
                        }
                        up = [false; SIGNALS as usize];
                    }
                    Op::Close => {
                        let won = mailbox.close().is_won();
                        prop_assert_eq!(won, !closed);
                        for id in model.drain(..) {
                            prop_assert_eq!(drops.of(id), 1, "dropped by the close");
                        }
                        closed = true;
                    }
                }
                prop_assert_eq!(mailbox.len(), model.len());
                prop_assert_eq!(mailbox.is_closed(), closed);
                for id in &model {
                    prop_assert_eq!(drops.of(*id), 0, "queued, not dropped");
                }
            }
            drop((mailbox, consumer));
            prop_assert!(drops.all().iter().all(|d| *d == 1), "{:?}", drops.all());
        }
    }
}

//! The [`Mailbox`] and its one [`Consumer`]: the ring of slots, the push
//! that fills it, and the few reads of its state word.

use super::word::{CLOSED, LEN, MAX_CAPACITY, TAIL};
use crate::sync::{Arc, AtomicU64, AtomicU8, Ordering, UnsafeCell};
use std::fmt;
use std::mem::MaybeUninit;

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
/// [signals](super::Signal) takes them at both looks, and every raise that puts one
/// up ([`Raised::Up`](super::Raised::Up)) wakes, as a queued push does.
/// A position whose push is still
/// writing reads as `Empty` even when later ones are written; its producer
/// wakes the consumer when it has written it, so nothing behind it is lost.
pub struct Mailbox<T> {
    /// `closed`, `len`, `tail` (see the module's diagram).
    pub(super) state: AtomicU64,
    /// How many items it holds at most.
    pub(super) capacity: u64,
    /// `R - 1`, for a position's slot.
    pub(super) mask: u64,
    /// `log2 R`, for a position's lap.
    pub(super) shift: u32,
    /// Each slot's lap (mod 256), plus one once its value is written.
    pub(super) stamps: Box<[AtomicU8]>,
    /// The values; a slot's is initialised exactly while its stamp says so
    /// for a position between the consumer's and `tail`.
    pub(super) values: Box<[UnsafeCell<MaybeUninit<T>>]>,
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
    pub(super) mailbox: Arc<Mailbox<T>>,
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
    pub(super) fn new(capacity: usize, start: u64) -> Result<Mailbox<T>, CapacityError> {
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
    pub(super) fn slot(&self, position: u64) -> usize {
        (position & self.mask) as usize
    }

    /// The stamp of a slot holding `position`'s item: its lap, plus one.
    /// (It is also the stamp of the slot free for the next lap's position.)
    #[inline]
    pub(super) fn written(&self, position: u64) -> u8 {
        ((position >> self.shift) as u8).wrapping_add(1)
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

//! A lock-free stack of free slot indices (a Treiber stack), safe from ABA
//! up to a stated bound.
//!
//! The head word packs the top index (plus one; zero is the empty stack) with
//! a tag that every successful push and pop increments. A pop reads the top's
//! link and then CASes the head from exactly what it read, tag included; if
//! the top was popped, reused and pushed back meanwhile, the tag differs and
//! the CAS fails.
//!
//! The bound: the tag has 37 bits. A pop that stalls between its load of the
//! head and its CAS while exactly a multiple of 2^37 pushes and pops happen
//! on this one shard, *and* finds the same slot on top again, would install
//! a stale link. At one update every 10 ns, 2^37 updates are 23 minutes of
//! nothing but churn on one shard with the popper descheduled throughout.
//! (Indices need 27 bits: global indices are below 2^26, plus one for
//! "empty".) The tag also versions the head for `Shards::allocate`'s
//! "every shard empty at once" check, with the same bound.
//!
//! Links live in the slots themselves, in a word the slot does not use while
//! it is free (see `slot.rs`), so the stack allocates nothing. A pop may read
//! the link of a slot that another thread has just popped and is refilling;
//! the link is an atomic, so that read is a harmless stale value, and the
//! tag makes the CAS that would use it fail.

use crate::pack::Field;
use crate::sync::{AtomicU64, Ordering};
use crate::wrap::Wrap;

const TOP: Field = Field::lowest(27);
const TAG: Field = TOP.then(37);
const _: () = assert!(TAG.end() == 64);
const _: () = assert!(TOP.bits() > crate::id::INDEX.bits(), "index + 1 fits");

/// The widest tag: the whole field.
pub(crate) const TAGS: Wrap = Wrap::bits(TAG.bits());
const _: () = assert!(TAGS.max() == TAG.max());
const _: () = assert!(TAG.bits() == 37, "the documented wrap bound");

/// The link value meaning "no next slot".
const NONE: u64 = 0;

/// A free list found empty, with the head word it read (to tell later
/// whether anything was pushed or popped since).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Empty(pub(crate) u64);

pub(crate) struct FreeList {
    head: AtomicU64,
    tags: Wrap,
}

impl FreeList {
    pub(crate) fn new(tags: Wrap) -> FreeList {
        FreeList {
            head: AtomicU64::new(NONE),
            tags,
        }
    }

    /// The head word now: it changes with every push and pop.
    ///
    /// SeqCst, as every access to the head that the "every shard empty at
    /// once" check (`Shards::allocate_elsewhere`) reasons about: that check
    /// needs one order of all pushes and pops on all shards together with its
    /// own loads, which SeqCst gives (the single total order S). It costs
    /// nothing over Acquire/AcqRel where it matters: on x86-64 a SeqCst load
    /// is a plain load and every RMW is a full barrier anyway; AArch64 uses
    /// the same instructions as acquire and acquire-release. (With Acquire
    /// and Release alone, loom found an insert refused while a slot was free:
    /// a pop's or fresh take's write, seen by the checker, did not carry the
    /// push that came before it.)
    #[inline]
    pub(crate) fn head(&self) -> u64 {
        self.head.load(Ordering::SeqCst)
    }

    /// Pushes `index`, whose slot's link word is `link`.
    ///
    /// SeqCst on the CAS (see [`head`](Self::head)); its Release half is what
    /// makes the pusher's writes to the slot (the last one out dropped the
    /// value and, when it was the registry, stored `FREE(g+1)`), and the link
    /// itself, happen before the pop that takes this index.
    #[inline]
    pub(crate) fn push(&self, index: u32, link: &AtomicU64) {
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // Release, although the CAS below publishes it to poppers: a
            // reader comparing this word as a secret must, having read the
            // link, see that the session has ended (see `Slot::secret`).
            link.store(TOP.get(head), Ordering::Release);
            let next = TAG.set(
                TOP.set(0, u64::from(index) + 1),
                self.tags.next(TAG.get(head)),
            );
            match self
                .head
                .compare_exchange_weak(head, next, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Pops an index, or says the list was empty (with the head it read).
    ///
    /// SeqCst on the load and on the CAS, success and failure (see
    /// [`head`](Self::head): an empty head it reports is one the capacity
    /// check reasons about). Their Acquire half pairs with the Release of the
    /// push that put the top there (or of any later RMW on the head, all of
    /// which continue its release sequence), so the link we read and the
    /// freed slot's contents are those the pusher wrote.
    #[inline]
    pub(crate) fn pop<'a>(&self, link: impl Fn(u32) -> &'a AtomicU64) -> Result<u32, Empty> {
        let mut head = self.head.load(Ordering::SeqCst);
        loop {
            let top = TOP.get(head);
            if top == NONE {
                return Err(Empty(head));
            }
            let index = (top - 1) as u32;
            // Relaxed: ordered by the Acquire above; if the slot was taken
            // meanwhile, this value is stale and the CAS below fails.
            let next = link(index).load(Ordering::Relaxed) & TOP.max();
            let popped = TAG.set(TOP.set(0, next), self.tags.next(TAG.get(head)));
            match self
                .head
                .compare_exchange_weak(head, popped, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Ok(index),
                Err(now) => head = now,
            }
        }
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    fn links(n: usize) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn last_in_first_out() {
        let links = links(4);
        let list = FreeList::new(TAGS);
        let link = |i: u32| &links[i as usize];
        assert!(list.pop(link).is_err());
        list.push(2, link(2));
        list.push(0, link(0));
        list.push(3, link(3));
        assert_eq!(list.pop(link), Ok(3));
        assert_eq!(list.pop(link), Ok(0));
        list.push(1, link(1));
        assert_eq!(list.pop(link), Ok(1));
        assert_eq!(list.pop(link), Ok(2));
        assert_eq!(list.pop(link), Err(Empty(list.head())));
    }

    #[test]
    fn every_update_changes_the_head_and_a_narrow_tag_wraps() {
        let links = links(2);
        let link = |i: u32| &links[i as usize];
        let list = FreeList::new(Wrap::bits(2));
        let Err(Empty(empty)) = list.pop(link) else {
            panic!("a new list is empty")
        };
        let mut seen = vec![empty];
        for _ in 0..3 {
            list.push(1, link(1));
            seen.push(list.head());
            assert_eq!(list.pop(link), Ok(1));
            seen.push(list.head());
        }
        // Consecutive heads always differ; with a 2-bit tag the empty head
        // comes back after four updates, exactly as documented.
        assert!(seen.windows(2).all(|w| w[0] != w[1]), "{seen:x?}");
        assert_eq!(seen[0], seen[4]);
        assert_ne!(seen[0], seen[2]);
    }

    #[test]
    fn concurrent_pushes_and_pops_lose_and_duplicate_nothing() {
        const N: u32 = 64;
        let links = links(N as usize);
        let list = FreeList::new(TAGS);
        let link = |i: u32| &links[i as usize];
        for i in 0..N {
            list.push(i, link(i));
        }
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        let mut held = Vec::new();
                        for _ in 0..3 {
                            if let Ok(i) = list.pop(link) {
                                held.push(i);
                            }
                        }
                        for i in held {
                            list.push(i, link(i));
                        }
                    }
                });
            }
        });
        let mut seen = vec![false; N as usize];
        while let Ok(i) = list.pop(link) {
            assert!(!seen[i as usize], "index {i} was on the list twice");
            seen[i as usize] = true;
        }
        assert!(seen.iter().all(|s| *s), "an index was lost");
    }
}

//! A lock-free stack of free slot indices (a Treiber stack), safe from ABA.
//!
//! The head word packs the top index (plus one; zero is the empty stack) with
//! a tag that every successful push and pop increments. A pop reads the top's
//! link and then CASes the head from exactly what it read, tag included; if
//! the top was popped, reused and pushed back meanwhile, the tag differs and
//! the CAS fails. (It would take 2^32 pushes and pops on this one shard
//! between a pop's load and its CAS for the tag to come round.)
//!
//! Links live in the slots themselves, in a word the slot does not use while
//! it is free (see `slot.rs`), so the stack allocates nothing. A pop may read
//! the link of a slot that another thread has just popped and is refilling;
//! the link is an atomic, so that read is a harmless stale value, and the
//! tag makes the CAS that would use it fail.

use crate::pack::Field;
use crate::sync::{AtomicU64, Ordering};

const TOP: Field = Field::lowest(32);
const TAG: Field = TOP.then(32);

/// The link value meaning "no next slot".
const NONE: u64 = 0;

pub(crate) struct FreeList {
    head: AtomicU64,
}

impl FreeList {
    pub(crate) fn new() -> FreeList {
        FreeList {
            head: AtomicU64::new(NONE),
        }
    }

    /// Pushes `index`, whose slot's link word is `link`.
    ///
    /// Release on the CAS: the pusher's writes to the slot (the last one out
    /// dropped the value and stored `FREE(g+1)`), and the link itself, happen
    /// before the pop that takes this index.
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
                (TAG.get(head) + 1) & TAG.max(),
            );
            match self
                .head
                .compare_exchange_weak(head, next, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Pops an index, if any.
    ///
    /// Acquire on the load and on the CAS: pairs with the Release of the push
    /// that put the top there (or of any later RMW on the head, all of which
    /// are RMWs and so continue its release sequence), so the link we read and
    /// the freed slot's contents are those the pusher wrote.
    #[inline]
    pub(crate) fn pop<'a>(&self, link: impl Fn(u32) -> &'a AtomicU64) -> Option<u32> {
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            let top = TOP.get(head);
            if top == NONE {
                return None;
            }
            let index = (top - 1) as u32;
            // Relaxed: ordered by the Acquire above; if the slot was taken
            // meanwhile, this value is stale and the CAS below fails.
            let next = link(index).load(Ordering::Relaxed) & TOP.max();
            let popped = TAG.set(TOP.set(0, next), (TAG.get(head) + 1) & TAG.max());
            match self.head.compare_exchange_weak(
                head,
                popped,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(index),
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
        let list = FreeList::new();
        let link = |i: u32| &links[i as usize];
        assert_eq!(list.pop(link), None);
        list.push(2, link(2));
        list.push(0, link(0));
        list.push(3, link(3));
        assert_eq!(list.pop(link), Some(3));
        assert_eq!(list.pop(link), Some(0));
        list.push(1, link(1));
        assert_eq!(list.pop(link), Some(1));
        assert_eq!(list.pop(link), Some(2));
        assert_eq!(list.pop(link), None);
    }

    #[test]
    fn concurrent_pushes_and_pops_lose_and_duplicate_nothing() {
        const N: u32 = 64;
        let links = links(N as usize);
        let list = FreeList::new();
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
                            if let Some(i) = list.pop(link) {
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
        while let Some(i) = list.pop(link) {
            assert!(!seen[i as usize], "index {i} was on the list twice");
            seen[i as usize] = true;
        }
        assert!(seen.iter().all(|s| *s), "an index was lost");
    }
}

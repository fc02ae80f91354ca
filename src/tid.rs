//! Small, dense, reusable ids for threads, taken and given back without a
//! lock.
//!
//! Each thread that touches a registry gets the smallest id no other living
//! thread holds; the id is given back when the thread exits. Counter stripes
//! (`striped.rs`) are indexed by it, so a stripe has one writer at a time;
//! shards (`slab/shards.rs`) are chosen by it, so threads spread over shards; and
//! a thread claims a session's activity word with it (`activity.rs`), so no
//! two living threads claim with the same id.
//!
//! The ids in use are a bitmap, one bit each: taking an id is a CAS that sets
//! the lowest clear bit of the first word that has one, giving it back a
//! `fetch_and` that clears it. Lock-free: a CAS fails only because another
//! thread took or gave back an id in that word. No lock, so nothing a thread
//! can hold when the process forks: a child forked while another thread was
//! taking or giving back an id takes its own ids as usual (the bits of the
//! parent's other threads stay set in the child, which has none of them: a
//! few ids it never reuses).
//!
//! The handover of an id (an exiting thread's last counter writes happen
//! before the next holder of its id writes the same stripe) is the bitmap
//! word's: the give-back is a Release RMW, the take an Acquire one that reads
//! it (or a later RMW of the word, in its release sequence).
//!
//! [`MAX_IDS`] ids at most are held at once; a thread beyond them (or in
//! teardown, after it gave its id back) is [`SHARED`]: counters then use
//! the shared stripe, and the thread claims no activity word.

use crate::sync::thread_local;

/// Returned by [`current`] for a thread without an id of its own: during
/// thread teardown, after its id has been given back, or when [`MAX_IDS`]
/// threads hold one already. Callers must treat it as shared with other
/// threads.
pub(crate) const SHARED: usize = usize::MAX;

/// The most ids held at once: 65,536 threads (far more than stripes or
/// shards, which ids beyond share).
#[cfg(not(sessionreg_loom))]
const MAX_IDS: usize = 1 << 16;

/// Words of the bitmap of ids in use.
#[cfg(not(sessionreg_loom))]
const WORDS: usize = MAX_IDS / 64;

#[cfg(not(sessionreg_loom))]
mod bitmap {
    use super::WORDS;
    use crate::sync::{Ordering, ProcessAtomicU64};

    /// The ids in use: bit `i % 64` of word `i / 64` for id `i`. A
    /// process-wide static (an 8 KiB array of zeroes until used), so std's
    /// atomics (`ProcessAtomicU64`): the loom build has its own below.
    static IN_USE: [ProcessAtomicU64; WORDS] = [const { ProcessAtomicU64::new(0) }; WORDS];

    /// The smallest id no living thread holds, now held by the caller.
    pub(super) fn take() -> Option<usize> {
        for (at, word) in IN_USE.iter().enumerate() {
            let mut bits = word.load(Ordering::Relaxed);
            while bits != u64::MAX {
                let bit = bits.trailing_ones();
                // Acquire: the id's previous holder gave it back with a
                // Release RMW of this word; its counter writes happen
                // before ours.
                match word.compare_exchange_weak(
                    bits,
                    bits | (1 << bit),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Some(at * 64 + bit as usize),
                    Err(now) => bits = now,
                }
            }
        }
        None
    }

    /// Gives `id` back.
    pub(super) fn give_back(id: usize) {
        // Release: see `take`.
        IN_USE[id / 64].fetch_and(!(1 << (id % 64)), Ordering::Release);
    }
}

struct Tid(usize);

impl Tid {
    #[cfg(not(sessionreg_loom))]
    fn take() -> Tid {
        Tid(bitmap::take().unwrap_or(SHARED))
    }

    /// Under loom every model thread gets an id of its own, from a counter
    /// that lives for one model execution, and never gives it back: loom
    /// drops the model's main thread's thread-locals after the execution's
    /// statics, so a give-back could not reach them then. Ids stay small
    /// and deterministic (and models have fewer threads than stripes), so
    /// the counters take their production path (load + store) there too.
    #[cfg(sessionreg_loom)]
    fn take() -> Tid {
        loom::lazy_static! {
            static ref NEXT: loom::sync::atomic::AtomicUsize = loom::sync::atomic::AtomicUsize::new(0);
        }
        Tid(NEXT.fetch_add(1, crate::sync::Ordering::Relaxed))
    }
}

impl Drop for Tid {
    fn drop(&mut self) {
        #[cfg(not(sessionreg_loom))]
        {
            CACHED.with(|cached| cached.set(SHARED));
            if self.0 != SHARED {
                bitmap::give_back(self.0);
            }
        }
    }
}

thread_local! {
    static TID: Tid = Tid::take();
}

// The id again, in a const-initialised thread-local without a destructor:
// reading it is one thread-pointer-relative load with no lazy-init or
// teardown state to check, where `TID` (which must give its id back on
// exit, so has a destructor) costs a state check and a call on every read.
// `UNSET` until `TID` is first read, `SHARED` once `TID` has been dropped.
// (Not under loom, whose threads share the OS thread's std thread-locals.)
#[cfg(not(sessionreg_loom))]
crate::sync::cache_thread_local! {
    static CACHED: crate::sync::CacheCell<usize> = const { crate::sync::CacheCell::new(UNSET) };
}

#[cfg(not(sessionreg_loom))]
const UNSET: usize = usize::MAX - 1;

/// This thread's id, or [`SHARED`] if it has none (see there).
#[cfg(not(sessionreg_loom))]
#[inline]
pub(crate) fn current() -> usize {
    match CACHED.with(crate::sync::CacheCell::get) {
        UNSET => first(),
        id => id,
    }
}

/// The first read on this thread: takes an id (or finds `TID` gone).
#[cfg(not(sessionreg_loom))]
#[cold]
#[inline(never)]
fn first() -> usize {
    let id = TID.try_with(|tid| tid.0).unwrap_or(SHARED);
    CACHED.with(|cached| cached.set(id));
    id
}

/// This thread's id, or [`SHARED`] once its thread-locals are being torn down.
#[cfg(sessionreg_loom)]
#[inline]
pub(crate) fn current() -> usize {
    TID.try_with(|tid| tid.0).unwrap_or(SHARED)
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    /// The two tests below each look at which ids are free: run them one at
    /// a time (the first takes 200 ids at once, which would take the ids the
    /// second's threads give back before it can see them reused).
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The bitmap hands out the smallest free id, never one twice, and
    /// nothing past its last word; what is given back is taken again.
    #[test]
    fn the_bitmap_takes_the_smallest_free_id() {
        let _one = one_at_a_time();
        // Other tests' threads hold ids meanwhile: work above them.
        let held: Vec<usize> = std::iter::from_fn(bitmap::take).take(200).collect();
        let mut sorted = held.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), held.len(), "an id handed out twice");
        assert!(held.iter().all(|&id| id < MAX_IDS));
        let (a, b) = (held[150], held[10]);
        bitmap::give_back(a);
        bitmap::give_back(b);
        // The smaller of the two first (unless another test's thread took
        // it meanwhile, then anything at most the larger).
        let again = bitmap::take().unwrap();
        assert!(again <= a, "{again} > {a}");
        for id in held.into_iter().filter(|&id| id != a && id != b) {
            bitmap::give_back(id);
        }
        bitmap::give_back(again);
    }

    #[test]
    fn living_threads_hold_distinct_ids_and_exits_give_them_back() {
        let _one = one_at_a_time();
        let here = current();
        assert_eq!(current(), here, "stable within a thread");
        let barrier = std::sync::Barrier::new(4);
        let ids: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        let id = current();
                        barrier.wait(); // all four alive at once
                        id
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 4, "{ids:?}");
        assert!(!ids.contains(&here));
        // The four have exited: a new thread reuses one of their ids (or a
        // smaller one freed by another test), never a fresh larger one.
        let max = *ids.iter().max().unwrap();
        let reused = std::thread::spawn(current).join().unwrap();
        assert!(reused <= max, "{reused} > {max}");
    }
}

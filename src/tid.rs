//! Small, dense, reusable ids for threads.
//!
//! Each thread that touches a registry gets the smallest id no other living
//! thread holds; the id is given back when the thread exits. Counter stripes
//! (`stats.rs`) are indexed by it, so a stripe has one writer at a time, and
//! shards (`shards.rs`) are chosen by it, so threads spread over shards.

use crate::sync::{static_lock, thread_local};

// The pool of ids not held by any living thread.
//
// The handover it provides (an exiting thread's last counter writes happen
// before the next holder of its id writes the same stripe) is the mutex's
// own release/acquire. Under loom the pool is one per model execution, so
// ids are small and deterministic and the counters take their production
// path (load + store) there too.
static_lock!(POOL: Pool = Pool {
    next: 0,
    free: Vec::new(),
});

struct Pool {
    next: usize,
    free: Vec<usize>,
}

/// Returned by [`current`] during thread teardown, after this thread's id has
/// been given back: callers must treat it as shared with other threads.
pub(crate) const SHARED: usize = usize::MAX;

struct Tid(usize);

impl Tid {
    fn take() -> Tid {
        let mut pool = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Smallest first, so ids stay dense and fit the stripes.
        let id = match pool.free.iter().enumerate().min_by_key(|(_, id)| **id) {
            Some((at, _)) => pool.free.swap_remove(at),
            None => {
                pool.next += 1;
                pool.next - 1
            }
        };
        Tid(id)
    }
}

impl Drop for Tid {
    fn drop(&mut self) {
        // Under loom the pool lives for one execution and ids are never
        // given back: loom drops the model's main thread's thread-locals
        // after the execution's statics, so a give-back could not reach
        // the pool then. Every model thread gets an id of its own (and a
        // stripe of its own: models have fewer threads than stripes).
        #[cfg(not(sessionreg_loom))]
        {
            CACHED.with(|cached| cached.set(SHARED));
            let mut pool = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            pool.free.push(self.0);
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

/// This thread's id, or [`SHARED`] once its thread-locals are being torn down.
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

    #[test]
    fn living_threads_hold_distinct_ids_and_exits_give_them_back() {
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

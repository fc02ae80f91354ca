//! A global allocator that counts: every live byte requested
//! (`Layout::size`), the peak since the last [`mark`], live allocations, and
//! every allocation ever made (a `realloc` counts as one). Shared by the
//! memory benches (`benches/memory.rs`,
//! `benches/tasks/benches/tasks_memory.rs`) and the profile binaries
//! (`benches/profile.rs`, `benches/tasks/benches/tasks_profile.rs`); each
//! installs it with `#[global_allocator] static ALLOCATOR: Counting =
//! Counting;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The counting allocator: the system allocator, with bookkeeping.
pub struct Counting;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);
static LIVE_ALLOCS: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; the counters
// are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on to `System` as is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            added(layout.size());
            LIVE_ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        ptr
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            added(layout.size());
            LIVE_ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as in `alloc`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        LIVE_ALLOCS.fetch_sub(1, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
            added(new_size);
        }
        new
    }
}

fn added(size: usize) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    let now = LIVE_BYTES.fetch_add(size, Ordering::Relaxed) + size;
    PEAK_BYTES.fetch_max(now, Ordering::Relaxed);
}

/// Counts from here: (bytes, allocations) now; the peak is reset to now.
pub fn mark() -> (usize, usize) {
    let bytes = live_bytes();
    PEAK_BYTES.store(bytes, Ordering::Relaxed);
    (bytes, live_allocs())
}

/// Bytes allocated and not freed.
pub fn live_bytes() -> usize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// The most bytes live at once since the last [`mark`].
pub fn peak_bytes() -> usize {
    PEAK_BYTES.load(Ordering::Relaxed)
}

/// Allocations made since the program started (`alloc`, `alloc_zeroed`
/// and `realloc` calls that succeeded).
#[allow(dead_code)] // not every includer reads it
pub fn allocations() -> usize {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Allocations not freed.
pub fn live_allocs() -> usize {
    LIVE_ALLOCS.load(Ordering::Relaxed)
}

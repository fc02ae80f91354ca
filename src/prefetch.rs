//! A hint to the processor that a line of memory is about to be used, so
//! that a loop over many scattered objects (a publication's fan-out to its
//! listeners) waits for several cache misses at once instead of one after
//! another.
//!
//! Only a hint: it never faults and changes nothing a program can observe,
//! so it is a no-op where there is no instruction for it (and under loom,
//! which models no cache).

/// Asks for the cache line holding `at` to be brought close to this core.
/// `at` may dangle, or be null: a prefetch never faults.
#[inline(always)]
pub(crate) fn prefetch<T>(at: *const T) {
    #[cfg(all(target_arch = "x86_64", not(sessionreg_loom)))]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 is part of SSE, which every x86_64 processor
        // has; it reads no memory the program can see and never faults,
        // whatever address it is given.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>()) }
    }
    #[cfg(not(all(target_arch = "x86_64", not(sessionreg_loom))))]
    let _ = at;
}

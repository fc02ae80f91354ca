//! The one place where the core gets its atomics, cells, locks and
//! thread-locals.
//!
//! Under `--cfg sessionreg_loom` together with the `loom` feature, every item
//! here is loom's model of it, so the loom suite sees every shared access the
//! core makes. Otherwise they are `std`'s. No other file names `std::sync` or
//! `core::sync` directly: the module tree compiles the same way under both.
//!
//! We use our own cfg name rather than the bare `loom` cfg because tokio (and
//! crates built on it) change how they compile under that one.

#[cfg(all(sessionreg_loom, not(feature = "loom")))]
compile_error!("`--cfg sessionreg_loom` needs the `loom` feature of sessionreg");

#[cfg(all(sessionreg_loom, feature = "loom"))]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};
    pub(crate) use loom::sync::{Mutex, MutexGuard};
    pub(crate) use loom::thread_local;

    /// The hashing of the maps a lock guards (`shares.rs`): fixed keys under
    /// loom, so that every execution of a model picks the same stripes (loom
    /// replays a model and expects the same objects in the same order).
    pub(crate) type MapHasher =
        std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

    /// loom's cell: it checks that no `with_mut` overlaps another access.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(loom::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::cell::UnsafeCell::new(value))
        }

        #[inline]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            self.0.with(f)
        }

        #[inline]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            self.0.with_mut(f)
        }
    }
}

#[cfg(not(all(sessionreg_loom, feature = "loom")))]
mod imp {
    pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};
    pub(crate) use std::sync::{Mutex, MutexGuard};
    pub(crate) use std::thread_local;

    /// The hashing of the maps a lock guards (`shares.rs`): SipHash with
    /// random keys, so that no client can choose keys that all fall on one
    /// stripe or one bucket.
    pub(crate) type MapHasher = std::collections::hash_map::RandomState;

    /// `std`'s cell with loom's closure-based API, so call sites are the same
    /// under both. The closures compile away.
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

pub(crate) use imp::*;

/// Thread-locals that are caches, taking no part in any protocol the loom
/// suite checks (the secret buffer in `secret.rs`, the thread id's cached
/// copy in `tid.rs`): `std`'s even under loom, where every model thread
/// shares one OS thread's copy. That is sound because no access holds a
/// borrow across an operation loom can switch threads at.
pub(crate) use std::thread_local as cache_thread_local;

/// The cells inside those caches: `std`'s, as the thread-locals are.
/// (`tid.rs` uses `CacheCell` only outside loom builds.)
#[cfg_attr(all(sessionreg_loom, feature = "loom"), allow(unused_imports))]
pub(crate) use std::cell::{Cell as CacheCell, RefCell as CacheRefCell};

/// A flag for process-wide state that takes no part in any protocol the
/// loom suite checks (the fork handler registered, in `secret.rs`): `std`'s
/// even under loom, for the same reason as [`ProcessAtomicU64`].
pub(crate) use std::sync::atomic::AtomicBool as ProcessAtomicBool;

/// Shared ownership of state that takes no part in any protocol the loom
/// suite checks (a [`ManualClock`](crate::ManualClock)'s reading, shared by
/// its clones and moved only by a test): `std`'s under both. The atomic it
/// holds is loom's under loom.
pub(crate) use std::sync::Arc;

/// An atomic for process-wide statics that take no part in any protocol the
/// loom suite checks (the fork count in `secret.rs`, the bitmap of thread
/// ids in use in `tid.rs`, whose loom build counts ids with a per-execution
/// atomic instead): `std`'s even under loom, whose objects live for one
/// model execution and cannot sit in a `static`.
pub(crate) use std::sync::atomic::AtomicU64 as ProcessAtomicU64;

//! The registry: the type users hold, its counts, and what dropping it does.
//! Its operations are in `insert.rs`, `lookup.rs`, `terminate.rs` and
//! `sweep.rs`.

use crate::config::OnClose;
use crate::reason::{Miss, Reason};
use crate::slab::storage::Storage;
use crate::stats::Stats;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// A concurrent registry of sessions of type `S`.
///
/// Share it as `Arc<Registry<S>>`. Every way a session ends goes through
/// [`terminate`](Registry::terminate) (or [`terminate_session`], or the sweeps
/// [`reap_idle`] and [`terminate_all`], which end each session the same way):
/// one atomic CAS picks one winner per session, and only the winner runs the
/// close callback, once, with the reason it won for.
///
/// Dropping the registry terminates every session still live with
/// [`Reason::Shutdown`] (the close callback runs for each, even if some of
/// them panic); handles still held stay valid, and the storage is freed with
/// the last of them.
///
/// [`terminate_session`]: Registry::terminate_session
/// [`reap_idle`]: Registry::reap_idle
/// [`terminate_all`]: Registry::terminate_all
pub struct Registry<S> {
    pub(crate) storage: NonNull<Storage<S>>,
    pub(crate) on_close: Option<OnClose<S>>,
    pub(crate) capacity: usize,
    _owns: PhantomData<S>,
}

// SAFETY: the registry hands `&S` to any thread (`S: Sync`) and values are
// dropped on whichever thread releases them last (`S: Send`); the storage is
// only atomics and the values; the close callback is `Send + Sync`.
unsafe impl<S: Send + Sync> Send for Registry<S> {}
// SAFETY: as above; every `&self` method is safe to call concurrently.
unsafe impl<S: Send + Sync> Sync for Registry<S> {}

/// The outcome of [`Registry::terminate`].
#[must_use = "only the `Won` caller knows the session ended because of it"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Termination {
    /// This call ended the session: its CAS was the one winner, and the close
    /// callback has run, with this call's reason.
    Won,
    /// The session had already ended, by another path or an earlier call:
    /// every caller but the winner gets this. Not an error; counted in
    /// [`Stats`] as a [`Miss::Stale`] lookup (the id named a session
    /// that is over, and its secret is proven).
    AlreadyTerminated,
    /// The id is not shown to name a session here: another node's, a slot
    /// or generation not reached yet, or an ended one whose slot has moved
    /// on too far to check it ([`Miss::Unknown`]), or a wrong secret
    /// ([`Miss::Forged`]). Counted in [`Stats`].
    Missed(Miss),
}

impl Termination {
    /// Whether this call ended the session.
    pub fn is_won(self) -> bool {
        self == Termination::Won
    }
}

impl<S> Registry<S> {
    pub(crate) fn from_parts(
        storage: Storage<S>,
        on_close: Option<OnClose<S>>,
        capacity: usize,
    ) -> Registry<S> {
        Registry {
            storage: NonNull::from(Box::leak(Box::new(storage))),
            on_close,
            capacity,
            _owns: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn storage(&self) -> &Storage<S> {
        // SAFETY: the storage is freed only after the registry is dropped
        // (see `Storage::orphan_all`).
        unsafe { self.storage.as_ref() }
    }

    /// Live sessions: created and not yet terminated.
    ///
    /// Sessions come and go while it counts, so it is exact only at rest;
    /// under churn it is never above the capacity, and never below the number
    /// of sessions that were live for the whole call (a session that stays
    /// live is never missed). See [`Stats::live`].
    pub fn len(&self) -> usize {
        self.storage().counters.live(self.capacity as u64) as usize
    }

    /// Whether no session is live (as [`len`](Registry::len) counts).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The configured maximum of live sessions.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The node id in this registry's session ids (the first two hex digits
    /// of their text form; see [`Builder::node_id`](crate::Builder::node_id)).
    pub fn node_id(&self) -> u8 {
        self.storage().node as u8
    }

    /// A snapshot of the counters; see [`Stats`] for what "snapshot" means
    /// while sessions come and go.
    pub fn stats(&self) -> Stats {
        let storage = self.storage();
        storage
            .counters
            .snapshot(self.capacity as u64, self.node_id())
    }
}

impl<S> Drop for Registry<S> {
    /// Ends every live session with [`Reason::Shutdown`], then lets the
    /// storage go (now, or with the last handle still held).
    ///
    /// If close callbacks (or values' `Drop`s) panic, every other session is
    /// still ended and dropped, the storage is still settled, and then the
    /// first panic is re-raised, unless the registry is being dropped while
    /// the thread is already unwinding, when it is swallowed (a second panic
    /// would abort the process).
    fn drop(&mut self) {
        let panicked = self.sweep_live(Reason::Shutdown).1;
        if self.storage().orphan_all() {
            // SAFETY: no slot is held, no debt is outstanding, and the
            // registry is going: nobody else can reach the storage, which
            // `from_parts` allocated as a Box.
            drop(unsafe { Box::from_raw(self.storage.as_ptr()) });
        }
        crate::panic::resume(panicked);
    }
}

impl<S> fmt::Debug for Registry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("live", &self.len())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

//! Ending one session: `terminate` by id, `terminate_session` through a
//! handle, and `finish`, the one place where a winner's cleanup runs.

use crate::id::SessionId;
use crate::reason::{Miss, Reason};
use crate::registry::{Registry, Termination};
use crate::session::Session;
use crate::slab::lifecycle::{Holding, Terminate};
use crate::slab::slot::Slot;
use crate::slab::storage::{self, By};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

impl<S> Registry<S> {
    /// Ends the session named by `id`, for `reason`: the one function every
    /// way a session ends goes through.
    ///
    /// One CAS on the session's lifecycle word decides: the caller whose CAS
    /// moves it from live to terminated gets [`Termination::Won`], the live
    /// count drops, and the close callback runs, once, on this thread, before
    /// this returns. Every other caller with the same id, now or later, gets
    /// `AlreadyTerminated`, which is not an error.
    ///
    /// It first takes a reference on the session and checks the id's secret
    /// under it, so however long this thread is descheduled, it can only end
    /// the session the id names, never a later one in the same slot.
    ///
    /// If the close callback panics, the panic propagates from here; the
    /// session is terminated all the same and its slot is not leaked.
    pub fn terminate(&self, id: &SessionId, reason: Reason) -> Termination {
        let slot = match self.acquire(id) {
            Ok(slot) => slot,
            Err(Miss::Stale) => return self.already_terminated(),
            Err(cause) => return self.missed(cause),
        };
        if self.end_held(slot, *id, reason) {
            Termination::Won
        } else {
            self.already_terminated()
        }
    }

    /// Ends the session that `session` is a handle to, for `reason`: the same
    /// one terminate as [`terminate`](Registry::terminate), for a caller that
    /// already holds the session (a request handler ending its own session,
    /// or one found with [`lookup_if`](Registry::lookup_if)). The handle
    /// pins the session, so this cannot reach any other one, and it costs one
    /// atomic operation fewer than ending by id.
    ///
    /// A handle from another registry is [`Termination::Missed`] with
    /// [`Miss::Unknown`].
    ///
    /// ```
    /// use sessionreg::{Reason, Registry, Termination};
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let id = registry.insert(()).unwrap();
    /// let session = registry.get(&id).unwrap();
    /// assert_eq!(registry.terminate_session(&session, Reason::Deleted), Termination::Won);
    /// assert_eq!(registry.terminate(&id, Reason::Deleted), Termination::AlreadyTerminated);
    /// assert!(session.is_terminated());
    /// ```
    pub fn terminate_session(&self, session: &Session<S>, reason: Reason) -> Termination {
        if session.storage_ptr() != self.storage {
            return self.missed(Miss::Unknown);
        }
        let id = session.id();
        let slot = session.slot_ref();
        let mut word = slot.lifecycle.load();
        while word.is_live() {
            match slot.lifecycle.try_terminate(word, Holding::Borrowed) {
                Terminate::Won | Terminate::WonAlone => {
                    self.finish(slot, id, reason, Hold::Borrowed);
                    return Termination::Won;
                }
                Terminate::Changed(now) => word = now,
            }
        }
        self.already_terminated()
    }

    /// With a reference held on the session `id` names: ends it with `reason`
    /// if it is still live, and gives the reference back either way. Returns
    /// whether this call ended it.
    //
    // Inline: `terminate`'s hot path is this loop around one CAS; out of
    // line it is a call that moves the id (three words) and the slot.
    #[inline]
    pub(crate) fn end_held(&self, slot: &Slot<S>, id: SessionId, reason: Reason) -> bool {
        // The reference pins the generation: the word is LIVE(g) or
        // TERMINATED(g), the id's own session.
        let mut word = slot.lifecycle.load();
        while word.is_live() {
            match slot.lifecycle.try_terminate(word, Holding::Ours) {
                Terminate::Won => {
                    self.finish(slot, id, reason, Hold::Ref);
                    return true;
                }
                Terminate::WonAlone => {
                    self.finish(slot, id, reason, Hold::Alone);
                    return true;
                }
                Terminate::Changed(now) => word = now,
            }
        }
        self.let_go(&id, slot);
        false
    }

    /// Runs the cleanup of a session whose termination this thread won, then
    /// lets go of the slot as `hold` says. The one place where a session's
    /// end is counted and announced.
    ///
    /// If the close callback panics, the slot is let go of all the same, and
    /// then the callback's panic goes on. Letting go may drop the value,
    /// whose `Drop` may panic too: so the callback's panic is caught first
    /// and the slot let go of only afterwards, never while a panic unwinds
    /// (a `Drop` that panics then aborts the process). Of two panics, the
    /// callback's goes on and the value's is dropped; a value's panic alone
    /// goes on as it is.
    pub(crate) fn finish(&self, slot: &Slot<S>, id: SessionId, reason: Reason, hold: Hold) {
        self.storage().counters.terminated(reason);
        let called = match &self.on_close {
            Some(on_close) => catch_unwind(AssertUnwindSafe(|| {
                // SAFETY: the winner holds the slot (a reference, or the
                // slot alone) until it lets go below.
                let value = unsafe { slot.value() };
                on_close(&id, value, reason)
            })),
            None => Ok(()),
        };
        let let_go = || {
            // SAFETY: the winner's hold on the slot, let go of exactly once,
            // here: a reference is given back, or a slot nobody held is
            // retired (a borrowed reference stays with its handle). `finish`
            // is a `&self` method (`By::Registry`).
            unsafe {
                match hold {
                    Hold::Ref => storage::release(
                        self.storage,
                        id.index(),
                        NonNull::from(slot),
                        By::Registry,
                    ),
                    Hold::Alone => {
                        storage::retire(self.storage, id.index(), NonNull::from(slot), By::Registry)
                    }
                    Hold::Borrowed => {}
                }
            }
        };
        match called {
            Ok(()) => let_go(),
            Err(panic) => {
                // The value's own panic, if any, is the second: dropped.
                let _ = catch_unwind(AssertUnwindSafe(let_go));
                resume_unwind(panic);
            }
        }
    }

    /// Counted as a stale lookup: the id named a session that has ended,
    /// which is what a `DELETE` of an old id, or the loser of a race, did.
    pub(crate) fn already_terminated(&self) -> Termination {
        self.storage().counters.missed(Miss::Stale);
        Termination::AlreadyTerminated
    }

    pub(crate) fn missed(&self, cause: Miss) -> Termination {
        self.storage().counters.missed(cause);
        Termination::Missed(cause)
    }
}

/// How the winner of a terminate holds the slot while it cleans up.
#[derive(Clone, Copy)]
pub(crate) enum Hold {
    /// A reference, given back afterwards (others may hold some too).
    Ref,
    /// The slot itself: nobody else held the session, so the winner is also
    /// its last one out and retires it afterwards.
    Alone,
    /// The caller's handle's reference, which the handle keeps.
    Borrowed,
}

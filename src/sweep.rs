//! Sweeps over every slot: `reap_idle` and `terminate_all` (which dropping
//! the registry runs too). Each session ends through the same CAS as
//! `terminate`, and a panicking close callback or value never stops a sweep
//! from ending the sessions after it.

use crate::activity::Expire;
use crate::id::SessionId;
use crate::lifecycle::{Acquire, Holding, Terminate, Word};
use crate::reason::Reason;
use crate::registry::Registry;
use crate::slot::Slot;
use crate::terminate::Hold;
use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// The first panic a sweep caught, to be raised again once it is done.
type Caught = Option<Box<dyn Any + Send>>;

impl<S> Registry<S> {
    /// Ends every session that is idle now (nothing in flight, no activity
    /// for the idle timeout) with [`Reason::IdleTimeout`]; returns how many
    /// this call ended. Does nothing without an idle timeout.
    ///
    /// Run it periodically (the HTTP layer runs it on a timer): with the
    /// system clock it is also what starts idle time. Neither an insert nor
    /// a request's end reads the clock, so a session's idle time starts at
    /// the first sweep after its last activity (or at a
    /// [`touch`](crate::Session::touch)), and it ends between its timeout and
    /// its timeout plus two periods after that activity, never earlier. Each
    /// session ends through the same CAS as [`terminate`](Registry::terminate).
    ///
    /// If a close callback (or a value's `Drop`) panics, the sweep goes on
    /// through every other slot, and then the first panic propagates.
    pub fn reap_idle(&self) -> usize {
        let storage = self.storage();
        let Some(timeout) = storage.clock.timeout_ms() else {
            return 0;
        };
        let clock = storage.clock.clock();
        let now = clock.now_ms();
        let mut ended = 0;
        let mut caught: Caught = None;
        for (index, slot) in storage.shards.used_slots() {
            let mut word = slot.lifecycle.load();
            if word.is_live() && slot.activity.is_rough() {
                // Its last activity (an insert, a request's end) read no
                // clock: the session is at least as young as a reading
                // taken after seeing the rough stamp. Its idle time counts
                // from there (never early; late by up to one sweep).
                slot.activity.make_exact(|| clock.now_ms());
                continue;
            }
            // A cheap look first: most sessions are busy or recent.
            while word.is_live() && slot.activity.looks_idle(now, timeout) {
                match slot.lifecycle.try_acquire(word) {
                    Acquire::Changed(now) => word = now,
                    Acquire::Acquired => {
                        // The reference pins the session: this is its id.
                        let id = self.id_of(index, slot, word);
                        if slot.activity.try_expire(now, timeout) == Expire::Expired {
                            ended += usize::from(self.end_caught(slot, id, &mut caught));
                        } else {
                            self.let_go(&id, slot);
                        }
                        break;
                    }
                }
            }
        }
        raise(caught);
        ended
    }

    /// Ends every live session with `reason` (for shutdown: see also
    /// [`Reason::Shutdown`]); returns how many this call ended.
    ///
    /// Sessions inserted while it runs may survive it: stop inserting first.
    /// If a close callback (or a value's `Drop`) panics, every other session
    /// is still ended, and then the first panic propagates.
    pub fn terminate_all(&self, reason: Reason) -> usize {
        let (ended, caught) = self.sweep_live(reason);
        raise(caught);
        ended
    }

    /// [`end_held`](Registry::end_held) with `IdleTimeout`, keeping the first
    /// panic of the cleanup in `caught`; returns whether it ended the session.
    fn end_caught(&self, slot: &Slot<S>, id: SessionId, caught: &mut Caught) -> bool {
        let mut word = slot.lifecycle.load();
        while word.is_live() {
            let hold = match slot.lifecycle.try_terminate(word, Holding::Ours) {
                Terminate::Won => Hold::Ref,
                Terminate::WonAlone => Hold::Alone,
                Terminate::Changed(now) => {
                    word = now;
                    continue;
                }
            };
            let finish = || self.finish(slot, id, Reason::IdleTimeout, hold);
            if let Err(panic) = catch_unwind(AssertUnwindSafe(finish)) {
                caught.get_or_insert(panic);
            }
            return true;
        }
        // Ended meanwhile by another path; letting go may drop the value.
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.let_go(&id, slot))) {
            caught.get_or_insert(panic);
        }
        false
    }

    /// [`terminate_all`](Registry::terminate_all), handing back the first
    /// panic it caught instead of raising it (for `Drop`).
    pub(crate) fn sweep_live(&self, reason: Reason) -> (usize, Caught) {
        let mut ended = 0;
        let mut caught: Caught = None;
        for (index, slot) in self.storage().shards.used_slots() {
            let mut word = slot.lifecycle.load();
            while word.is_live() {
                // Whatever session is live in the slot is one to end, so
                // this needs no reference first: the CAS takes one if
                // anybody else holds the session.
                let hold = match slot.lifecycle.try_terminate(word, Holding::Nothing) {
                    Terminate::Won => Hold::Ref,
                    Terminate::WonAlone => Hold::Alone,
                    Terminate::Changed(now) => {
                        word = now;
                        continue;
                    }
                };
                let id = self.id_of(index, slot, word);
                ended += 1;
                let finish = || self.finish(slot, id, reason, hold);
                if let Err(panic) = catch_unwind(AssertUnwindSafe(finish)) {
                    caught.get_or_insert(panic);
                }
                break;
            }
        }
        (ended, caught)
    }

    /// The id of the session in `slot`, whose word was `word`, for a caller
    /// that holds the slot (so the secret is that session's).
    pub(crate) fn id_of(&self, index: u64, slot: &Slot<S>, word: Word) -> SessionId {
        SessionId::new(index, word.generation(), self.storage().node, slot.secret())
    }
}

fn raise(caught: Caught) {
    if let Some(panic) = caught {
        resume_unwind(panic);
    }
}

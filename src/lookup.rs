//! Finding a session by id: `get`, `lookup`, `lookup_if`, and the checks
//! every path by id shares (`locate`, `examine`, `acquire`).

use crate::activity::{Check, Expire};
use crate::id::{ParseIdError, SessionId};
use crate::reason::{Miss, Reason};
use crate::registry::Registry;
use crate::session::Session;
use crate::slab::lifecycle::{Acquire, Word};
use crate::slab::slot::Slot;
use crate::slab::storage::{self, By};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

impl<S> Registry<S> {
    /// The live session named by `id`, if there is one.
    ///
    /// It must be live, in exactly the slot, generation and secret of the id.
    /// A session idle past the timeout (or already being expired by the
    /// reaper) is ended here, with [`Reason::IdleTimeout`], and not returned.
    /// Allocates nothing; a lookup of an ended session costs only loads.
    #[inline(always)]
    pub fn get(&self, id: &SessionId) -> Option<Session<S>> {
        self.lookup(id).ok()
    }

    /// Like [`get`](Registry::get), saying why nothing was found.
    //
    // Inlined into the caller whole, as `insert` is: the lookup's checks
    // fold into the caller's code. The expiry check, which may end the
    // session, is skipped when there is no idle timeout.
    #[inline(always)]
    pub fn lookup(&self, id: &SessionId) -> Result<Session<S>, Miss> {
        let slot = match self.acquire(id) {
            Ok(slot) => slot,
            Err(cause) => return Err(self.reject(cause)),
        };
        if let Some(timeout) = self.storage().clock.timeout_ms() {
            if let Err(cause) = self.unless_expired(id, slot, timeout) {
                return Err(self.reject(cause));
            }
        }
        // SAFETY: `acquire` took a reference on this slot for us, and
        // `unless_expired` did not give it back.
        Ok(unsafe { Session::from_held(self.storage, id.index()) })
    }

    /// Like [`lookup`](Registry::lookup), but the session is handed out only
    /// if `accept` says it is the caller's: for sessions bound to an owner
    /// (the principal that opened it). A refused session is reported as
    /// [`Miss::Principal`] and counted so; the caller should answer as
    /// for an unknown id, so that the answer is no oracle.
    ///
    /// `accept` sees the value of a live session with the id's own slot,
    /// generation and secret. A refusal has no effect on the session: it is
    /// neither touched nor expired.
    ///
    /// ```
    /// use sessionreg::{Registry, Miss};
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let id = registry.insert("ada").unwrap();
    /// assert!(registry.lookup_if(&id, |owner| *owner == "ada").is_ok());
    /// let err = registry.lookup_if(&id, |owner| *owner == "eve").unwrap_err();
    /// assert_eq!(err, Miss::Principal);
    /// assert_eq!(registry.stats().misses(Miss::Principal), 1);
    /// ```
    pub fn lookup_if(
        &self,
        id: &SessionId,
        accept: impl FnOnce(&S) -> bool,
    ) -> Result<Session<S>, Miss> {
        let slot = match self.acquire(id) {
            Ok(slot) => slot,
            Err(cause) => return Err(self.reject(cause)),
        };
        // SAFETY: `acquire` took a reference on this slot for us; the handle
        // gives it back when dropped.
        let session = unsafe { Session::from_held(self.storage, id.index()) };
        match catch_unwind(AssertUnwindSafe(|| accept(&session))) {
            Ok(true) => {}
            Ok(false) => return Err(self.reject(Miss::Principal)),
            Err(panic) => {
                // Giving the reference back may be the last one out of a
                // session ended meanwhile, and drop its value: not while
                // `accept`'s panic unwinds (a `Drop` panicking then would
                // abort). A second panic, the value's, is dropped.
                let _ = catch_unwind(AssertUnwindSafe(move || drop(session)));
                resume_unwind(panic);
            }
        }
        if let Some(timeout) = self.storage().clock.timeout_ms() {
            // `unless_expired` gives the reference back when it ends the
            // session: take it from the handle first.
            let session = std::mem::ManuallyDrop::new(session);
            if let Err(cause) = self.unless_expired(id, slot, timeout) {
                return Err(self.reject(cause));
            }
            return Ok(std::mem::ManuallyDrop::into_inner(session));
        }
        Ok(session)
    }

    /// Parses the text form of an id (a header value), counting a malformed
    /// one in [`Stats`](crate::Stats).
    pub fn parse_id(&self, text: &[u8]) -> Result<SessionId, ParseIdError> {
        let parsed = SessionId::parse_bytes(text);
        if parsed.is_err() {
            self.storage().counters.missed(Miss::Malformed);
        }
        parsed
    }

    /// Counts a rejected lookup, and passes the cause on.
    #[inline(always)]
    pub(crate) fn reject(&self, cause: Miss) -> Miss {
        self.storage().counters.missed(cause);
        cause
    }

    /// The slot an id points at, if the id is for this registry and the slot
    /// has ever been used.
    #[inline]
    pub(crate) fn locate(&self, id: &SessionId) -> Result<&Slot<S>, Miss> {
        let storage = self.storage();
        if u64::from(id.node()) != storage.node {
            return Err(Miss::Unknown);
        }
        storage.shards.slot(id.index()).ok_or(Miss::Unknown)
    }

    /// Takes a reference on the live session named by `id`.
    ///
    /// The reference is taken by a CAS that expects the word `examine`
    /// checked, and then the secret is checked again under it: a thread
    /// descheduled between the two while the slot was reused 2^30 times (its
    /// generation wrapping back to the id's) takes its reference on the newer
    /// session, finds it has another secret, and lets go. So a caller of
    /// `acquire` only ever holds the session its id names.
    //
    // Inlined into every caller, as `lookup` is inlined into its: out of
    // line (it has three callers) every lookup would pay a call, and the
    // moves of its arguments and results, around a few loads and one CAS.
    #[inline(always)]
    pub(crate) fn acquire(&self, id: &SessionId) -> Result<&Slot<S>, Miss> {
        let slot = self.locate(id)?;
        let mut word = slot.lifecycle.load();
        loop {
            match self.examine(slot, word, id) {
                Examined::Live => {}
                Examined::Ended => return Err(Miss::Stale),
                Examined::Missed(cause) => return Err(cause),
                Examined::Moved(now) => {
                    word = now;
                    continue;
                }
            }
            match slot.lifecycle.try_acquire(word) {
                Acquire::Acquired if slot.secret().matches(id.secret()) => return Ok(slot),
                Acquire::Acquired => {
                    self.let_go(id, slot);
                    return Err(Miss::Stale);
                }
                Acquire::Changed(now) => word = now,
            }
        }
    }

    /// Gives back a reference this registry method took on `slot`. Off the
    /// hot paths (a lookup that lost its session under it, a terminate that
    /// lost the race), so out of line: it may drop the value and free the
    /// slot.
    #[cold]
    #[inline(never)]
    pub(crate) fn let_go(&self, id: &SessionId, slot: &Slot<S>) {
        self.let_go_at(id.index(), slot);
    }

    /// [`let_go`](Self::let_go) of the slot at `index`.
    pub(crate) fn let_go_at(&self, index: u64, slot: &Slot<S>) {
        // SAFETY: the caller holds the reference it took on the slot at
        // `index`, inside a `&self` method (`By::Registry`).
        unsafe { storage::release(self.storage, index, NonNull::from(slot), By::Registry) }
    }

    /// Classifies `word` for `id`: generation and state by loads alone, then
    /// the secret, compared in constant time. An id of a session that has
    /// ended is `Ended` only if its secret is proven (see `ended`,
    /// `one_behind`): anything else about it is answered as about a guess.
    #[inline(always)]
    pub(crate) fn examine(&self, slot: &Slot<S>, word: Word, id: &SessionId) -> Examined {
        if word.names(id.generation()) {
            if word.is_live() {
                return if slot.secret().matches(id.secret()) {
                    Examined::Live
                } else {
                    mismatch(slot, id)
                };
            }
            return ended(slot, word, id);
        }
        if word.follows(id.generation(), self.storage().generations) {
            return one_behind(slot, word, id);
        }
        Examined::Missed(Miss::Unknown)
    }

    /// With a reference held on `slot`: if the session is idle past the
    /// timeout, or another thread has begun expiring it, ends it and gives
    /// the reference back. The check is inline and reads no clock: it
    /// compares the session's word with the number kept from the latest
    /// reading a sweep or a touch took (one comparison for a session recent
    /// or rough then), and a session that could be idle (nothing in flight,
    /// an exact stamp: see `activity.rs`) with that reading, never later
    /// than now (`Clock::recent_ms`); ending the session is not inline.
    #[inline(always)]
    pub(crate) fn unless_expired(
        &self,
        id: &SessionId,
        slot: &Slot<S>,
        timeout: u64,
    ) -> Result<(), Miss> {
        let clock = &self.storage().clock;
        match slot
            .activity
            .check(clock.recent_word(), || clock.recent_ms(), timeout)
        {
            Check::Busy => Ok(()),
            Check::Idle(now) => self.expire(id, slot, now, timeout),
            Check::Closed => self.end_expired(id, slot),
        }
    }

    /// [`unless_expired`](Self::unless_expired)'s rare path: ends the
    /// session if it is still idle (nothing began meanwhile), or if another
    /// thread has closed it to new requests meanwhile.
    #[cold]
    #[inline(never)]
    fn expire(&self, id: &SessionId, slot: &Slot<S>, now: u64, timeout: u64) -> Result<(), Miss> {
        match slot.activity.try_expire(now, timeout) {
            Expire::Expired => self.end_expired(id, slot),
            Expire::Active => Ok(()),
        }
    }

    /// Ends a session closed for expiry (by this thread or another: a
    /// session closed for expiry is never handed out), giving back the
    /// reference held on it.
    #[cold]
    #[inline(never)]
    fn end_expired(&self, id: &SessionId, slot: &Slot<S>) -> Result<(), Miss> {
        // Whether or not this call is the one that ends it, the session is
        // over for this caller.
        let _ = self.end_held(slot, *id, Reason::IdleTimeout);
        Err(Miss::Expired)
    }
}

/// A secret that did not match on `LIVE(g)` or `TERMINATED(g)` held by
/// someone. If the slot is still so, the secret read was its own (a slot
/// held cannot be freed; `Slot::secret` makes sure a link or a newer secret
/// shows an ended session here), and the id is forged; otherwise look again.
#[cold]
#[inline(never)]
fn mismatch<S>(slot: &Slot<S>, id: &SessionId) -> Examined {
    let now = slot.lifecycle.load();
    if now.names(id.generation()) && !now.is_being_freed() {
        Examined::Missed(Miss::Forged)
    } else {
        Examined::Moved(now)
    }
}

/// `TERMINATED(g)`, with `id` at `g`: `Ended` if the id's secret is the
/// session's. Held by someone, the slot still has the whole secret. With no
/// references left its last one out is freeing it: it records the secret's
/// digest first, then may put the slot on its free list, writing the link
/// over the low word; so the whole secret or the digest is there to
/// compare (the digest is read after the words: a reader that read the link
/// reads the digest written before it).
#[cold]
#[inline(never)]
fn ended<S>(slot: &Slot<S>, word: Word, id: &SessionId) -> Examined {
    if !word.is_being_freed() {
        return if slot.secret().matches(id.secret()) {
            Examined::Ended
        } else {
            mismatch(slot, id)
        };
    }
    if slot.secret().matches(id.secret()) || slot.ended_digest() == id.secret().digest() {
        return Examined::Ended;
    }
    // A newer session's secret shows the slot moved on (`Slot::secret`); if
    // it has not, neither the words nor the digest were this id's.
    let now = slot.lifecycle.load();
    if now.names(id.generation()) {
        Examined::Missed(Miss::Forged)
    } else {
        Examined::Moved(now)
    }
}

/// `word` is one generation on from `id`'s: the slot's previous session was
/// the id's (or, for a slot whose generation has not wrapped, none was),
/// and the slot keeps the digest of its secret. A match proves the id's
/// secret (a guess matches with probability 2^-64): `Ended`. The digest
/// changes only when the slot's next session is freed, so a mismatch is the
/// id's (`Forged`) while that has not begun; once it has, the id can no
/// longer be checked: `Unknown`, as an id two generations behind is.
//
// Inlined: a client's old id (its session ended, its slot freed) is the
// common miss, and its proof is one load, a multiplication and a compare;
// out of line, the call cost it as much again. A mismatch, rarer, is not.
#[inline(always)]
fn one_behind<S>(slot: &Slot<S>, word: Word, id: &SessionId) -> Examined {
    if slot.ended_digest() == id.secret().digest() {
        return Examined::Ended;
    }
    not_one_behind(slot, word)
}

/// [`one_behind`]'s mismatch: `Forged` while the slot's next session has
/// not begun to be freed, else `Unknown`.
#[cold]
#[inline(never)]
fn not_one_behind<S>(slot: &Slot<S>, word: Word) -> Examined {
    let now = slot.lifecycle.load();
    if !word.is_being_freed() && now.generation() == word.generation() && !now.is_being_freed() {
        Examined::Missed(Miss::Forged)
    } else {
        Examined::Missed(Miss::Unknown)
    }
}

/// What a lookup by id finds in its slot, from a snapshot of its word.
#[must_use]
pub(crate) enum Examined {
    /// The id's session, live, with the right secret: go ahead with a CAS
    /// that expects the snapshot.
    Live,
    /// The id named a session that has ended, and its secret is proven.
    Ended,
    /// The id never named a session here (`Unknown`, `Forged`).
    Missed(Miss),
    /// The session ended since the snapshot, so the secret read may not be
    /// its own: look again at this word.
    Moved(Word),
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use crate::{Miss, Registry, SessionId};

    /// Every bit of the 128-bit secret counts: an id with any one of them
    /// flipped is forged, whichever word it is in.
    #[test]
    fn a_wrong_bit_in_either_word_of_the_secret_is_forged() {
        let registry = Registry::builder().build().unwrap();
        let id = registry.insert(()).unwrap();
        let bytes = id.to_bytes();
        for bit in 64..192 {
            let mut forged = bytes;
            forged[bit / 8] ^= 1 << (bit % 8);
            let forged = SessionId::from_bytes(forged);
            assert_eq!(
                registry.lookup(&forged).map(drop),
                Err(Miss::Forged),
                "bit {bit} of the id"
            );
        }
        assert_eq!(registry.stats().misses(Miss::Forged), 128);
        assert!(registry.get(&id).is_some(), "the real id still works");
    }
}

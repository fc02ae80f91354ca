//! The handle to one session, and the guard that counts a request in flight.

use crate::activity::Enter;
use crate::id::SessionId;
use crate::slab::slot::Slot;
use crate::slab::storage::{self, By, Storage};
use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;

/// An owned handle to one session, returned by
/// [`Registry::get`](crate::Registry::get).
///
/// It derefs to the session's value, is cheap to clone (one atomic increment
/// on the session's own slot, nothing shared with other sessions), and is
/// `'static`: an async handler can hold it across `.await`, and it may even
/// outlive the registry.
///
/// While a handle exists the value stays in place, even after the session is
/// terminated; [`is_terminated`](Session::is_terminated) tells a handler in
/// flight that it should stop. The slot is reused, under a new generation,
/// only after the last handle is dropped.
///
/// ```
/// use sessionreg::{Reason, Registry};
///
/// let registry = Registry::builder().build().unwrap();
/// let id = registry.insert(String::from("state")).unwrap();
/// let session = registry.get(&id).unwrap();
/// assert_eq!(session.as_str(), "state");
/// assert_eq!(session.id(), id);
///
/// assert!(registry.terminate(&id, Reason::Deleted).is_won());
/// assert!(session.is_terminated());
/// assert_eq!(session.as_str(), "state"); // still readable by its holder
/// assert!(registry.get(&id).is_none());
/// ```
pub struct Session<S> {
    storage: NonNull<Storage<S>>,
    /// The slot's global index: the slot is found from it (`slot`), and the
    /// id rebuilt with it (`id`).
    index: u64,
}

// Two words, passed and returned in registers: a handle that also carried
// its slot and its 24-byte id was copied through memory, where a copy could
// stall on store forwarding (see `benches/HISTORY.md`, "A handle's copy").
const _: () = assert!(std::mem::size_of::<Session<()>>() == 16);

// SAFETY: a `Session` gives shared access to `S` from whichever thread holds
// it (so `S: Sync`), and the last handle may drop the value on its thread (so
// `S: Send`). Everything else it touches is atomics in the storage.
unsafe impl<S: Send + Sync> Send for Session<S> {}
// SAFETY: as above; `&Session` only gives `&S` and atomic operations.
unsafe impl<S: Send + Sync> Sync for Session<S> {}

impl<S> Session<S> {
    /// Wraps a reference the caller holds on `slot`.
    ///
    /// # Safety
    ///
    /// The caller holds a reference on the slot at `index` of `storage`,
    /// and hands it over to the new handle.
    #[inline]
    pub(crate) unsafe fn from_held(storage: NonNull<Storage<S>>, index: u64) -> Session<S> {
        Session { storage, index }
    }

    /// The storage this handle's session lives in.
    pub(crate) fn storage_ptr(&self) -> NonNull<Storage<S>> {
        self.storage
    }

    /// The slot of this handle's session; the handle's reference keeps it.
    pub(crate) fn slot_ref(&self) -> &Slot<S> {
        self.slot()
    }

    #[inline]
    fn slot(&self) -> &Slot<S> {
        // SAFETY: this handle holds a reference on the slot at `index`, so
        // its page is installed, and the storage outlives the handle.
        unsafe { self.storage().shards.held(self.index) }
    }

    /// The storage this handle's session lives in; the handle's reference
    /// keeps it.
    #[inline]
    pub(crate) fn storage(&self) -> &Storage<S> {
        // SAFETY: as in `slot`: a held reference keeps the storage alive.
        unsafe { self.storage.as_ref() }
    }

    /// The session's id.
    ///
    /// Rebuilt from the session's slot (a handle is two words and does not
    /// carry it): a few loads, no atomic read-modify-write.
    pub fn id(&self) -> SessionId {
        let slot = self.slot();
        // The handle's reference pins the generation and the secret: the
        // slot holds this session until the last handle is gone.
        self.storage()
            .id_of(self.index, slot, slot.lifecycle.load())
    }

    /// Whether the session has ended (by any path). Its value stays readable
    /// through this handle regardless.
    pub fn is_terminated(&self) -> bool {
        // The handle's reference pins the generation, so the word is this
        // session's: LIVE or TERMINATED.
        !self.slot().lifecycle.load().is_live()
    }

    /// Counts a request in flight until the returned guard is dropped, which
    /// stamps the session's last activity (roughly, with the system clock:
    /// its idle time starts at the next sweep, see
    /// [`Registry::reap_idle`](crate::Registry::reap_idle)). While any guard
    /// lives the session is never idle, however long the request takes.
    ///
    /// Returns `None` if the session has ended or is being expired: the
    /// request must not start (an HTTP server answers 404).
    ///
    /// The guard owns a handle of its own, so it can move into a spawned
    /// task (an SSE stream, say) and outlive this one.
    pub fn begin(&self) -> Option<InFlight<S>> {
        self.begin_at_most(u64::MAX).ok()
    }

    /// [`begin`](Session::begin), but only while fewer than `max` requests
    /// are in flight on the session (counting every guard of it: requests,
    /// and streams that hold one): the check and the count are one atomic
    /// step, so concurrent requests never pass the limit. For a per-session
    /// cap (the HTTP layer answers 429 past it).
    ///
    /// ```
    /// use sessionreg::{BeginError, Registry};
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let session = registry.get(&registry.insert(()).unwrap()).unwrap();
    /// let first = session.begin_at_most(2).unwrap();
    /// let second = session.begin_at_most(2).unwrap();
    /// assert_eq!(session.begin_at_most(2).unwrap_err(), BeginError::Full);
    /// drop(first);
    /// assert!(session.begin_at_most(2).is_ok());
    /// # drop(second);
    /// ```
    pub fn begin_at_most(&self, max: u64) -> Result<InFlight<S>, BeginError> {
        if self.is_terminated() {
            return Err(BeginError::Ended);
        }
        match self.slot().activity.enter(max) {
            Enter::Entered => Ok(InFlight {
                session: self.clone(),
            }),
            Enter::Closed => Err(BeginError::Ended),
            Enter::Full => Err(BeginError::Full),
        }
    }

    /// Stamps the session's last activity now, restarting its idle clock.
    /// While requests are in flight it does nothing: the idle clock starts
    /// again when the last of them ends, which is later.
    pub fn touch(&self) {
        let clock = &self.storage().clock;
        if clock.timeout_ms().is_some() {
            self.slot().activity.touch(|| clock.exact_stamp());
        }
    }

    /// Requests in flight on this session right now.
    pub fn in_flight(&self) -> u64 {
        self.slot().activity.in_flight()
    }
}

impl<S> Deref for Session<S> {
    type Target = S;

    #[inline]
    fn deref(&self) -> &S {
        // SAFETY: this handle holds a reference on the slot for as long as
        // the borrow of `self` lasts.
        unsafe { self.slot().value() }
    }
}

impl<S> Clone for Session<S> {
    fn clone(&self) -> Self {
        self.slot().lifecycle.clone_ref();
        Session {
            storage: self.storage,
            index: self.index,
        }
    }
}

impl<S> Drop for Session<S> {
    #[inline]
    fn drop(&mut self) {
        let slot = NonNull::from(self.slot());
        // SAFETY: this handle holds a reference on the slot at `index` of a
        // live storage, and gives it up here, never to use it again.
        unsafe { storage::release(self.storage, self.index, slot, By::Handle) }
    }
}

impl<S: fmt::Debug> fmt::Debug for Session<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id())
            .field("terminated", &self.is_terminated())
            .field("value", &**self)
            .finish()
    }
}

/// Why [`Session::begin_at_most`] did not count a request in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BeginError {
    /// The session has ended, or is being expired: the request must not
    /// start (an HTTP server answers 404).
    Ended,
    /// As many requests as allowed are in flight on it already (an HTTP
    /// server answers 429).
    Full,
}

impl fmt::Display for BeginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BeginError::Ended => "the session has ended",
            BeginError::Full => "the session has as many requests in flight as it may",
        })
    }
}

impl std::error::Error for BeginError {}

/// A request in flight on a session; see [`Session::begin`] and
/// [`Registry::insert_in_flight`](crate::Registry::insert_in_flight). Derefs
/// to the session.
#[must_use = "the request counts as in flight only while the guard lives"]
pub struct InFlight<S> {
    session: Session<S>,
}

impl<S> InFlight<S> {
    /// Wraps a session whose in-flight count already includes this request.
    pub(crate) fn counted(session: Session<S>) -> InFlight<S> {
        InFlight { session }
    }
}

impl<S> Deref for InFlight<S> {
    type Target = Session<S>;

    fn deref(&self) -> &Session<S> {
        &self.session
    }
}

impl<S> Drop for InFlight<S> {
    fn drop(&mut self) {
        // A request's end reads no clock (see `Clock::stamp`).
        let stamp = self.session.storage().clock.stamp();
        self.session.slot().activity.exit(stamp);
    }
}

impl<S> fmt::Debug for InFlight<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InFlight")
            .field("id", &self.session.id())
            .finish()
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use crate::{Reason, Registry};
    use std::collections::HashSet;

    /// A handle carries no id and rebuilds it from its slot: every way of
    /// getting a handle gives back the session's own id, over many pages
    /// and shards, after the session ended, and for the next session in a
    /// reused slot.
    #[test]
    fn a_handle_rebuilds_its_own_id() {
        let registry = Registry::builder()
            .capacity(5000)
            .shards(4)
            .node_id(0x2a)
            .build()
            .unwrap();
        let ids: Vec<_> = (0..3000).map(|i| registry.insert(i).unwrap()).collect();
        let held: Vec<_> = ids.iter().map(|id| registry.get(id).unwrap()).collect();
        for (id, session) in ids.iter().zip(&held) {
            assert_eq!(session.id(), *id);
            assert_eq!(session.clone().id(), *id);
        }
        let live: HashSet<_> = registry.live().map(|s| s.id()).collect();
        assert_eq!(live, ids.iter().copied().collect());
        for id in &ids[..1500] {
            assert!(registry.terminate(id, Reason::Deleted).is_won());
        }
        // Ended, but held: the generation and the secret stay the session's.
        for (id, session) in ids.iter().zip(&held) {
            assert_eq!(session.id(), *id);
        }
        drop(held);
        // The freed slots' next sessions: new ids, which their handles give.
        let again: Vec<_> = (0..1500).map(|i| registry.insert(i).unwrap()).collect();
        for id in &again {
            assert!(!ids.contains(id));
            assert_eq!(registry.get(id).unwrap().id(), *id);
        }
        let first = registry.insert_in_flight(7).unwrap();
        assert_eq!(registry.get(&first.id()).unwrap().id(), first.id());
    }
}

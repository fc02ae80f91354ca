//! The registry: insert, look up and terminate sessions by id.

use crate::activity::Expire;
use crate::builder::Builder;
use crate::id::{fresh_secret, secrets_match, ParseIdError, SessionId};
use crate::lifecycle::{Acquire, Terminate, Word};
use crate::reason::{Reason, Rejection};
use crate::session::{InFlight, Session};
use crate::slot::Slot;
use crate::stats::Stats;
use crate::storage::{self, By, Storage};
use crate::tid;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;

pub(crate) type OnClose<S> = Box<dyn Fn(&SessionId, &S, Reason) + Send + Sync>;

/// A concurrent registry of sessions of type `S`.
///
/// Share it as `Arc<Registry<S>>`. Every way a session ends goes through
/// [`terminate`](Registry::terminate) (or the sweeps [`reap_idle`] and
/// [`terminate_all`], which end each session the same way): one atomic CAS
/// picks one winner per session, and only the winner runs the close callback,
/// once, with the reason it won for.
///
/// Dropping the registry terminates every session still live with
/// [`Reason::Shutdown`] (the close callback runs for each); handles still held
/// stay valid, and the storage is freed with the last of them.
///
/// [`reap_idle`]: Registry::reap_idle
/// [`terminate_all`]: Registry::terminate_all
pub struct Registry<S> {
    storage: NonNull<Storage<S>>,
    on_close: Option<OnClose<S>>,
    capacity: usize,
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
    /// [`Stats`] as a [`Rejection::Stale`] lookup (the id named a session
    /// that is over).
    AlreadyTerminated,
    /// The id never named a session here: another node's, a slot or
    /// generation not reached yet ([`Rejection::Unknown`]), or a wrong secret
    /// ([`Rejection::Forged`]). Counted in [`Stats`].
    Rejected(Rejection),
}

impl Termination {
    /// Whether this call ended the session.
    pub fn is_won(self) -> bool {
        self == Termination::Won
    }
}

/// The error from [`Registry::insert`] (and its variants) at capacity. Holds
/// what the call was given, so nothing is lost: the value, or for
/// [`insert_with`](Registry::insert_with) the function that was never called.
pub struct InsertError<S> {
    value: S,
    capacity: usize,
}

impl<S> InsertError<S> {
    /// The value (or function) that was not inserted.
    pub fn into_inner(self) -> S {
        self.value
    }
}

/// What a new session's value is made from, once its id is known.
trait Make<S> {
    fn make(self, id: SessionId) -> S;
}

/// A value given as is ([`Registry::insert`]).
struct Given<S>(S);

impl<S> Make<S> for Given<S> {
    #[inline(always)]
    fn make(self, _: SessionId) -> S {
        self.0
    }
}

/// A value made from the new id ([`Registry::insert_with`]).
struct MadeWith<F>(F);

impl<S, F: FnOnce(SessionId) -> S> Make<S> for MadeWith<F> {
    #[inline(always)]
    fn make(self, id: SessionId) -> S {
        (self.0)(id)
    }
}

impl<S> fmt::Debug for InsertError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InsertError")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl<S> fmt::Display for InsertError<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the registry is at capacity ({} sessions)",
            self.capacity
        )
    }
}

impl<S> std::error::Error for InsertError<S> {}

impl<S: Send + Sync + 'static> Registry<S> {
    /// A builder, to set capacity, idle timeout and close callback.
    ///
    /// ```
    /// use std::time::Duration;
    /// use sessionreg::Registry;
    ///
    /// let registry = Registry::<u32>::builder()
    ///     .capacity(10_000)
    ///     .idle_timeout(Duration::from_secs(30 * 60))
    ///     .on_close(|id, value, reason| println!("{id} ({value}) ended: {reason}"))
    ///     .build()
    ///     .expect("valid configuration");
    /// assert_eq!(registry.capacity(), 10_000);
    /// ```
    pub fn builder() -> Builder<S> {
        Builder::new()
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
    fn storage(&self) -> &Storage<S> {
        // SAFETY: the storage is freed only after the registry is dropped
        // (see `Storage::orphan_all`).
        unsafe { self.storage.as_ref() }
    }

    /// Creates a session holding `value` and returns its id.
    ///
    /// At capacity it fails at once and hands the value back: it never
    /// blocks and never evicts another session.
    // Inlined whole, so the id is not returned through memory (see `lookup`).
    #[inline(always)]
    pub fn insert(&self, value: S) -> Result<SessionId, InsertError<S>> {
        match self.create(Given(value), false) {
            Ok((id, _)) => Ok(id),
            Err(Given(value)) => Err(self.at_capacity(value)),
        }
    }

    /// Creates a session whose value is made from its id, for values that
    /// must know their own id (a transport or worker named by the session's
    /// header value, say); returns the id.
    ///
    /// `make` runs on this thread, once, after a slot has been taken and
    /// before the session is visible to anyone: no lookup can find the
    /// session until `make` has returned and the value is in place. At
    /// capacity `make` is not called, and the error hands it back. If `make`
    /// panics, the slot goes back to the free list and the panic propagates;
    /// no session is created, counted or closed.
    ///
    /// ```
    /// use sessionreg::Registry;
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let id = registry.insert_with(|id| format!("worker for {id}")).unwrap();
    /// assert_eq!(*registry.get(&id).unwrap(), format!("worker for {id}"));
    /// ```
    pub fn insert_with<F>(&self, make: F) -> Result<SessionId, InsertError<F>>
    where
        F: FnOnce(SessionId) -> S,
    {
        match self.create(MadeWith(make), false) {
            Ok((id, _)) => Ok(id),
            Err(MadeWith(make)) => Err(self.at_capacity(make)),
        }
    }

    /// [`insert_with`](Registry::insert_with) with the first request already
    /// in flight, as [`insert_in_flight`](Registry::insert_in_flight).
    pub fn insert_in_flight_with<F>(&self, make: F) -> Result<InFlight<S>, InsertError<F>>
    where
        F: FnOnce(SessionId) -> S,
    {
        match self.create(MadeWith(make), true) {
            // SAFETY: `create` with `in_flight` published the session
            // holding a reference for us, and counted one request in flight.
            Ok((id, slot)) => Ok(InFlight::counted(unsafe {
                Session::from_held(self.storage, slot, id)
            })),
            Err(MadeWith(make)) => Err(self.at_capacity(make)),
        }
    }

    #[cold]
    fn at_capacity<T>(&self, value: T) -> InsertError<T> {
        InsertError {
            value,
            capacity: self.capacity,
        }
    }

    /// Creates a session with its first request already in flight, and
    /// returns that request's guard (which derefs to the session: its
    /// [`id`](Session::id) is the new id).
    ///
    /// Use this when a request creates the session (an MCP `initialize`):
    /// the session cannot be idle, nor expire, before the request that
    /// created it has even started, however long this thread is descheduled.
    ///
    /// ```
    /// use std::time::Duration;
    /// use sessionreg::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .idle_timeout(Duration::ZERO) // idle the moment nothing is in flight
    ///     .build()
    ///     .unwrap();
    /// let request = registry.insert_in_flight("state").unwrap();
    /// let id = request.id();
    /// assert_eq!(registry.reap_idle(), 0, "a request is in flight");
    /// drop(request);
    /// assert_eq!(registry.reap_idle(), 1);
    /// assert!(registry.get(&id).is_none());
    /// ```
    pub fn insert_in_flight(&self, value: S) -> Result<InFlight<S>, InsertError<S>> {
        match self.create(Given(value), true) {
            // SAFETY: `create` with `in_flight` published the session
            // holding a reference for us, and counted one request in flight.
            Ok((id, slot)) => Ok(InFlight::counted(unsafe {
                Session::from_held(self.storage, slot, id)
            })),
            Err(Given(value)) => Err(self.at_capacity(value)),
        }
    }

    /// Takes a free slot, makes the value for the new id, and publishes the
    /// session; at capacity, hands `make` back.
    #[inline(always)]
    fn create<M: Make<S>>(&self, make: M, in_flight: bool) -> Result<(SessionId, &Slot<S>), M> {
        let storage = self.storage();
        // Drawn before a slot is taken, so that nothing can fail (and leak
        // the slot) between taking it and publishing it.
        let secret = fresh_secret();
        let Some((index, slot)) = storage.allocate(storage.home_shard(tid::current())) else {
            return Err(make);
        };
        // The slot is ours and `FREE(g)`: `g` is the generation it will be
        // published under.
        let id = SessionId::new(
            index,
            slot.lifecycle.owned_generation(),
            storage.node,
            secret,
        );
        let value = {
            // If `make` panics, the slot goes back to its free list unused.
            let give_back = storage.give_back_on_unwind(index, slot);
            let value = make.make(id);
            give_back.disarm();
            value
        };
        // Counted before the session is visible, so that a racing terminate
        // can never make the live count dip below zero.
        storage.counters.created();
        // SAFETY: `allocate` handed the free slot to us alone.
        let generation = unsafe { slot.fill(value, secret, storage.now(), in_flight) };
        debug_assert_eq!(generation, id.generation());
        Ok((id, slot))
    }

    /// The live session named by `id`, if there is one.
    ///
    /// It must be live, in exactly the slot, generation and secret of the id.
    /// A session idle past the timeout is ended here, with
    /// [`Reason::IdleTimeout`], and not returned. Allocates nothing; a lookup
    /// of an ended session costs only loads.
    #[inline(always)]
    pub fn get(&self, id: &SessionId) -> Option<Session<S>> {
        self.lookup(id).ok()
    }

    /// Like [`get`](Registry::get), saying why nothing was found.
    //
    // Inlined into the caller whole, as `insert` is: the handle (32 bytes)
    // then stays in registers instead of being returned through memory and
    // reloaded by the caller with wider loads than the stores that wrote it
    // (a store-forwarding stall that `perf` showed on the instruction after
    // every `get`). The expiry check, which reads the clock and may end the
    // session, is skipped when there is no idle timeout.
    #[inline(always)]
    pub fn lookup(&self, id: &SessionId) -> Result<Session<S>, Rejection> {
        let slot = match self.acquire(id) {
            Ok(slot) => slot,
            Err(cause) => return Err(self.reject(cause)),
        };
        if let Some(timeout) = self.storage().idle_timeout_ms {
            if let Err(cause) = self.unless_expired(id, slot, timeout) {
                return Err(self.reject(cause));
            }
        }
        // SAFETY: `acquire` took a reference on this slot for us, and
        // `unless_expired` did not give it back.
        Ok(unsafe { Session::from_held(self.storage, slot, *id) })
    }

    /// Like [`lookup`](Registry::lookup), but the session is handed out only
    /// if `accept` says it is the caller's: for sessions bound to an owner
    /// (the principal that opened it). A refused session is reported as
    /// [`Rejection::Principal`] and counted so; the caller should answer as
    /// for an unknown id, so that the answer is no oracle.
    ///
    /// `accept` sees the value of a live session with the id's own slot,
    /// generation and secret. A refusal has no effect on the session: it is
    /// neither touched nor expired.
    ///
    /// ```
    /// use sessionreg::{Registry, Rejection};
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let id = registry.insert("ada").unwrap();
    /// assert!(registry.lookup_if(&id, |owner| *owner == "ada").is_ok());
    /// let err = registry.lookup_if(&id, |owner| *owner == "eve").unwrap_err();
    /// assert_eq!(err, Rejection::Principal);
    /// assert_eq!(registry.stats().rejected(Rejection::Principal), 1);
    /// ```
    pub fn lookup_if(
        &self,
        id: &SessionId,
        accept: impl FnOnce(&S) -> bool,
    ) -> Result<Session<S>, Rejection> {
        let slot = match self.acquire(id) {
            Ok(slot) => slot,
            Err(cause) => return Err(self.reject(cause)),
        };
        // SAFETY: `acquire` took a reference on this slot for us; the handle
        // gives it back when dropped, on every path below.
        let session = unsafe { Session::from_held(self.storage, slot, *id) };
        if !accept(&session) {
            return Err(self.reject(Rejection::Principal));
        }
        if let Some(timeout) = self.storage().idle_timeout_ms {
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

    /// Ends the session that `session` is a handle to, for `reason`: the same
    /// one terminate as [`terminate`](Registry::terminate), for a caller that
    /// already holds the session (a request handler ending its own session,
    /// or one found with [`lookup_if`](Registry::lookup_if)). The handle
    /// pins the session, so this cannot reach any other one, and it costs one
    /// atomic operation fewer than ending by id.
    ///
    /// A handle from another registry is [`Termination::Rejected`] with
    /// [`Rejection::Unknown`].
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
            return self.rejected(Rejection::Unknown);
        }
        let id = session.id();
        let slot = session.slot_ref();
        let mut word = slot.lifecycle.load();
        while word.is_live() {
            // The handle's reference keeps the slot: never alone.
            match slot.lifecycle.try_terminate(word, false) {
                Terminate::Won | Terminate::WonAlone => {
                    self.finish(id.index(), slot, id, reason, Hold::Borrowed);
                    return Termination::Won;
                }
                Terminate::Changed(now) => word = now,
            }
        }
        self.already_terminated()
    }

    /// Counts a rejected lookup, and passes the cause on.
    #[inline(always)]
    fn reject(&self, cause: Rejection) -> Rejection {
        self.storage().counters.rejected(cause);
        cause
    }

    /// Parses the text form of an id (a header value), counting a malformed
    /// one in [`Stats`].
    pub fn parse_id(&self, text: &[u8]) -> Result<SessionId, ParseIdError> {
        let parsed = SessionId::parse_bytes(text);
        if parsed.is_err() {
            self.storage().counters.rejected(Rejection::Malformed);
        }
        parsed
    }

    /// Ends the session named by `id`, for `reason`: the one function every
    /// way a session ends goes through.
    ///
    /// One CAS on the session's lifecycle word decides: the caller whose CAS
    /// moves it from live to terminated gets [`Termination::Won`], the live
    /// count drops, and the close callback runs, once, on this thread, before
    /// this returns. Every other caller with the same id, now or later, gets
    /// `AlreadyTerminated`, which is not an error.
    ///
    /// If the close callback panics, the panic propagates from here; the
    /// session is terminated all the same and its slot is not leaked.
    pub fn terminate(&self, id: &SessionId, reason: Reason) -> Termination {
        let (index, slot) = match self.locate(id) {
            Ok(found) => found,
            Err(cause) => return self.rejected(cause),
        };
        let mut word = slot.lifecycle.load();
        loop {
            match examine(slot, word, id) {
                Examined::Live => {}
                Examined::Ended => return self.already_terminated(),
                Examined::Rejected(cause) => return self.rejected(cause),
                Examined::Moved(now) => {
                    word = now;
                    continue;
                }
            }
            match slot.lifecycle.try_terminate(word, true) {
                Terminate::Won => {
                    self.finish(index, slot, *id, reason, Hold::Ref);
                    return Termination::Won;
                }
                Terminate::WonAlone => {
                    self.finish(index, slot, *id, reason, Hold::Alone);
                    return Termination::Won;
                }
                Terminate::Changed(now) => word = now,
            }
        }
    }

    /// Ends every session that is idle now (nothing in flight, no activity
    /// for the idle timeout) with [`Reason::IdleTimeout`]; returns how many
    /// this call ended. Does nothing without an idle timeout.
    ///
    /// Run it periodically (the HTTP layer runs it on a timer). Each session
    /// ends through the same CAS as [`terminate`](Registry::terminate).
    pub fn reap_idle(&self) -> usize {
        let storage = self.storage();
        let Some(timeout) = storage.idle_timeout_ms else {
            return 0;
        };
        let now = storage.clock.now_ms();
        let mut ended = 0;
        for (index, slot) in storage.used_slots() {
            let mut word = slot.lifecycle.load();
            // A cheap look first: most sessions are busy or recent.
            while word.is_live() && slot.activity.looks_idle(now, timeout) {
                match slot.lifecycle.try_acquire(word) {
                    Acquire::Changed(now) => word = now,
                    Acquire::Acquired => {
                        let id = self.id_of(index, slot, word);
                        if slot.activity.try_expire(now, timeout) == Expire::Expired {
                            ended +=
                                usize::from(self.end_held(index, slot, id, Reason::IdleTimeout));
                        } else {
                            // SAFETY: we hold the reference just taken, in a
                            // `&self` method of the registry (`By::Registry`).
                            unsafe {
                                storage::release(
                                    self.storage,
                                    index,
                                    NonNull::from(slot),
                                    By::Registry,
                                )
                            };
                        }
                        break;
                    }
                }
            }
        }
        ended
    }

    /// Ends every live session with `reason` (for shutdown: see also
    /// [`Reason::Shutdown`]); returns how many this call ended.
    ///
    /// Sessions inserted while it runs may survive it: stop inserting first.
    pub fn terminate_all(&self, reason: Reason) -> usize {
        let mut ended = 0;
        for (index, slot) in self.storage().used_slots() {
            let mut word = slot.lifecycle.load();
            while word.is_live() {
                let hold = match slot.lifecycle.try_terminate(word, true) {
                    Terminate::Won => Hold::Ref,
                    Terminate::WonAlone => Hold::Alone,
                    Terminate::Changed(now) => {
                        word = now;
                        continue;
                    }
                };
                let id = self.id_of(index, slot, word);
                self.finish(index, slot, id, reason, hold);
                ended += 1;
                break;
            }
        }
        ended
    }

    /// Live sessions: created and not yet terminated. Exact when no insert or
    /// terminate is running concurrently.
    pub fn len(&self) -> usize {
        self.storage().counters.live()
    }

    /// Whether no session is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The configured maximum of live sessions.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        self.storage()
            .counters
            .snapshot(self.capacity, self.storage().node as u8)
    }

    /// The slot an id points at, if the id is for this registry and the slot
    /// has ever been used.
    #[inline]
    fn locate(&self, id: &SessionId) -> Result<(u64, &Slot<S>), Rejection> {
        let storage = self.storage();
        if u64::from(id.node()) != storage.node {
            return Err(Rejection::Unknown);
        }
        match storage.slot(id.index()) {
            Some(slot) => Ok((id.index(), slot)),
            None => Err(Rejection::Unknown),
        }
    }

    /// Takes a reference on the live session named by `id`.
    #[inline]
    fn acquire(&self, id: &SessionId) -> Result<&Slot<S>, Rejection> {
        let (_, slot) = self.locate(id)?;
        let mut word = slot.lifecycle.load();
        loop {
            match examine(slot, word, id) {
                Examined::Live => {}
                Examined::Ended => return Err(Rejection::Stale),
                Examined::Rejected(cause) => return Err(cause),
                Examined::Moved(now) => {
                    word = now;
                    continue;
                }
            }
            match slot.lifecycle.try_acquire(word) {
                Acquire::Acquired => return Ok(slot),
                Acquire::Changed(now) => word = now,
            }
        }
    }

    /// With a reference held on `slot`: if the session is idle past the
    /// timeout, ends it and gives the reference back. The check is inline
    /// (a clock read and a compare, on every lookup when there is a
    /// timeout); ending the session is not.
    #[inline(always)]
    fn unless_expired(
        &self,
        id: &SessionId,
        slot: &Slot<S>,
        timeout: u64,
    ) -> Result<(), Rejection> {
        let now = self.storage().clock.now_ms();
        if slot.activity.looks_idle(now, timeout) {
            return self.expire(id, slot, now, timeout);
        }
        Ok(())
    }

    /// [`unless_expired`](Self::unless_expired)'s rare path: ends the
    /// session if it is still idle (nothing began meanwhile).
    #[cold]
    #[inline(never)]
    fn expire(
        &self,
        id: &SessionId,
        slot: &Slot<S>,
        now: u64,
        timeout: u64,
    ) -> Result<(), Rejection> {
        if slot.activity.try_expire(now, timeout) == Expire::Expired {
            // Whether or not this call is the one that ends it, the
            // session is over for this caller.
            let _ = self.end_held(id.index(), slot, *id, Reason::IdleTimeout);
            return Err(Rejection::Expired);
        }
        Ok(())
    }

    /// With a reference held on a session that has been closed to new
    /// requests (or must end for another reason): ends it with `reason` if it
    /// is still live, and gives the reference back either way. Returns
    /// whether this call ended it.
    fn end_held(&self, index: u64, slot: &Slot<S>, id: SessionId, reason: Reason) -> bool {
        let mut word = slot.lifecycle.load();
        while word.is_live() {
            match slot.lifecycle.try_terminate(word, false) {
                // (Never alone: we hold a reference.)
                Terminate::Won | Terminate::WonAlone => {
                    // `finish` gives back the reference we hold.
                    self.finish(index, slot, id, reason, Hold::Ref);
                    return true;
                }
                Terminate::Changed(now) => word = now,
            }
        }
        // SAFETY: we hold a reference, and the storage is alive (we are in a
        // `&self` method of the registry).
        unsafe { storage::release(self.storage, index, NonNull::from(slot), By::Registry) };
        false
    }

    /// Runs the cleanup of a session whose termination this thread won, then
    /// lets go of the slot as `hold` says. The one place where a session's
    /// end is counted and announced.
    fn finish(&self, index: u64, slot: &Slot<S>, id: SessionId, reason: Reason, hold: Hold) {
        /// Lets go of the slot even if the callback panics, so it is not
        /// leaked.
        struct LetGo<S> {
            storage: NonNull<Storage<S>>,
            index: u64,
            slot: NonNull<Slot<S>>,
            hold: Hold,
        }
        impl<S> Drop for LetGo<S> {
            fn drop(&mut self) {
                // SAFETY: constructed below over the winner's hold on the
                // slot, which is let go exactly once, here: a reference is
                // given back, or a slot nobody held is retired. The guard
                // lives inside `finish`, a `&self` method (`By::Registry`).
                unsafe {
                    match self.hold {
                        Hold::Ref => {
                            storage::release(self.storage, self.index, self.slot, By::Registry)
                        }
                        Hold::Alone => {
                            storage::retire(self.storage, self.index, self.slot, By::Registry)
                        }
                        Hold::Borrowed => {}
                    }
                }
            }
        }
        let _let_go = LetGo {
            storage: self.storage,
            index,
            slot: NonNull::from(slot),
            hold,
        };
        self.storage().counters.terminated(reason);
        if let Some(on_close) = &self.on_close {
            // SAFETY: the winner holds the slot (a reference, or the slot
            // alone) until `_let_go` drops.
            on_close(&id, unsafe { slot.value() }, reason);
        }
    }

    fn id_of(&self, index: u64, slot: &Slot<S>, word: Word) -> SessionId {
        SessionId::new(index, word.generation(), self.storage().node, slot.secret())
    }

    /// Counted as a stale lookup: the id named a session that has ended,
    /// which is what a `DELETE` of an old id, or the loser of a race, did.
    fn already_terminated(&self) -> Termination {
        self.storage().counters.rejected(Rejection::Stale);
        Termination::AlreadyTerminated
    }

    fn rejected(&self, cause: Rejection) -> Termination {
        self.storage().counters.rejected(cause);
        Termination::Rejected(cause)
    }
}

/// How the winner of a terminate holds the slot while it cleans up.
#[derive(Clone, Copy)]
enum Hold {
    /// A reference, given back afterwards (others may hold some too).
    Ref,
    /// The slot itself: nobody held the session, so the winner is also its
    /// last one out and retires it afterwards.
    Alone,
    /// The caller's handle's reference, which the handle keeps.
    Borrowed,
}

/// What a lookup by id finds in its slot, from a snapshot of its word.
#[must_use]
enum Examined {
    /// The id's session, live, with the right secret: go ahead with a CAS
    /// that expects the snapshot.
    Live,
    /// The id named a session that has ended.
    Ended,
    /// The id never named a session here (`Unknown`, `Forged`).
    Rejected(Rejection),
    /// The session ended since the snapshot, so the secret read may not be
    /// its own: look again at this word.
    Moved(Word),
}

/// Classifies `word` for `id`: generation and state by loads alone, then
/// the secret, compared in constant time.
#[inline]
fn examine<S>(slot: &Slot<S>, word: Word, id: &SessionId) -> Examined {
    if !word.names(id.generation()) {
        return if word.has_passed(id.generation()) {
            Examined::Ended
        } else {
            Examined::Rejected(Rejection::Unknown)
        };
    }
    if !word.is_live() {
        return Examined::Ended;
    }
    if secrets_match(slot.secret(), id.secret()) {
        return Examined::Live;
    }
    // A mismatch on `LIVE(g)`: if the session has ended since the snapshot,
    // the secret read may be a free-list link or a newer session's (and
    // `Slot::secret` makes sure an ended session shows here); otherwise the
    // id is forged.
    let now = slot.lifecycle.load();
    if now.is_live() && now.generation() == word.generation() {
        Examined::Rejected(Rejection::Forged)
    } else {
        Examined::Moved(now)
    }
}

impl<S> Drop for Registry<S> {
    fn drop(&mut self) {
        let _ = self.terminate_all(Reason::Shutdown);
        if self.storage().orphan_all() {
            // SAFETY: no slot is held and the registry is going: nobody else
            // can reach the storage, which `from_parts` allocated as a Box.
            drop(unsafe { Box::from_raw(self.storage.as_ptr()) });
        }
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

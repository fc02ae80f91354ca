//! Creating sessions: `insert` and its variants, and the one path they share.

use crate::id::SessionId;
use crate::registry::Registry;
use crate::secret::fresh_secret;
use crate::session::{InFlight, Session};
use crate::slab::slot::Slot;
use crate::tid;
use std::fmt;

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

    /// The same error, holding `f` of its value (for stores built on the
    /// registry, which insert a wrapper of the caller's value).
    pub(crate) fn map<U>(self, f: impl FnOnce(S) -> U) -> InsertError<U> {
        InsertError {
            value: f(self.value),
            capacity: self.capacity,
        }
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

impl<S> Registry<S> {
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
            Ok((id, _)) => Ok(InFlight::counted(unsafe {
                Session::from_held(self.storage, id.index())
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
    /// // The request's end reads no clock: the next sweep starts the
    /// // session's idle time, and the one after ends it.
    /// drop(request);
    /// assert_eq!(registry.reap_idle(), 0);
    /// assert_eq!(registry.reap_idle(), 1);
    /// assert!(registry.get(&id).is_none());
    /// ```
    pub fn insert_in_flight(&self, value: S) -> Result<InFlight<S>, InsertError<S>> {
        match self.create(Given(value), true) {
            // SAFETY: `create` with `in_flight` published the session
            // holding a reference for us, and counted one request in flight.
            Ok((id, _)) => Ok(InFlight::counted(unsafe {
                Session::from_held(self.storage, id.index())
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
        let Some((index, slot)) = storage.allocate(storage.shards.home_shard(tid::current()))
        else {
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
            let give_back = storage.shards.give_back_on_unwind(index, slot);
            let value = make.make(id);
            give_back.disarm();
            value
        };
        // Counted before the session is visible, so that a racing terminate
        // can never make the live count dip below zero.
        storage.counters.created();
        // SAFETY: `allocate` handed the free slot to us alone.
        let generation = unsafe { slot.fill(value, secret, storage.clock.stamp(), in_flight) };
        debug_assert_eq!(generation, id.generation());
        // After the publish: a sweep that sees the page's count sees the
        // session.
        storage.shards.inserted(index);
        Ok((id, slot))
    }
}

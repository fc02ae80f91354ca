//! Handles: application values behind opaque ids, for servers that keep
//! state across calls without protocol sessions (MCP 2026-07-28, SEP-2567:
//! "servers that need cross-call state mint explicit handles passed as
//! ordinary tool arguments").
//!
//! Each handle is an entry of a [`Registry`] of its own, so it has what the
//! guidance asks for by construction: an id with a 128-bit secret from the
//! CSPRNG (and the node prefix a fleet routes by), and nothing of the
//! caller's in it (48 hex digits: the node, the slot and its generation,
//! which say only where to look, then the secret, without which the id
//! finds nothing); a bounded lifetime (the registry's
//! idle timeout, which a call in progress holds off: [`Resolved::Found`]
//! counts as in flight); and the owner it was minted for, checked on every
//! resolve, so another principal's handle is answered like an unknown one.
//! An owner may hold at most its share of the handles
//! ([`HandlesBuilder::owner_share`]), so that one principal cannot mint the
//! store full and lock everyone else out; past it, [`MintError::OverShare`],
//! told apart from the store's capacity ([`MintError::AtCapacity`]).
//!
//! ```
//! use std::time::Duration;
//! use sessionreg::handles::{Handles, Resolved};
//!
//! let baskets: Handles<&str, Vec<String>> = Handles::builder()
//!     .lifetime(Duration::from_secs(24 * 3600))
//!     .build()
//!     .unwrap();
//! let id = baskets.mint("ada", vec![]).unwrap();
//! match baskets.resolve(&id, &"ada") {
//!     Resolved::Found(basket) => assert!(basket.value().is_empty()),
//!     other => panic!("{other:?}"),
//! }
//! assert!(matches!(baskets.resolve(&id, &"eve"), Resolved::Unknown));
//! assert!(baskets.destroy(&id, &"ada"));
//! assert!(matches!(baskets.resolve(&id, &"ada"), Resolved::Ended));
//! ```

use crate::builder::{BuildError, Builder};
use crate::clock::ManualClock;
use crate::id::SessionId;
use crate::insert::InsertError;
use crate::reason::{Miss, Reason};
use crate::registry::Registry;
use crate::session::InFlight;
use crate::shares::{Share, ShareFull, Shares};
use crate::stats::Stats;
use crate::sweep::SweepStep;
use std::fmt;
use std::hash::Hash;
use std::time::Duration;

/// One handle's entry: who it was minted for, and the value.
pub struct Handle<O, T> {
    owner: O,
    value: T,
    /// The owner's place under its share, given back when the entry is
    /// freed (the registry drops a value once, by the last one out).
    _share: Option<Share<O>>,
}

impl<O, T> Handle<O, T> {
    /// Who the handle was minted for.
    pub fn owner(&self) -> &O {
        &self.owner
    }

    /// The value behind the handle.
    pub fn value(&self) -> &T {
        &self.value
    }
}

impl<O: fmt::Debug, T: fmt::Debug> fmt::Debug for Handle<O, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("owner", &self.owner)
            .field("value", &self.value)
            .finish()
    }
}

/// What [`Handles::resolve`] found.
#[must_use]
pub enum Resolved<O, T> {
    /// The caller's live handle, held in use: its lifetime does not run out
    /// while this is held, and starts again when it is dropped. Derefs to
    /// the handle's entry ([`Handle::value`]).
    Found(InFlight<Handle<O, T>>),
    /// The id named a handle that has ended: its lifetime ran out (or it
    /// was destroyed). An MCP tool answers "`<handle>` has expired" (a tool
    /// error, `isError: true`), so the caller knows to make a new one. Only
    /// an id whose secret is proven hears this (while its slot keeps that
    /// secret, or the digest of it, until the slot's next handle ends too):
    /// the owner of an ended handle can no longer be checked, so it tells
    /// whoever holds the real id that it was once minted here, and a guess
    /// nothing.
    Ended,
    /// The id names no handle of the caller's: never minted here, forged,
    /// malformed, another owner's live handle (the same answer, so that
    /// it is no oracle), or one ended so long ago that its slot can no
    /// longer check it.
    Unknown,
}

impl<O: fmt::Debug, T: fmt::Debug> fmt::Debug for Resolved<O, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resolved::Found(handle) => f.debug_tuple("Found").field(&**handle).finish(),
            Resolved::Ended => f.write_str("Ended"),
            Resolved::Unknown => f.write_str("Unknown"),
        }
    }
}

/// A store of handles to values `T`, each minted for an owner `O` (a
/// principal's name; `Option<_>` where requests may be anonymous, as MCP
/// servers without authentication are). See the [module docs](self).
pub struct Handles<O, T> {
    registry: Registry<Handle<O, T>>,
    shares: Option<Shares<O>>,
}

/// Builds [`Handles`]; see [`Handles::builder`].
pub struct HandlesBuilder<O, T> {
    registry: Builder<Handle<O, T>>,
    lifetime: Duration,
    share: Option<Result<Shares<O>, crate::shares::ZeroShare>>,
}

/// Why [`Handles::mint`] minted nothing; holds the value it was given.
pub enum MintError<T> {
    /// The store holds as many handles as its capacity.
    AtCapacity(T),
    /// The owner holds its whole share already (`limit` handles).
    OverShare {
        /// The value that was not minted.
        value: T,
        /// The owner's share.
        limit: usize,
    },
}

impl<T> MintError<T> {
    /// The value that was not minted.
    pub fn into_inner(self) -> T {
        match self {
            MintError::AtCapacity(value) | MintError::OverShare { value, .. } => value,
        }
    }
}

impl<T> fmt::Debug for MintError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MintError::AtCapacity(_) => f.write_str("AtCapacity(..)"),
            MintError::OverShare { limit, .. } => f
                .debug_struct("OverShare")
                .field("limit", limit)
                .finish_non_exhaustive(),
        }
    }
}

impl<T> fmt::Display for MintError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MintError::AtCapacity(_) => f.write_str("the store of handles is full"),
            MintError::OverShare { limit, .. } => {
                write!(f, "the owner holds its whole share of {limit} handles")
            }
        }
    }
}

impl<T> std::error::Error for MintError<T> {}

/// How long a handle lives unused by default: one hour.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);

impl<O: Send + Sync + 'static, T: Send + Sync + 'static> HandlesBuilder<O, T> {
    /// The most handles alive at once; [`mint`](Handles::mint) fails past
    /// it. Default: [`DEFAULT_CAPACITY`](crate::DEFAULT_CAPACITY).
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.registry = self.registry.capacity(capacity);
        self
    }

    /// How long a handle lives with no call using it (default
    /// [`DEFAULT_LIFETIME`]); state it in the creating tool's description.
    pub fn lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// The node id in the handles' ids (their first two hex digits).
    pub fn node_id(mut self, node: u8) -> Self {
        self.registry = self.registry.node_id(node);
        self
    }

    /// Reads time from `clock` instead of the system's (for tests).
    pub fn manual_clock(mut self, clock: &ManualClock) -> Self {
        self.registry = self.registry.manual_clock(clock);
        self
    }

    /// Builds the store. A share of zero ([`owner_share`](HandlesBuilder::owner_share))
    /// is [`BuildError::ZeroShare`]: nobody could mint.
    pub fn build(self) -> Result<Handles<O, T>, BuildError> {
        let shares = self.share.transpose().map_err(|_| BuildError::ZeroShare)?;
        Ok(Handles {
            registry: self.registry.idle_timeout(self.lifetime).build()?,
            shares,
        })
    }
}

impl<O: Hash + Eq + Clone + Send + Sync + 'static, T: Send + Sync + 'static> HandlesBuilder<O, T> {
    /// Each owner may hold at most `limit` handles at once (at least 1);
    /// [`mint`](Handles::mint) past it is [`MintError::OverShare`], and no
    /// other owner notices. Default: no share (only the capacity bounds the
    /// store). A handle holds its owner's place until it is freed (expired
    /// or destroyed, and let go by every call holding it).
    ///
    /// Every owner value counts as one owner: where requests may be
    /// anonymous (`Option<_>`, `None`), every anonymous mint counts against
    /// one share, so give anonymous servers the capacity alone.
    pub fn owner_share(mut self, limit: usize) -> Self {
        self.share = Some(Shares::new(limit));
        self
    }
}

impl<O: Send + Sync + 'static, T: Send + Sync + 'static> Handles<O, T> {
    /// A builder, with the defaults: capacity
    /// [`DEFAULT_CAPACITY`](crate::DEFAULT_CAPACITY), lifetime
    /// [`DEFAULT_LIFETIME`], node 0.
    pub fn builder() -> HandlesBuilder<O, T> {
        HandlesBuilder {
            registry: Registry::builder(),
            lifetime: DEFAULT_LIFETIME,
            share: None,
        }
    }
}

impl<O: PartialEq, T> Handles<O, T> {
    /// Mints a handle to `value` for `owner`; past the owner's share or at
    /// capacity, gives `value` back (saying which).
    pub fn mint(&self, owner: O, value: T) -> Result<SessionId, MintError<T>> {
        let share = match &self.shares {
            Some(shares) => match shares.take(&owner) {
                Ok(share) => Some(share),
                Err(ShareFull { limit }) => return Err(MintError::OverShare { value, limit }),
            },
            None => None,
        };
        self.registry
            .insert(Handle {
                owner,
                value,
                _share: share,
            })
            // The entry was not made: its share is given back with it.
            .map_err(|full: InsertError<_>| MintError::AtCapacity(full.into_inner().value))
    }

    /// How many handles `owner` may hold at once, if owners have a share
    /// ([`HandlesBuilder::owner_share`]).
    pub fn owner_share(&self) -> Option<usize> {
        self.shares.as_ref().map(Shares::limit)
    }

    /// The handle `id` names, if it is `owner`'s and live, held in use.
    pub fn resolve(&self, id: &SessionId, owner: &O) -> Resolved<O, T> {
        let handle = match self.registry.lookup_if(id, |h| h.owner == *owner) {
            Ok(handle) => handle,
            Err(Miss::Stale | Miss::Expired) => return Resolved::Ended,
            Err(_) => return Resolved::Unknown,
        };
        match handle.begin() {
            Some(in_use) => Resolved::Found(in_use),
            // It ended between the lookup and now.
            None => Resolved::Ended,
        }
    }

    /// [`resolve`](Handles::resolve) from the id's text form (a tool
    /// argument); text that is no id is [`Resolved::Unknown`].
    pub fn resolve_text(&self, text: &str, owner: &O) -> Resolved<O, T> {
        match self.registry.parse_id(text.trim().as_bytes()) {
            Ok(id) => self.resolve(&id, owner),
            Err(_) => Resolved::Unknown,
        }
    }

    /// Ends `owner`'s handle `id` now; whether this call ended it.
    pub fn destroy(&self, id: &SessionId, owner: &O) -> bool {
        match self.registry.lookup_if(id, |h| h.owner == *owner) {
            Ok(handle) => self
                .registry
                .terminate_session(&handle, Reason::Deleted)
                .is_won(),
            Err(_) => false,
        }
    }

    /// Ends the handles unused for their lifetime; returns how many. Run it
    /// periodically (from the HTTP layer's `App::reap`, say, which its
    /// reaper calls). One pass, at the cost of a look at each page and the
    /// slots of the pages that may hold a handle.
    pub fn reap(&self) -> usize {
        self.registry.reap_idle()
    }

    /// One step of [`reap`](Handles::reap), of at most `budget` slots (see
    /// [`Registry::reap_idle_step`]): for a reaper that must not hold its
    /// thread for long, stepping until [`pass_done`](SweepStep::pass_done).
    pub fn reap_step(&self, budget: usize) -> SweepStep {
        self.registry.reap_idle_step(budget)
    }

    /// Handles alive now.
    pub fn len(&self) -> usize {
        self.registry.len()
    }

    /// Whether no handle is alive.
    pub fn is_empty(&self) -> bool {
        self.registry.is_empty()
    }

    /// The registry's counters: live handles, minted, ended by reason
    /// (`idle_timeout`: expired; `deleted`: destroyed), lookups that found
    /// none by cause.
    pub fn stats(&self) -> Stats {
        self.registry.stats()
    }
}

impl<O, T> fmt::Debug for Handles<O, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handles")
            .field("live", &self.registry.len())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_handle_in_use_does_not_expire_and_an_unused_one_ends_after_its_lifetime() {
        let clock = ManualClock::new();
        let handles: Handles<u8, &str> = Handles::builder()
            .lifetime(Duration::from_millis(100))
            .manual_clock(&clock)
            .build()
            .unwrap();
        let id = handles.mint(1, "tab").unwrap();
        let Resolved::Found(in_use) = handles.resolve(&id, &1) else {
            panic!("live");
        };
        clock.advance(Duration::from_secs(10));
        assert_eq!(handles.reap(), 0, "in use");
        assert_eq!(*in_use.value(), "tab");
        drop(in_use);
        assert_eq!(handles.reap(), 0, "the sweep that starts its idle time");
        clock.advance(Duration::from_millis(101));
        assert_eq!(handles.reap(), 1);
        assert!(matches!(handles.resolve(&id, &1), Resolved::Ended));
        assert_eq!(handles.stats().terminated(Reason::IdleTimeout), 1);
    }

    #[test]
    fn another_owner_forged_and_malformed_ids_are_unknown() {
        let handles: Handles<u8, ()> = Handles::builder().build().unwrap();
        let id = handles.mint(1, ()).unwrap();
        assert!(matches!(handles.resolve(&id, &2), Resolved::Unknown));
        assert!(!handles.destroy(&id, &2));
        let mut forged = id.to_bytes();
        forged[23] ^= 1;
        assert!(matches!(
            handles.resolve(&SessionId::from_bytes(forged), &1),
            Resolved::Unknown
        ));
        assert!(matches!(
            handles.resolve_text("bsk_123", &1),
            Resolved::Unknown
        ));
        assert!(matches!(
            handles.resolve_text(&id.to_string(), &1),
            Resolved::Found(_)
        ));
        assert_eq!(handles.len(), 1);
    }

    #[test]
    fn an_owner_past_its_share_is_refused_and_no_other_owner_notices() {
        let clock = ManualClock::new();
        let handles: Handles<u8, &str> = Handles::builder()
            .capacity(4)
            .owner_share(2)
            .lifetime(Duration::from_millis(100))
            .manual_clock(&clock)
            .build()
            .unwrap();
        assert_eq!(handles.owner_share(), Some(2));
        let first = handles.mint(1, "a").unwrap();
        handles.mint(1, "b").unwrap();
        match handles.mint(1, "c") {
            Err(MintError::OverShare { value, limit }) => assert_eq!((value, limit), ("c", 2)),
            other => panic!("{other:?}"),
        }
        handles.mint(2, "d").unwrap();
        handles.mint(2, "e").unwrap();
        // The store is full: the capacity, told apart from a share.
        assert!(matches!(
            handles.mint(3, "f"),
            Err(MintError::AtCapacity("f"))
        ));
        // A destroyed handle gives its place back once it is freed; one held
        // in use keeps it until the call lets go.
        let Resolved::Found(in_use) = handles.resolve(&first, &1) else {
            panic!("live");
        };
        assert!(handles.destroy(&first, &1));
        assert!(matches!(
            handles.mint(1, "g"),
            Err(MintError::OverShare { .. })
        ));
        drop(in_use);
        handles.mint(1, "g").unwrap();
        // Expired handles give theirs back when the sweep frees them.
        assert_eq!(handles.reap(), 0);
        clock.advance(Duration::from_millis(101));
        assert_eq!(handles.reap(), 4);
        handles.mint(1, "h").unwrap();
        handles.mint(1, "i").unwrap();
        assert_eq!(
            Handles::<u8, ()>::builder()
                .owner_share(0)
                .build()
                .unwrap_err(),
            BuildError::ZeroShare
        );
    }
}

//! The record of used single-use `requestState`s across a fleet: the seam a
//! fleet's bus plugs into ([`UsedStates`]; Redis, feature `redis`).
//!
//! Without it, a single-use state is an entry of this node's record
//! (`single_use.rs`), made when the state is sealed and ended when it is
//! used: a retry that reaches another node finds no entry there. With it,
//! a state is sealed as shared (a flag in the sealed payload, no local
//! entry) and its retry, on whichever node, records it as used with one
//! atomic set-if-absent of a key derived from the sealed state ([`UsedKey`])
//! that expires with the state: the first retry sets it, any other finds
//! it. When the record cannot be reached the state is refused
//! ([`Redeemed::Unavailable`]): fail closed, never open twice.
//!
//! A record can lose what it held (a flush; a Redis restarted from older
//! data, or failed over to a replica the latest writes had not reached):
//! then a state used before could be used again. So the record has an
//! epoch, a random number that holds while the record keeps its keys,
//! sealed into every state; a state of another epoch than the record's now
//! is refused ([`Redeemed::Stale`]), whether or not it was used, by the
//! same atomic step that would record its use.

// Without a bus (feature `redis`) nothing implements the record.
#![cfg_attr(not(feature = "redis"), allow(dead_code))]

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// Where the fleet records the single-use states it has used.
pub(crate) trait UsedStates: Send + Sync {
    /// The record's epoch as last seen (0: never seen yet), sealed into
    /// each state.
    fn epoch(&self) -> u64;

    /// Records `key`, of a state sealed in `epoch`, as used, for `ttl` (the
    /// state's remaining life); what became of it. Bounded in time by the
    /// implementation (a record that does not answer is
    /// [`Redeemed::Unavailable`]).
    fn redeem(&self, key: UsedKey, ttl: Duration, epoch: u64) -> Redemption;
}

/// The future of a [`UsedStates::redeem`].
pub(crate) type Redemption = Pin<Box<dyn Future<Output = Redeemed> + Send + 'static>>;

/// What became of a redemption.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redeemed {
    /// This retry is the first: the state opens.
    First,
    /// Another retry used it before: refused as replayed.
    Again,
    /// Sealed in another epoch of the record (it may have lost keys since:
    /// flushed, restarted, failed over; or the state was sealed before it
    /// was ever reached): whether it was used cannot be told; refused, as
    /// expired, and it stays unused.
    Stale,
    /// The record could not say (it is unreachable, or did not answer in
    /// time): refused, and the state stays unused.
    Unavailable,
}

/// The key of a single-use state in the fleet's record: the first 16 bytes
/// of SHA-256 over the sealed state's key id, nonce and tag (what makes
/// one sealing unlike any other; the tag binds the rest). Not the state:
/// the record shows nothing a client sent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct UsedKey(pub(crate) [u8; 16]);

impl UsedKey {
    /// Lowercase hex, as the record names it.
    pub(crate) fn hex(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(32);
        for byte in self.0 {
            // Writing to a String cannot fail.
            let _ = write!(out, "{byte:02x}");
        }
        out
    }
}

impl fmt::Debug for UsedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UsedKey({})", self.hex())
    }
}

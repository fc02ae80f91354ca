//! Fair shares: a bounded count per key (a principal, an owner), so that
//! no one key can take all of a shared store.
//!
//! A store with a global bound (a registry's capacity) lets one client fill
//! it and lock every other client out. [`Shares`] gives each key at most
//! `limit` places: [`take`](Shares::take) hands out a [`Share`], a guard that
//! gives its place back when it is dropped, exactly once (it is neither
//! `Clone` nor `Copy`, and only its `Drop` gives back). A store keeps the
//! guard *inside the value of the entry it admitted*: the registry drops a
//! value exactly once, by the last one out, so the place is held for as
//! long as the entry is (running, retained, in use) and given back when it
//! is freed, with no second path to forget.
//!
//! ```
//! use sessionreg::shares::Shares;
//!
//! let shares: Shares<&str> = Shares::new(2).unwrap();
//! let a = shares.take(&"ada").unwrap();
//! let b = shares.take(&"ada").unwrap();
//! assert!(shares.take(&"ada").is_err(), "ada holds her two");
//! assert!(shares.take(&"bob").is_ok(), "bob does not notice");
//! drop(a);
//! assert!(shares.take(&"ada").is_ok(), "a place given back is free again");
//! # drop(b);
//! ```
//!
//! A place may also be a weight: [`take_many`](Shares::take_many) takes
//! `n` units of a share at once (a share of bytes, each entry taking as
//! many as it keeps), given back together by the one guard.
//!
//! **How it counts.** A fixed number of stripes, each a small map from key
//! to count behind its own lock (`sync::Mutex`, loom's under loom); a key's
//! stripe is picked by a hash with random keys (SipHash), so no client can
//! crowd one stripe on purpose. A map holds only the keys with places taken:
//! an entry is removed when its count reaches zero, so memory follows the
//! places held, not every key ever seen. Taking or giving back a place
//! holds one stripe's lock for one map update (and nothing that can block
//! or call out runs under it); nothing on a lookup path touches a share.

use crate::sync::{Arc, MapHasher, Mutex};
use crossbeam_utils::CachePadded;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash};

/// Stripes of the counts: enough that threads taking places for different
/// keys rarely meet on one lock (the layer's requests run on a handful of
/// worker threads). Two under loom, which explores every interleaving of
/// whatever the model touches.
#[cfg(not(sessionreg_loom))]
const STRIPES: usize = 32;
#[cfg(sessionreg_loom)]
const STRIPES: usize = 2;

type Counts<K> = HashMap<K, usize, MapHasher>;

/// How places are taken, made where the key's bounds are known.
type Take<K> = fn(&Arc<Tally<K>>, &K, usize) -> Result<Share<K>, ShareFull>;

struct Tally<K> {
    limit: usize,
    hasher: MapHasher,
    stripes: Box<[CachePadded<Mutex<Counts<K>>>]>,
}

impl<K> Tally<K> {
    /// A stripe's counts. Poisoning is ignored: a panic under the lock can
    /// only come from the key's `Hash` or `Eq` before the map changes (an
    /// insertion that cannot allocate aborts), so the counts stay right.
    fn stripe(&self, at: usize) -> crate::sync::MutexGuard<'_, Counts<K>> {
        self.stripes[at]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Per-key bounded counts: see the [module docs](self). Cheap to clone;
/// clones share the counts.
pub struct Shares<K> {
    inner: Arc<Tally<K>>,
    /// `take`, made where `K`'s bounds are known, so that a store holding
    /// `Shares<K>` (and its entries holding `Share<K>`) needs none of them.
    take: Take<K>,
}

impl<K> Clone for Shares<K> {
    fn clone(&self) -> Self {
        Shares {
            inner: Arc::clone(&self.inner),
            take: self.take,
        }
    }
}

/// A key already holds its whole share: [`Shares::take`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareFull {
    /// The share: how many places one key may hold.
    pub limit: usize,
}

impl fmt::Display for ShareFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "this key holds its whole share of {}", self.limit)
    }
}

impl std::error::Error for ShareFull {}

/// [`Shares::new`] with a limit of zero: a share nobody could take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZeroShare;

impl fmt::Display for ZeroShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a share must be at least 1")
    }
}

impl std::error::Error for ZeroShare {}

impl<K: Hash + Eq + Clone> Shares<K> {
    /// Shares of at most `limit` places per key (at least 1).
    pub fn new(limit: usize) -> Result<Shares<K>, ZeroShare> {
        if limit == 0 {
            return Err(ZeroShare);
        }
        let hasher = MapHasher::default();
        let stripes = (0..STRIPES)
            .map(|_| CachePadded::new(Mutex::new(HashMap::with_hasher(hasher.clone()))))
            .collect();
        Ok(Shares {
            inner: Arc::new(Tally {
                limit,
                hasher,
                stripes,
            }),
            take: take::<K>,
        })
    }
}

/// Which stripe `key` counts in.
fn stripe_of<K: Hash>(inner: &Tally<K>, key: &K) -> usize {
    // The high bits: SipHash mixes them as well as the low ones, and the
    // maps inside use the low ones for their buckets.
    (inner.hasher.hash_one(key) >> 32) as usize % STRIPES
}

fn take<K: Hash + Eq + Clone>(
    inner: &Arc<Tally<K>>,
    key: &K,
    units: usize,
) -> Result<Share<K>, ShareFull> {
    let at = stripe_of(inner, key);
    let mut counts = inner.stripe(at);
    let held = counts.get(key).copied().unwrap_or(0);
    // Checked in a form that cannot overflow: `units` may be anything.
    if units > inner.limit - held {
        return Err(ShareFull { limit: inner.limit });
    }
    if units > 0 {
        *counts.entry(key.clone()).or_insert(0) += units;
    }
    drop(counts);
    Ok(Share {
        inner: Arc::clone(inner),
        key: key.clone(),
        at,
        units,
        give_back: give_back::<K>,
    })
}

fn give_back<K: Hash + Eq>(inner: &Tally<K>, key: &K, at: usize, units: usize) {
    if units == 0 {
        return;
    }
    let mut counts = inner.stripe(at);
    if let Some(count) = counts.get_mut(key) {
        *count -= units;
        if *count == 0 {
            counts.remove(key);
        }
    } else {
        // Every share was counted when taken and is given back once: the
        // entry is there until its last share goes.
        debug_assert!(false, "a share given back that was not counted");
    }
}

impl<K> Shares<K> {
    /// Takes one of `key`'s places; [`ShareFull`] if it holds its whole
    /// share already. The place is given back when the [`Share`] is
    /// dropped.
    pub fn take(&self, key: &K) -> Result<Share<K>, ShareFull> {
        (self.take)(&self.inner, key, 1)
    }

    /// Takes `units` of `key`'s places at once (a weight: bytes, say),
    /// given back together when the [`Share`] is dropped; [`ShareFull`] if
    /// they do not all fit in what `key` has left (nothing is taken then).
    /// Zero units take nothing and always succeed.
    ///
    /// ```
    /// use sessionreg::shares::Shares;
    ///
    /// let bytes: Shares<&str> = Shares::new(100).unwrap();
    /// let uri = bytes.take_many(&"ada", 60).unwrap();
    /// assert!(bytes.take_many(&"ada", 41).is_err(), "60 + 41 > 100");
    /// let more = bytes.take_many(&"ada", 40).unwrap();
    /// assert_eq!(bytes.held(&"ada"), 100);
    /// drop((uri, more));
    /// assert_eq!(bytes.held(&"ada"), 0);
    /// ```
    pub fn take_many(&self, key: &K, units: usize) -> Result<Share<K>, ShareFull> {
        (self.take)(&self.inner, key, units)
    }

    /// How many places one key may hold.
    pub fn limit(&self) -> usize {
        self.inner.limit
    }

    /// How many keys hold at least one place now (a snapshot, one stripe at
    /// a time).
    pub fn keys(&self) -> usize {
        (0..STRIPES).map(|at| self.inner.stripe(at).len()).sum()
    }
}

impl<K: Hash + Eq> Shares<K> {
    /// How many places `key` holds now.
    pub fn held(&self, key: &K) -> usize {
        let at = stripe_of(&self.inner, key);
        self.inner.stripe(at).get(key).copied().unwrap_or(0)
    }
}

impl<K> fmt::Debug for Shares<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the keys: they name principals.
        f.debug_struct("Shares")
            .field("limit", &self.inner.limit)
            .field("keys", &self.keys())
            .finish()
    }
}

/// One place of one key's share (or, from [`Shares::take_many`], several),
/// held until this is dropped (then given back, exactly once). Keep it
/// inside the value of the entry it admitted.
#[must_use = "the place is given back as soon as the share is dropped"]
pub struct Share<K> {
    inner: Arc<Tally<K>>,
    key: K,
    at: usize,
    units: usize,
    give_back: fn(&Tally<K>, &K, usize, usize),
}

impl<K> Share<K> {
    /// The key whose place this is.
    pub fn key(&self) -> &K {
        &self.key
    }

    /// How many places it holds (1 from [`Shares::take`]).
    pub fn units(&self) -> usize {
        self.units
    }
}

impl<K> Drop for Share<K> {
    fn drop(&mut self) {
        (self.give_back)(&self.inner, &self.key, self.at, self.units);
    }
}

impl<K> fmt::Debug for Share<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key: it names a principal.
        f.debug_struct("Share").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_key_holds_at_most_its_share_and_gives_each_place_back_once() {
        let shares: Shares<String> = Shares::new(2).unwrap();
        let ada = "ada".to_string();
        let first = shares.take(&ada).unwrap();
        let second = shares.take(&ada).unwrap();
        assert_eq!(shares.take(&ada).unwrap_err(), ShareFull { limit: 2 });
        assert_eq!(shares.held(&ada), 2);
        let bob: Vec<_> = (0..2)
            .map(|_| shares.take(&"bob".to_string()).unwrap())
            .collect();
        assert_eq!(shares.keys(), 2);
        drop(first);
        assert_eq!(shares.held(&ada), 1);
        let again = shares.take(&ada).unwrap();
        drop((second, again));
        assert_eq!(shares.held(&ada), 0);
        assert_eq!(shares.keys(), 1, "a key with no place is forgotten");
        drop(bob);
        assert_eq!(shares.keys(), 0);
        assert_eq!(Shares::<u8>::new(0).unwrap_err(), ZeroShare);
    }

    #[test]
    fn many_keys_spread_over_the_stripes_and_all_come_back() {
        let shares: Shares<u32> = Shares::new(1).unwrap();
        let held: Vec<_> = (0..1_000).map(|k| shares.take(&k).unwrap()).collect();
        assert_eq!(shares.keys(), 1_000);
        let used = (0..STRIPES)
            .filter(|at| !shares.inner.stripe(*at).is_empty())
            .count();
        assert!(used > STRIPES / 2, "{used} stripes of {STRIPES}");
        assert!(held.iter().all(|s| shares.take(s.key()).is_err()));
        drop(held);
        assert_eq!(shares.keys(), 0);
    }

    #[test]
    fn shares_are_taken_and_given_back_across_threads() {
        let shares: Shares<u8> = Shares::new(3).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..1_000 {
                        for key in 0..4u8 {
                            if let Ok(share) = shares.take(&key) {
                                assert!(shares.held(&key) <= 3);
                                drop(share);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(shares.keys(), 0);
    }

    #[test]
    fn weighted_takes_fit_or_take_nothing_and_come_back_together() {
        let shares: Shares<u8> = Shares::new(10).unwrap();
        let seven = shares.take_many(&1, 7).unwrap();
        assert_eq!(seven.units(), 7);
        assert_eq!(
            shares.take_many(&1, 4).unwrap_err(),
            ShareFull { limit: 10 }
        );
        assert_eq!(shares.held(&1), 7, "a refused take takes nothing");
        assert!(shares.take_many(&1, usize::MAX).is_err(), "no overflow");
        let three = shares.take_many(&1, 3).unwrap();
        assert!(shares.take(&1).is_err());
        let none = shares.take_many(&1, 0).unwrap();
        assert_eq!(shares.keys(), 1);
        drop(seven);
        assert_eq!(shares.held(&1), 3);
        drop((three, none));
        assert_eq!(shares.held(&1), 0);
        assert_eq!(shares.keys(), 0, "zero units left no key behind");
        let nothing = shares.take_many(&2, 0).unwrap();
        assert_eq!(shares.keys(), 0, "a take of zero counts no key");
        drop(nothing);
        assert_eq!(shares.keys(), 0);
    }

    #[test]
    fn debug_names_no_key() {
        let shares: Shares<&str> = Shares::new(1).unwrap();
        let share = shares.take(&"secret-principal").unwrap();
        assert!(!format!("{shares:?} {share:?}").contains("secret"));
    }
}

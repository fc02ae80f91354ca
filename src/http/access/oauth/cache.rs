//! Tokens already accepted, so that a client's next request with the same
//! token costs a SHA-256 and a map lookup rather than a signature
//! verification (an RS256 one is several times a whole `tools/call`'s
//! instructions; BENCHMARKS.md, "OAuth").
//!
//! * Keyed by the SHA-256 of the token: the token itself is not kept, and
//!   a lookup compares fixed-length digests.
//! * An entry never outlives its token: it is good only while the token's
//!   `exp` has not passed (no leeway: past it the token is verified again,
//!   and refused), and, for a JWT, only under the key set it was verified
//!   with (a refresh that changes the keys makes every JWT entry stale, so
//!   a key that is gone stops counting at once), and only while that set is
//!   trusted (younger than `keys_max_age`). An introspected token's
//!   entry also ends after the introspection TTL, so a revocation is seen
//!   within it.
//! * Bounded: at most `capacity` entries over all shards; a full shard
//!   drops its expired entries, then an arbitrary one.

use super::Grant;
pub(crate) use crate::http::access::digest::Digest;
use std::collections::HashMap;
use std::sync::Mutex;

const SHARDS: usize = 16;

struct Entry {
    grant: Grant,
    /// Unix seconds after which the entry is not used.
    until: u64,
    /// The key set's epoch it was verified under; `None` for an
    /// introspected token (no key).
    epoch: Option<u64>,
}

/// The cache (empty and never filled when its capacity is 0).
pub(crate) struct TokenCache {
    shards: Box<[Mutex<HashMap<Digest, Entry>>]>,
    per_shard: usize,
}

impl TokenCache {
    pub(crate) fn new(capacity: usize) -> TokenCache {
        TokenCache {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            per_shard: capacity.div_ceil(SHARDS),
        }
    }

    fn shard(&self, digest: &Digest) -> &Mutex<HashMap<Digest, Entry>> {
        // The digest is uniform: its first byte picks a shard fairly.
        &self.shards[usize::from(digest[0]) % SHARDS]
    }

    /// The grant of a token accepted before, if its entry is still good at
    /// `now` (unix seconds) under key set `epoch` (`None`: the keys are not
    /// trusted, so no JWT's entry is good; an introspected token's still
    /// is).
    pub(crate) fn get(&self, digest: &Digest, now: u64, epoch: Option<u64>) -> Option<Grant> {
        if self.per_shard == 0 {
            return None;
        }
        let shard = self.shard(digest).lock().unwrap_or_else(|e| e.into_inner());
        let entry = shard.get(digest)?;
        let current = entry.epoch.is_none_or(|at| Some(at) == epoch);
        (now < entry.until && current).then(|| entry.grant.clone())
    }

    /// Keeps `grant` until `until` (unix seconds; capped at the token's
    /// `exp`), for key set `epoch` (`None`: an introspected token).
    pub(crate) fn put(
        &self,
        digest: Digest,
        grant: &Grant,
        until: u64,
        epoch: Option<u64>,
        now: u64,
    ) {
        let until = until.min(grant.expires_at);
        if self.per_shard == 0 || until <= now {
            return;
        }
        let mut shard = self
            .shard(&digest)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if shard.len() >= self.per_shard && !shard.contains_key(&digest) {
            shard.retain(|_, entry| now < entry.until);
            if shard.len() >= self.per_shard {
                if let Some(victim) = shard.keys().next().copied() {
                    shard.remove(&victim);
                }
            }
        }
        shard.insert(
            digest,
            Entry {
                grant: grant.clone(),
                until,
                epoch,
            },
        );
    }

    /// Entries held (good or not yet dropped).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::access::digest::digest;
    use crate::http::access::scopes::Scopes;
    use crate::http::wire::principal::Principal;

    fn grant(expires_at: u64) -> Grant {
        Grant {
            principal: Principal::new("https://as#ada"),
            scopes: Scopes::parse("a"),
            expires_at,
        }
    }

    #[test]
    fn an_entry_ends_with_its_token_its_ttl_and_its_key_set() {
        let cache = TokenCache::new(64);
        let d = digest("token");
        cache.put(d, &grant(100), u64::MAX, Some(1), 10);
        assert!(cache.get(&d, 99, Some(1)).is_some());
        assert!(cache.get(&d, 100, Some(1)).is_none(), "not at exp");
        assert!(
            cache.get(&d, 50, Some(2)).is_none(),
            "not under another key set"
        );
        assert!(
            cache.get(&d, 50, None).is_none(),
            "not under untrusted keys"
        );
        assert!(cache.get(&digest("other"), 50, Some(1)).is_none());
        // An introspected token: until its TTL, whatever the keys.
        cache.put(d, &grant(100), 40, None, 10);
        assert!(cache.get(&d, 39, Some(7)).is_some());
        assert!(cache.get(&d, 39, None).is_some());
        assert!(cache.get(&d, 40, Some(7)).is_none());
        // Nothing kept that is already over.
        let late = digest("late");
        cache.put(late, &grant(5), u64::MAX, Some(1), 10);
        assert!(cache.get(&late, 4, Some(1)).is_none());
    }

    #[test]
    fn the_capacity_holds() {
        let cache = TokenCache::new(32);
        for i in 0..1000 {
            cache.put(digest(i.to_string()), &grant(100), 100, Some(0), 1);
        }
        assert!(cache.len() <= 32, "{}", cache.len());
        let off = TokenCache::new(0);
        off.put(digest("x"), &grant(100), 100, Some(0), 1);
        assert!(off.get(&digest("x"), 2, Some(0)).is_none());
    }
}

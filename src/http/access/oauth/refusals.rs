//! Opaque tokens the authorization server just refused, so that the same
//! token again is refused without asking it again: a flood of one inactive
//! (revoked, made-up, expired) token costs one introspection per TTL.
//!
//! * Keyed by the SHA-256 of the token, as the cache of accepted tokens is
//!   (`cache.rs`): the token itself is not kept.
//! * Brief: a refusal is kept for the TTL (seconds by default, a minute at
//!   most), never longer than a token could plausibly need to become
//!   valid (an authorization server whose replicas have not all seen it
//!   yet, say). Only the authorization server's own answer is kept: a
//!   failure to ask (a timeout, an endpoint that is down) is not a refusal.
//! * Bounded: at most `capacity` entries over all shards; a full shard
//!   drops its expired entries, then an arbitrary one.

use super::cache::Digest;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

const SHARDS: usize = 16;

/// The refusals (none kept when the capacity is 0).
pub(crate) struct Refusals {
    /// Each refused token's digest, and until when its refusal stands.
    shards: Box<[Mutex<HashMap<Digest, coarsetime::Instant>>]>,
    per_shard: usize,
    ttl: coarsetime::Duration,
}

impl Refusals {
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Refusals {
        Refusals {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            per_shard: capacity.div_ceil(SHARDS),
            ttl: ttl.into(),
        }
    }

    fn shard(&self, digest: &Digest) -> &Mutex<HashMap<Digest, coarsetime::Instant>> {
        // The digest is uniform: its last byte picks a shard fairly.
        &self.shards[usize::from(digest[31]) % SHARDS]
    }

    /// Whether the token of `digest` was refused less than the TTL before
    /// `now`.
    pub(crate) fn holds(&self, digest: &Digest, now: coarsetime::Instant) -> bool {
        if self.per_shard == 0 {
            return false;
        }
        let shard = self.shard(digest).lock().unwrap_or_else(|e| e.into_inner());
        shard.get(digest).is_some_and(|until| now < *until)
    }

    /// Keeps the refusal of the token of `digest`, made at `now`.
    pub(crate) fn put(&self, digest: Digest, now: coarsetime::Instant) {
        if self.per_shard == 0 {
            return;
        }
        let mut shard = self
            .shard(&digest)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if shard.len() >= self.per_shard && !shard.contains_key(&digest) {
            shard.retain(|_, until| now < *until);
            if shard.len() >= self.per_shard {
                if let Some(victim) = shard.keys().next().copied() {
                    shard.remove(&victim);
                }
            }
        }
        shard.insert(digest, now + self.ttl);
    }

    /// Entries held (standing or not yet dropped).
    #[cfg(test)]
    fn len(&self) -> usize {
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

    #[test]
    fn a_refusal_stands_for_its_ttl_and_no_longer() {
        let refusals = Refusals::new(64, Duration::from_secs(5));
        let t0 = coarsetime::Instant::now();
        let at = |secs: u64| t0 + coarsetime::Duration::from_secs(secs);
        let d = digest("revoked");
        assert!(!refusals.holds(&d, t0));
        refusals.put(d, t0);
        assert!(refusals.holds(&d, at(4)));
        assert!(!refusals.holds(&d, at(5)), "not at the TTL");
        assert!(!refusals.holds(&digest("other"), at(1)));
        // Refused again: it stands from then.
        refusals.put(d, at(10));
        assert!(refusals.holds(&d, at(14)));
    }

    #[test]
    fn the_capacity_holds() {
        let refusals = Refusals::new(32, Duration::from_secs(5));
        let now = coarsetime::Instant::now();
        for i in 0..1000 {
            refusals.put(digest(i.to_string()), now);
        }
        assert!(refusals.len() <= 32, "{}", refusals.len());
        let off = Refusals::new(0, Duration::from_secs(5));
        off.put(digest("x"), now);
        assert!(!off.holds(&digest("x"), now));
        assert_eq!(off.len(), 0);
    }
}

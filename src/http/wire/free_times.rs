//! When places in a shared store free: a ledger of the latest time each
//! entry will be gone, in all and per principal, so that a refusal's
//! `Retry-After` says when a place frees rather than a constant that may
//! never come true.
//!
//! A store records an entry when the time it will be freed becomes known
//! (a single-use state when sealed: its expiry; a task when its work ends:
//! that end plus the retention) and keeps the returned [`Freeing`] inside
//! the entry's value, whose one drop (when the entry is freed) takes the
//! record away. The ledger holds whole seconds, rounded up: a second's
//! entries share one count, so it is as small as the window of times in it.
//! Striped by principal (anonymous records spread round-robin), each stripe
//! a lock held for one map update; refusals read every stripe.

use crate::http::wire::principal::Principal;
use crate::http::wire::unix_time::unix_ms;
use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

const STRIPES: usize = 16;

/// Counts of places freeing by each second (since the Unix epoch).
type Seconds = BTreeMap<u64, usize>;

#[derive(Default)]
struct Ledger {
    all: Seconds,
    by_owner: HashMap<Principal, Seconds>,
}

/// The ledger of one store. See the [module docs](self).
pub(crate) struct Frees {
    stripes: Box<[Mutex<Ledger>]>,
    hasher: RandomState,
    /// The next stripe for a record without a principal.
    next: AtomicUsize,
}

/// One entry's record in the ledger, taken away when this is dropped.
pub(crate) struct Freeing {
    frees: Arc<Frees>,
    stripe: usize,
    second: u64,
    owner: Option<Principal>,
}

fn add(seconds: &mut Seconds, second: u64) {
    *seconds.entry(second).or_insert(0) += 1;
}

fn remove(seconds: &mut Seconds, second: u64) {
    if let Some(count) = seconds.get_mut(&second) {
        *count -= 1;
        if *count == 0 {
            seconds.remove(&second);
        }
    }
}

impl Frees {
    pub(crate) fn new() -> Arc<Frees> {
        Arc::new(Frees {
            stripes: (0..STRIPES).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
            next: AtomicUsize::new(0),
        })
    }

    fn stripe(&self, at: usize) -> MutexGuard<'_, Ledger> {
        // Nothing under the lock calls out: never poisoned in a way that
        // matters.
        self.stripes[at]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn stripe_of(&self, owner: &Principal) -> usize {
        self.hasher.hash_one(owner) as usize % STRIPES
    }

    /// Records that one of `owner`'s places frees by `at_ms` (milliseconds
    /// since the Unix epoch) at the latest; the record goes when the
    /// returned guard is dropped.
    pub(crate) fn record(self: &Arc<Self>, owner: Option<&Principal>, at_ms: u64) -> Freeing {
        let second = at_ms.div_ceil(1000);
        let stripe = match owner {
            Some(owner) => self.stripe_of(owner),
            // Relaxed: only spreads records over the stripes.
            None => self.next.fetch_add(1, Ordering::Relaxed) % STRIPES,
        };
        let mut ledger = self.stripe(stripe);
        add(&mut ledger.all, second);
        if let Some(owner) = owner {
            add(ledger.by_owner.entry(owner.clone()).or_default(), second);
        }
        drop(ledger);
        Freeing {
            frees: Arc::clone(self),
            stripe,
            second,
            owner: owner.cloned(),
        }
    }

    /// The soonest time (milliseconds since the Unix epoch) a recorded
    /// place frees: of `owner`'s if given, else of anyone's.
    pub(crate) fn soonest(&self, owner: Option<&Principal>) -> Option<u64> {
        let second = match owner {
            Some(owner) => self
                .stripe(self.stripe_of(owner))
                .by_owner
                .get(owner)
                .and_then(|seconds| seconds.keys().next().copied()),
            None => (0..STRIPES)
                .filter_map(|at| self.stripe(at).all.keys().next().copied())
                .min(),
        };
        second.map(|s| s.saturating_mul(1000))
    }
}

impl Drop for Freeing {
    fn drop(&mut self) {
        let mut ledger = self.frees.stripe(self.stripe);
        remove(&mut ledger.all, self.second);
        if let Some(owner) = &self.owner {
            if let Some(seconds) = ledger.by_owner.get_mut(owner) {
                remove(seconds, self.second);
                if seconds.is_empty() {
                    ledger.by_owner.remove(owner);
                }
            }
        }
    }
}

/// The `Retry-After` (whole seconds, at least 1) of a refusal whose store
/// frees a place at `soonest` (ms since the Unix epoch) at the latest, plus
/// `slack` (the reaper frees an entry up to two sweeps after its time); or,
/// when no place's time is known yet, no sooner than `unknown` from now (a
/// task still running frees its place only once it has ended and been kept
/// for its retention).
pub(crate) fn retry_after(soonest: Option<u64>, unknown: Duration, slack: Duration) -> u64 {
    let wait_ms = match soonest {
        Some(at) => at.saturating_sub(unix_ms()),
        None => unknown.as_millis() as u64,
    };
    let wait_ms = wait_ms.saturating_add(slack.as_millis() as u64);
    wait_ms.div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soonest_free_in_all_and_per_owner_follows_what_is_held() {
        let frees = Frees::new();
        let (ada, bob) = (Principal::new("ada"), Principal::new("bob"));
        let late = frees.record(Some(&ada), 90_000);
        let early = frees.record(Some(&bob), 10_500);
        let anonymous = frees.record(None, 50_000);
        assert_eq!(
            frees.soonest(None),
            Some(11_000),
            "rounded up to the second"
        );
        assert_eq!(frees.soonest(Some(&ada)), Some(90_000));
        assert_eq!(frees.soonest(Some(&bob)), Some(11_000));
        drop(early);
        assert_eq!(frees.soonest(None), Some(50_000));
        assert_eq!(frees.soonest(Some(&bob)), None);
        drop((late, anonymous));
        assert_eq!(frees.soonest(None), None);
        assert!(frees.stripes.iter().all(|s| {
            let ledger = s.lock().unwrap();
            ledger.all.is_empty() && ledger.by_owner.is_empty()
        }));
    }

    #[test]
    fn retry_after_says_when_a_place_frees() {
        let now = unix_ms();
        let slack = Duration::from_millis(500);
        assert_eq!(retry_after(Some(now + 9_000), Duration::ZERO, slack), 10);
        assert_eq!(
            retry_after(Some(now.saturating_sub(5_000)), Duration::ZERO, slack),
            1
        );
        assert_eq!(retry_after(None, Duration::from_secs(600), slack), 601);
    }
}

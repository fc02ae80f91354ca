//! The record of single-use `requestState`s not used yet ([`SingleUse`]):
//! an entry each in a registry, made when a state is sealed and ended when
//! it is used (its terminate CAS: of two retries with one state exactly one
//! wins) or when it has been idle for the state's lifetime.
//!
//! The record is shared by every principal, so it is bounded twice: in all (the registry's capacity,
//! [`Builder::single_use_states`](crate::http::Builder::single_use_states):
//! 503 when full) and per principal (a [`Share`] kept in the entry's value,
//! [`Builder::single_use_share`](crate::http::Builder::single_use_share):
//! 429 past it, and nobody else notices). Each entry also keeps its line in
//! the ledger of when places free ([`Frees`]): its state's expiry, the
//! latest it can be there, so a refusal's `Retry-After` says when the
//! soonest one goes.

use crate::http::wire::config::Config;
use crate::http::wire::config_error::ConfigError;
use crate::http::wire::free_times::{self, Freeing, Frees};
use crate::http::wire::principal::Principal;
use crate::http::wire::unix_time::unix_ms;
use crate::shares::{Share, Shares};
use crate::{Reason, Registry, SessionId};
use std::sync::Arc;
use std::time::Duration;

/// One unused single-use state: what its entry holds until it is freed.
pub(crate) struct Unused {
    _share: Option<Share<Principal>>,
    _freeing: Freeing,
}

/// Why a single-use state could not be recorded, with the `Retry-After`
/// (whole seconds) of when a place frees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The principal has its whole share of unused states (`limit`).
    OverShare { limit: usize, retry_after: u64 },
    /// The record is full (`limit` unused states in all).
    Full { limit: usize, retry_after: u64 },
}

/// The record of one endpoint. See the [module docs](self).
pub(crate) struct SingleUse {
    unused: Registry<Unused>,
    shares: Option<Shares<Principal>>,
    frees: Arc<Frees>,
    ttl: Duration,
    /// How late after its time the reaper may free an entry: two sweeps.
    slack: Duration,
}

impl SingleUse {
    /// The record of `config` (its TTL, capacity and share, validated).
    pub(crate) fn new(config: &Config) -> Result<SingleUse, ConfigError> {
        let invalid = |e: crate::BuildError| {
            ConfigError::out_of_range("single_use_states", config.single_use_states, e.to_string())
        };
        let unused = Registry::builder()
            .capacity(config.single_use_states)
            .idle_timeout(config.request_state_ttl)
            .build()
            .map_err(invalid)?;
        let shares = config
            .single_use_share()
            .map(|limit| {
                Shares::new(limit).map_err(|e| {
                    ConfigError::out_of_range("single_use_share", limit, e.to_string())
                })
            })
            .transpose()?;
        Ok(SingleUse {
            unused,
            shares,
            frees: Frees::new(),
            ttl: config.request_state_ttl,
            slack: 2 * reap_period(config.request_state_ttl),
        })
    }

    /// Records a new unused state of `owner`'s; its id goes into the
    /// sealed payload.
    pub(crate) fn record(&self, owner: Option<&Principal>) -> Result<SessionId, Refused> {
        let share = match (&self.shares, owner) {
            (Some(shares), Some(owner)) => match shares.take(owner) {
                Ok(share) => Some(share),
                Err(full) => {
                    let soonest = self.frees.soonest(Some(owner));
                    return Err(Refused::OverShare {
                        limit: full.limit,
                        retry_after: free_times::retry_after(soonest, self.ttl, self.slack),
                    });
                }
            },
            _ => None,
        };
        let expires = unix_ms().saturating_add(self.ttl.as_millis() as u64);
        let entry = Unused {
            _share: share,
            _freeing: self.frees.record(owner, expires),
        };
        // At capacity the entry comes back, and with it its share and its
        // ledger line.
        self.unused.insert(entry).map_err(|full| {
            drop(full);
            let soonest = self.frees.soonest(None);
            Refused::Full {
                limit: self.unused.capacity(),
                retry_after: free_times::retry_after(soonest, self.ttl, self.slack),
            }
        })
    }

    /// Uses the state recorded as `id` up; whether this call did (of two
    /// retries with one state, exactly one does).
    pub(crate) fn redeem(&self, id: &SessionId) -> bool {
        self.unused.terminate(id, Reason::Deleted).is_won()
    }

    /// The registry of unused states (swept by the reaper; its live count
    /// is `sessionreg_request_states_unused`).
    pub(crate) fn unused(&self) -> &Registry<Unused> {
        &self.unused
    }
}

/// The period the reaper sweeps the record at, at most (as `reaper.rs`
/// computes it).
pub(crate) fn reap_period(ttl: Duration) -> Duration {
    (ttl / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(single_use_states: usize, share: Option<usize>) -> SingleUse {
        let config = Config {
            single_use_states,
            single_use_share: crate::http::wire::config::ShareSetting::of(share),
            request_state_ttl: Duration::from_secs(60),
            ..Config::default()
        };
        SingleUse::new(&config).unwrap()
    }

    #[test]
    fn a_principal_past_its_share_is_refused_and_another_is_not() {
        let single = record(4, Some(2));
        let (ada, bob) = (Principal::new("ada"), Principal::new("bob"));
        let first = single.record(Some(&ada)).unwrap();
        single.record(Some(&ada)).unwrap();
        match single.record(Some(&ada)) {
            Err(Refused::OverShare { limit, retry_after }) => {
                assert_eq!(limit, 2);
                // Ada's soonest record expires in 60 s (to the second above),
                // and is freed by a sweep within two periods (1 s each).
                assert!((60..=63).contains(&retry_after), "{retry_after}");
            }
            other => panic!("{other:?}"),
        }
        single.record(Some(&bob)).unwrap();
        // Used, a state gives its place back.
        assert!(single.redeem(&first));
        assert!(!single.redeem(&first));
        single.record(Some(&ada)).unwrap();
        // Ada 2, Bob 1: one place left in all, taken without a principal.
        single.record(None).unwrap();
        assert!(matches!(
            single.record(Some(&bob)),
            Err(Refused::Full { limit: 4, .. })
        ));
        assert_eq!(single.unused().len(), 4);
    }

    #[test]
    fn without_a_principal_only_the_capacity_bounds_the_record() {
        let single = record(3, None);
        for _ in 0..3 {
            single.record(None).unwrap();
        }
        assert!(matches!(single.record(None), Err(Refused::Full { .. })));
        let shared = record(3, Some(1));
        for _ in 0..3 {
            shared.record(None).unwrap();
        }
    }
}

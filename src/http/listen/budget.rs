//! What resource URIs a client makes the layer keep may cost, in bytes
//! ([`UriBudget`]): every byte a listen stream's filter or a legacy
//! session's subscriptions keep counts against a bound of all of them
//! together, and against its principal's share of that bound, as every
//! store the principals share does. The bytes are charged when kept and
//! given back, exactly once, with the [`Charge`] the listener (or the
//! session's subscription) holds. Each URI is charged its bytes and
//! [`URI_OVERHEAD`] more, what the topic index keeps beside its text (its
//! entry, its roster, the member's place and position), so that many short
//! URIs cost what they pin as a few long ones do. A URI's text is kept once
//! by the index whoever names it (`topics.rs`), but each holder is charged:
//! what one principal may make the server keep does not depend on what
//! others happen to name.

use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use crate::shares::{Share, Shares};

/// What the topic index keeps of one URI beside its text, charged with it
/// (its map entry, roster, tree and leaf, position book: `config.rs`).
pub(crate) const URI_OVERHEAD: usize = crate::http::wire::config::LISTEN_URI_OVERHEAD;

/// The store refusals name.
const STORE: &str = "resource URI";
/// What it holds, as refusals count it.
const HELD: &str = "bytes of resource URIs";

/// The bytes of resource URIs kept, in all and per principal.
pub(crate) struct UriBudget {
    all: Shares<()>,
    /// Each principal's share; `None`: no share (the bound of all only).
    share: Option<Shares<Principal>>,
    /// The `Retry-After` of a refusal (bytes free when a listener ends or a
    /// session unsubscribes, which nobody can foretell: the configured one).
    retry_after: u64,
}

/// Bytes charged, given back when dropped.
pub(crate) struct Charge {
    _all: Share<()>,
    _own: Option<Share<Principal>>,
}

impl UriBudget {
    /// A budget of `bytes` in all, `share` of them per principal.
    pub(crate) fn new(bytes: usize, share: Option<usize>, retry_after: u64) -> UriBudget {
        UriBudget {
            // Both at least 1: checked by the configuration.
            all: Shares::new(bytes.max(1)).unwrap_or_else(|_| unreachable!("at least 1")),
            share: share.map(|limit| {
                Shares::new(limit.max(1)).unwrap_or_else(|_| unreachable!("at least 1"))
            }),
            retry_after,
        }
    }

    /// Charges `uris` URIs of `bytes` together (each costing
    /// [`URI_OVERHEAD`] more) to `owner` (its share first: a principal past
    /// its share is 429 and takes nothing from the others), then to the
    /// bound of all (503).
    pub(crate) fn charge(
        &self,
        owner: Option<&Principal>,
        uris: usize,
        bytes: usize,
    ) -> Result<Charge, Reject> {
        let retry_after = self.retry_after;
        let bytes = bytes.saturating_add(uris.saturating_mul(URI_OVERHEAD));
        let own = match (&self.share, owner) {
            (Some(shares), Some(principal)) => Some(shares.take_many(principal, bytes).map_err(
                |full| Reject::OverShare {
                    bound: "listen_bytes_share",
                    store: STORE,
                    held: HELD,
                    limit: full.limit,
                    retry_after,
                },
            )?),
            _ => None,
        };
        let all = self
            .all
            .take_many(&(), bytes)
            .map_err(|full| Reject::StoreFull {
                bound: "listen_bytes",
                store: STORE,
                held: HELD,
                limit: full.limit,
                retry_after,
            })?;
        Ok(Charge {
            _all: all,
            _own: own,
        })
    }

    /// The bytes kept now, all principals together.
    pub(crate) fn held(&self) -> usize {
        self.all.held(&())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_past_its_share_takes_nothing_and_the_bound_of_all_holds() {
        let budget = UriBudget::new(100, Some(60), 1);
        let (ada, bob) = (Principal::new("ada"), Principal::new("bob"));
        let first = budget.charge(Some(&ada), 0, 50).unwrap();
        assert!(matches!(
            budget.charge(Some(&ada), 0, 11),
            Err(Reject::OverShare {
                bound: "listen_bytes_share",
                ..
            })
        ));
        assert_eq!(budget.held(), 50, "a refusal takes nothing");
        let second = budget.charge(Some(&bob), 0, 40).unwrap();
        assert!(matches!(
            budget.charge(None, 0, 11),
            Err(Reject::StoreFull {
                bound: "listen_bytes",
                ..
            })
        ));
        assert!(matches!(
            budget.charge(Some(&bob), 0, 11),
            Err(Reject::StoreFull { .. })
        ));
        drop(first);
        let anonymous = budget.charge(None, 0, 60).unwrap();
        drop((second, anonymous));
        assert_eq!(budget.held(), 0);
        let roomy = UriBudget::new(10_000, None, 1);
        let two = roomy.charge(None, 2, 10).unwrap();
        assert_eq!(
            roomy.held(),
            10 + 2 * URI_OVERHEAD,
            "each URI costs its overhead"
        );
        drop(two);
    }
}

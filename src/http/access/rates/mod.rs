//! Rate limits per principal, on one node ([`PrincipalRates`]): how fast a
//! principal may *ask*, beside the shares that bound what it *holds*.
//!
//! Each principal has a GCRA cell (governor's: one compare-and-swap per
//! decision, no lock, no timer): `rate` requests per window, bursts of up
//! to `burst` (one window's worth unless configured). A JSON-RPC request
//! past it gets 429 with `Retry-After`, the IETF `RateLimit-Policy` and
//! `RateLimit` headers (draft-ietf-httpapi-ratelimit-headers -08 and
//! later: `"principal";q=20;w=1`, `"principal";r=0;t=1`) and a JSON-RPC
//! error with the request's id naming the limit; counted in `/metrics` by
//! limit, never by principal. A principal at its limit costs the others
//! nothing: its refusals are decided on its own cell.
//!
//! Checked once the message is read (`run/opening.rs`), in both eras, on
//! requests only (a notification or a client's response is not refused: a
//! `notifications/cancelled` must get through). A request without a
//! principal (no authenticator) is not limited here. The cells are bounded
//! in count (`store.rs`).

mod store;

use crate::http::wire::config::Config;
use crate::http::wire::principal::Principal;
use crate::http::wire::rate::Rate;
use crate::http::wire::reject::Reject;
use governor::clock::{Clock, MonotonicClock};
use governor::{Quota, RateLimiter};
use std::fmt::Write;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::{BoundedStore, Cells};

/// The name of the per-principal limit, in the headers, the error and the
/// metrics' `limit` label.
pub(crate) const PRINCIPAL_LIMIT: &str = "principal";

/// The per-principal limit of one node.
pub(crate) struct PrincipalRates {
    limiter: RateLimiter<Principal, BoundedStore, MonotonicClock>,
    clock: MonotonicClock,
    /// The limiter's cells (it owns them too).
    cells: Arc<Cells>,
    rate: Rate,
    /// When the store was last pruned (nanoseconds since `started`).
    pruned: AtomicU64,
    started: Instant,
    /// The least time between two prunes: the rate's window.
    prune_every: Duration,
    /// Requests refused.
    limited: AtomicU64,
}

impl PrincipalRates {
    /// The limit `config` sets, if it sets one (validated: a count from 1,
    /// a burst from 1).
    pub(crate) fn new(config: &Config) -> Option<PrincipalRates> {
        let rate = config.rate_limit?;
        let count = NonZeroU32::new(rate.count())?;
        let burst = NonZeroU32::new(config.rate_burst.unwrap_or(rate.count()))?;
        let quota = Quota::with_period(rate.window() / count.get())?.allow_burst(burst);
        let clock = MonotonicClock;
        let cells = Arc::new(Cells::new(config.rate_limited_principals));
        let store = BoundedStore(Arc::clone(&cells));
        Some(PrincipalRates {
            limiter: RateLimiter::new(quota, store, clock.clone()),
            clock,
            cells,
            rate,
            pruned: AtomicU64::new(0),
            started: Instant::now(),
            prune_every: rate.window(),
            limited: AtomicU64::new(0),
        })
    }

    /// Counts one request of `principal`; past its limit, the 429.
    pub(crate) fn check(&self, principal: &Principal) -> Result<(), Reject> {
        if self.cells.is_full() {
            self.prune();
        }
        match self.limiter.check_key(principal) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                // Relaxed: a counter read by /metrics only.
                self.limited.fetch_add(1, Ordering::Relaxed);
                let wait = not_until.wait_time_from(self.clock.now());
                Err(Reject::RateLimited {
                    limit: PRINCIPAL_LIMIT,
                    rate: self.rate,
                    retry_after: whole_seconds(wait),
                })
            }
        }
    }

    /// Drops the cells back at a full burst, at most once per window
    /// (a prune walks every cell).
    fn prune(&self) {
        let now = self.started.elapsed().as_nanos() as u64;
        // Relaxed: which thread prunes does not matter; one of them does.
        let last = self.pruned.load(Ordering::Relaxed);
        let every = self.prune_every.as_nanos() as u64;
        if last != 0 && now.saturating_sub(last) < every {
            return;
        }
        if self
            .pruned
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.limiter.retain_recent();
        }
    }

    /// `sessionreg_rate_limited_total{limit}`, `sessionreg_rate_limit_principals`
    /// and `sessionreg_rate_limit_overflow_total`, in Prometheus text.
    pub(crate) fn write_metrics(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP sessionreg_rate_limited_total Requests refused 429 past a rate limit, by limit.\n\
             # TYPE sessionreg_rate_limited_total counter\n\
             sessionreg_rate_limited_total{{limit=\"{PRINCIPAL_LIMIT}\"}} {}",
            self.limited.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP sessionreg_rate_limit_principals Principals with a rate-limit cell of their own.\n\
             # TYPE sessionreg_rate_limit_principals gauge\n\
             sessionreg_rate_limit_principals {}",
            self.cells.len()
        );
        let _ = writeln!(
            out,
            "# HELP sessionreg_rate_limit_overflow_total Decisions made on the shared cell of principals past rate_limited_principals.\n\
             # TYPE sessionreg_rate_limit_overflow_total counter\n\
             sessionreg_rate_limit_overflow_total {}",
            // Relaxed: a counter.
            self.cells.overflowed.load(Ordering::Relaxed)
        );
    }
}

/// `Retry-After` seconds for a wait: rounded up, at least 1.
fn whole_seconds(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn rates(rate: Rate, burst: u32, principals: usize) -> PrincipalRates {
        let config = Config {
            rate_limit: Some(rate),
            rate_burst: Some(burst),
            rate_limited_principals: principals,
            ..Config::default()
        };
        PrincipalRates::new(&config).unwrap()
    }

    #[test]
    fn a_principal_flood_holds_a_bounded_number_of_cells_and_the_known_keep_theirs() {
        let rates = rates(Rate::per_second(1000), 1, 2);
        let [ada, bob, carol, dave] = ["ada", "bob", "carol", "dave"].map(Principal::new);
        assert!(rates.check(&ada).is_ok());
        assert!(rates.check(&bob).is_ok());
        // Past the bound: newcomers share the overflow cell (burst 1).
        assert!(rates.check(&carol).is_ok());
        assert!(rates.check(&dave).is_err());
        assert_eq!(rates.cells.len(), 2);
        assert_eq!(rates.cells.overflowed.load(Ordering::Relaxed), 2);
        // Ada's own cell is hers: the overflow's use did not touch it.
        assert!(matches!(
            rates.check(&ada),
            Err(Reject::RateLimited {
                limit: "principal",
                retry_after: 1,
                ..
            })
        ));
        // Once the cells are back at a full burst a prune (at most once a
        // window) drops them, and a newcomer gets a cell of its own.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !rates.cells.holds(&dave) {
            assert!(Instant::now() < deadline, "never pruned");
            let _ = rates.check(&dave);
            std::thread::yield_now();
        }
        assert!(rates.cells.len() <= 2);
    }

    #[test]
    fn retry_after_is_rounded_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::from_millis(1)), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1001)), 2);
        assert_eq!(whole_seconds(Duration::ZERO), 1);
    }
}

//! The places of the task store ([`Places`]): its capacity, shared by every
//! principal, and each principal's share of it, for running and retained
//! tasks together; and what a refusal at either says.
//!
//! So that one principal cannot fill the whole store (with tasks waiting
//! for input, say) and leave every other principal's call a 503, a
//! principal takes one place of its share before the store takes the task ([`Places::take`]); the [`Share`] lives in the task's entry, so
//! it is held while the task runs and while it is retained, and given back
//! by the one drop that frees the entry. Past its share a principal gets
//! 429 naming the bound; nobody else notices. A server without principals
//! has the capacity alone (per-address limits belong to a proxy).
//!
//! When a task's work ends, its entry records in a ledger ([`Frees`]) when
//! its place frees at the latest (that end plus the retention), so a
//! refusal's `Retry-After` is the soonest such time: the principal's own
//! for a share, anyone's for a full store. With no task ended yet the time
//! is unknown; then it is the retention, the soonest any place can free (a
//! task must end first, and be kept that long).

use crate::http::wire::config::Config;
use crate::http::wire::config_error::ConfigError;
use crate::http::wire::free_times::{self, Freeing, Frees};
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use crate::http::wire::unix_time::unix_ms;
use crate::shares::{Share, Shares};
use std::sync::Arc;
use std::time::Duration;

/// What a refusal calls the task store and what it holds.
const STORE: &str = "task";
const HELD: &str = "tasks, running or kept";

/// The task store's places. See the [module docs](self).
pub(crate) struct Places {
    shares: Option<Shares<Principal>>,
    frees: Arc<Frees>,
    capacity: usize,
    retention: Duration,
    /// How late after its time the reaper may free an entry: two sweeps.
    slack: Duration,
}

impl Places {
    /// The places `config` (validated) gives the task store, which the
    /// reaper sweeps every `reap_period` at most.
    pub(crate) fn new(config: &Config, reap_period: Duration) -> Result<Places, ConfigError> {
        let shares = config
            .task_share()
            .map(|limit| {
                Shares::new(limit)
                    .map_err(|e| ConfigError::out_of_range("task_share", limit, e.to_string()))
            })
            .transpose()?;
        Ok(Places {
            shares,
            frees: Frees::new(),
            capacity: config.task_capacity,
            retention: config.task_retention,
            slack: 2 * reap_period,
        })
    }

    /// Takes one of `owner`'s places, for a task about to be created; 429
    /// past its share. Keep the share in the task's entry.
    pub(crate) fn take(
        &self,
        owner: Option<&Principal>,
    ) -> Result<Option<Share<Principal>>, Reject> {
        let (Some(shares), Some(owner)) = (&self.shares, owner) else {
            return Ok(None);
        };
        shares.take(owner).map(Some).map_err(|full| {
            let soonest = self.frees.soonest(Some(owner));
            let retry_after = free_times::retry_after(soonest, self.retention, self.slack);
            tracing::debug!(
                limit = full.limit,
                retry_after,
                "a principal is past its task share: 429"
            );
            Reject::OverShare {
                bound: "task_share",
                store: STORE,
                held: HELD,
                limit: full.limit,
                retry_after,
            }
        })
    }

    /// The refusal of a call that would create a task in a full store.
    pub(crate) fn full(&self) -> Reject {
        let soonest = self.frees.soonest(None);
        let retry_after = free_times::retry_after(soonest, self.retention, self.slack);
        tracing::debug!(
            capacity = self.capacity,
            retry_after,
            "the task store is full: 503"
        );
        Reject::StoreFull {
            bound: "task_capacity",
            store: STORE,
            held: HELD,
            limit: self.capacity,
            retry_after,
        }
    }

    /// Records that a task of `owner`'s ended now: its place frees once its
    /// retention has passed. Keep the record in the task's entry.
    pub(crate) fn ended(&self, owner: Option<&Principal>) -> Freeing {
        let at = unix_ms().saturating_add(self.retention.as_millis() as u64);
        self.frees.record(owner, at)
    }
}

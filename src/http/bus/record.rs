//! The fleet's record of used single-use `requestState`s, in Redis
//! ([`Record`]): redeeming a state is one `SET NAMESPACE:used:KEY 1 NX PX
//! REMAINING`, atomic in Redis, so of two retries with one state, on any
//! nodes, exactly one sets the key; the key expires with the state. While
//! the link is down, or when Redis does not answer within the bus's
//! timeout, the answer is "unavailable": the retry is refused and the
//! state stays unused (fail closed: a state never opens twice). A state of
//! another epoch than the record's is stale (see `link.rs`).

use super::Shared;
use crate::http::mrtr::used::{Redeemed, Redemption, UsedKey, UsedStates};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The record, on the bus's commands connection.
pub(super) struct Record {
    shared: Arc<Shared>,
}

impl Record {
    pub(super) fn new(shared: Arc<Shared>) -> Record {
        Record { shared }
    }
}

impl UsedStates for Record {
    fn epoch(&self) -> u64 {
        // Relaxed: a value read alone; a stale one makes a state refused
        // as stale later, never opened twice.
        self.shared.epoch.load(Ordering::Relaxed)
    }

    fn redeem(&self, key: UsedKey, ttl: Duration, epoch: u64) -> Redemption {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            if !shared.link.is_up() {
                return Redeemed::Unavailable;
            }
            // Read after `is_up` (SeqCst): the task stores the epoch before
            // it marks the link up.
            if epoch == 0 || epoch != shared.epoch.load(Ordering::Relaxed) {
                return Redeemed::Stale;
            }
            let Some(connection) = shared.commands.load_full() else {
                return Redeemed::Unavailable;
            };
            let mut connection = (*connection).clone();
            let name = format!("{}{}", shared.used_prefix, key.hex());
            let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            let mut set = redis::cmd("SET");
            set.arg(&name).arg(1).arg("NX").arg("PX").arg(millis);
            let set = set.query_async::<Option<String>>(&mut connection);
            match tokio::time::timeout(shared.timeout, set).await {
                Ok(Ok(Some(_))) => Redeemed::First,
                Ok(Ok(None)) => Redeemed::Again,
                Ok(Err(error)) => {
                    tracing::debug!(%error, "single-use requestState: the fleet's record refused the write");
                    Redeemed::Unavailable
                }
                Err(_) => {
                    tracing::debug!(
                        "single-use requestState: the fleet's record did not answer in time"
                    );
                    Redeemed::Unavailable
                }
            }
        })
    }
}

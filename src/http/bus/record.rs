//! The fleet's record of used single-use `requestState`s, in Redis
//! ([`Record`]): redeeming a state is one script ([`REDEEM`]), atomic in
//! Redis, that checks the state's epoch against the record's and its
//! instance (`epoch.rs`) and makes the state's key, `SET
//! NAMESPACE:used:KEY 1 NX PX REMAINING`, in the same step: of two retries
//! with one state, on any nodes, exactly one sets the key; the key expires
//! with the state; and a state sealed before the record lost what it held
//! is refused by the step that would have recorded it. While the link is
//! down, or when Redis does not answer within the bus's timeout (or
//! refuses the script), the answer is "unavailable": the retry is refused
//! and the state stays unused (fail closed: a state never opens twice).

use super::epoch;
use super::parts::BusParts;
use crate::http::input::used::{Redeemed, Redemption, UsedKey, UsedStates};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Records a state's use if the record's epoch (`KEYS[1]`) is the state's
/// (`ARGV[1]`) under the instance running the script, by `SET KEYS[2] 1 NX
/// PX ARGV[2]`: 1 if this is its first use, 0 if it was used before, -1 if
/// the state is of another epoch, or the record of another instance, or
/// there is no record (stale: whether it was used cannot be told).
const REDEEM: &str = r"
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
if not run or redis.call('GET', KEYS[1]) ~= ARGV[1] .. ':' .. run then return -1 end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then return 1 end
return 0
";

/// The record, on the bus's commands connection.
pub(super) struct Record {
    shared: Arc<BusParts>,
}

impl Record {
    pub(super) fn new(shared: Arc<BusParts>) -> Record {
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
            if epoch == 0 {
                // Sealed before this node ever read the record's epoch.
                return Redeemed::Stale;
            }
            let Some(connection) = shared.commands.load_full() else {
                return Redeemed::Unavailable;
            };
            let mut connection = (*connection).clone();
            let name = format!("{}{}", shared.used_prefix, key.hex());
            let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            let mut eval = redis::cmd("EVAL");
            eval.arg(REDEEM)
                .arg(2)
                .arg(&shared.epoch_key)
                .arg(&name)
                .arg(epoch::hex(epoch))
                .arg(millis);
            let answer = eval.query_async::<i64>(&mut connection);
            let redeemed = match tokio::time::timeout(shared.timeout, answer).await {
                Ok(Ok(1)) => Redeemed::First,
                Ok(Ok(0)) => Redeemed::Again,
                Ok(Ok(_)) => Redeemed::Stale,
                Ok(Err(error)) => {
                    tracing::debug!(%error, "single-use requestState: the fleet's record refused the script");
                    return Redeemed::Unavailable;
                }
                Err(_) => {
                    tracing::debug!(
                        "single-use requestState: the fleet's record did not answer in time"
                    );
                    return Redeemed::Unavailable;
                }
            };
            // The node's own epoch is behind Redis's: a state of it found
            // stale (the record was lost or replaced since it was read), or
            // one of another epoch found current. The task reads it again
            // now rather than at its next heartbeat, so that the states
            // this node seals from now on are of the record's epoch.
            let known = shared.epoch.load(Ordering::Relaxed);
            if (redeemed == Redeemed::Stale) == (epoch == known) {
                shared.epoch_behind.notify_one();
            }
            redeemed
        })
    }
}

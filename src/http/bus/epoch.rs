//! The record's epoch: which Redis, holding which data, the fleet's record
//! of used single-use `requestState`s is in. One key, `NAMESPACE:epoch`:
//!
//! ```text
//! NAMESPACE:epoch = EPOCH ":" RUN_ID
//!   EPOCH   16 hex digits: random, never 0; sealed into every single-use state (`input/sealing.rs`)
//!   RUN_ID  the run_id of the Redis process that holds the key (INFO server): new at every
//!           start of a Redis process, whatever data it starts from; a replica has its own
//! ```
//!
//! A record can lose used states two ways, and a used state must not open
//! again after either:
//!
//! * **Its keys removed** (`FLUSHALL`, `FLUSHDB`): the epoch key goes with
//!   them.
//! * **An older copy of its data served** (a restart from an RDB snapshot,
//!   or an AOF not fsynced to its end; a failover to a replica the latest
//!   writes had not reached): the epoch key, older than any used state's
//!   key, comes back, and the latest used keys do not. The data cannot tell
//!   it is old; the process can: it has another run_id.
//!
//! So an epoch holds only with the run_id it was made under, and the check
//! is Redis's own, in the script that records a use (`record.rs`): the
//! record's key read, the run_id of the instance running the script
//! compared, and the used state's `SET NX PX` made, in one atomic step. A
//! state sealed in another epoch, or under an epoch of another instance, or
//! with no epoch key at all, is refused (stale), whatever the node last
//! read: there is no window between a loss and its notice. The node's own
//! copy of the epoch (the one it seals with) is only a hint, read here
//! ([`ADOPT`]) when the link comes up, at every heartbeat, and at once when
//! a redemption finds it behind (`record.rs`); the first node to find the
//! epoch gone or of another instance makes a new one, atomically, and every
//! node reads the same.
//!
//! Not a new epoch at every reconnect: a node's connection that blinks is
//! no loss of Redis's data, and each blink would refuse every state in
//! flight, fleet-wide; and a flush comes with no reconnect at all, and a
//! proxy in front of Redis may keep a node's connection while the instance
//! behind it changes. The run_id, read inside Redis at each use, sees both.
//!
//! What no epoch sees: a used state's key removed alone (a `DEL` by another
//! client of the same Redis, or an eviction: hence `maxmemory-policy
//! noeviction`, which the task checks and warns about), or Redis's clock
//! jumping ahead of the nodes' (a key then expires before its state). The
//! README's "The bus (Redis)" says what an operator must give.

use redis::aio::MultiplexedConnection;

/// Reads the record's epoch, making a new one (`ARGV[1]`, 16 hex digits)
/// if there is none, or if the one there is not this instance's: the key
/// `KEYS[1]`. Answers the epoch key's value and what was done: 0 kept, 1
/// made where there was none, 2 made in place of another instance's.
const ADOPT: &str = r"
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
if not run then return redis.error_reply('INFO server names no run_id') end
local record = redis.call('GET', KEYS[1])
if record then
  local epoch, owner = string.match(record, '^(' .. string.rep('%x', 16) .. '):(%x+)$')
  if owner == run and epoch ~= '0000000000000000' then return {record, 0} end
end
local made = ARGV[1] .. ':' .. run
redis.call('SET', KEYS[1], made)
if record then return {made, 2} end
return {made, 1}
";

/// What reading the epoch found.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Adopted {
    /// The record's epoch, as it was.
    Kept(u64),
    /// There was none (a Redis never used by the fleet, or flushed): this
    /// node made it.
    Made(u64),
    /// The one there was made under another instance (restarted, or failed
    /// over): this node made a new one.
    Replaced(u64),
}

impl Adopted {
    /// The epoch in force now.
    pub(super) fn epoch(self) -> u64 {
        match self {
            Adopted::Kept(epoch) | Adopted::Made(epoch) | Adopted::Replaced(epoch) => epoch,
        }
    }
}

/// Reads (or makes) the epoch of the record under `key`.
pub(super) async fn adopt(
    commands: &mut MultiplexedConnection,
    key: &str,
) -> redis::RedisResult<Result<Adopted, String>> {
    let mut eval = redis::cmd("EVAL");
    eval.arg(ADOPT).arg(1).arg(key).arg(hex(fresh()));
    let (value, done): (String, i64) = eval.query_async(commands).await?;
    let Some(epoch) = parse(&value) else {
        return Ok(Err(format!("{key} holds no epoch of ours")));
    };
    Ok(Ok(match done {
        0 => Adopted::Kept(epoch),
        1 => Adopted::Made(epoch),
        _ => Adopted::Replaced(epoch),
    }))
}

/// An epoch as the key and the scripts write it.
pub(super) fn hex(epoch: u64) -> String {
    format!("{epoch:016x}")
}

/// A fresh random epoch (never 0, which stands for none).
fn fresh() -> u64 {
    loop {
        let mut bytes = [0u8; 8];
        crate::secret::fill_random(&mut bytes);
        let epoch = u64::from_be_bytes(bytes);
        if epoch != 0 {
            return epoch;
        }
    }
}

/// The epoch of the key's value `EPOCH:RUN_ID`.
fn parse(value: &str) -> Option<u64> {
    let (epoch, run) = value.split_once(':')?;
    if epoch.len() != 16 || run.is_empty() {
        return None;
    }
    u64::from_str_radix(epoch, 16).ok().filter(|&e| e != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_is_read_from_its_key_with_its_instance() {
        let run = "396875eb50d5a73d6e01109d6aa7d1eee9e4f94d";
        assert_eq!(parse(&format!("{}:{run}", hex(0xfeed))), Some(0xfeed));
        for bad in [
            "".to_string(),
            format!("{}:", hex(1)),
            format!("{}:{run}", hex(0)),
            format!("feed:{run}"),
            "zzzzzzzzzzzzzzzz:ab".to_string(),
            hex(1),
        ] {
            assert_eq!(parse(&bad), None, "{bad:?}");
        }
        assert_ne!(fresh(), 0);
        assert_eq!(Adopted::Replaced(7).epoch(), 7);
    }
}

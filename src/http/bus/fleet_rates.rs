//! The fleet's rate limits, in Redis ([`BusRates`]): one script per
//! request ([`DECIDE`]) decides every limit the request meets, atomically
//! and on Redis's clock, GCRA as each node does alone (a cell is its
//! theoretical arrival time, kept under `NAMESPACE:rate:KEY` until it is
//! back at a full burst); and the count of the fleet's nodes ([`COUNT`],
//! each heartbeat), which gives each node its share of a limit while Redis
//! cannot decide.

use super::parts::BusParts;
use crate::http::access::rates::{FleetCell, FleetDecided, FleetDecision, FleetRates};
use redis::aio::MultiplexedConnection;
use std::sync::Arc;
use std::time::Duration;

/// Decides one request against the cells `KEYS` (`ARGV`: each cell's
/// interval and tolerance, in microseconds, in pairs), all or none: `{0,
/// 0}` if every cell allows it (each then counts it), else `{i, wait}` for
/// the first cell `i` (from 1) past its limit, `wait` microseconds until it
/// allows one (no cell counts it). A cell is kept (as a decimal number of
/// microseconds, Redis's `TIME`) until its arrival time has passed: then
/// it is as good as a new one.
const DECIDE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local arrivals = {}
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local tolerance = tonumber(ARGV[2 * i])
  local arrival = tonumber(redis.call('GET', key)) or now
  if arrival < now then arrival = now end
  local wait = arrival - tolerance - now
  if wait > 0 then return {i, wait} end
  arrivals[i] = arrival + interval
end
for i, key in ipairs(KEYS) do
  local ttl = math.ceil((arrivals[i] - now) / 1000)
  redis.call('SET', key, string.format('%d', arrivals[i]), 'PX', string.format('%d', ttl))
end
return {0, 0}
";

/// Says this node (`ARGV[1]`) is alive for `ARGV[2]` more milliseconds in
/// the set of nodes `KEYS[1]`, forgets the nodes whose time has passed,
/// and counts the rest (Redis's clock for all of them).
const COUNT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], string.format('%d', now + tonumber(ARGV[2])), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZCARD', KEYS[1])
";

/// The fleet's rate limits, on the bus's commands connection.
pub(super) struct BusRates {
    shared: Arc<BusParts>,
}

impl BusRates {
    pub(super) fn new(shared: Arc<BusParts>) -> BusRates {
        BusRates { shared }
    }
}

impl FleetRates for BusRates {
    fn is_up(&self) -> bool {
        self.shared.link.is_up()
    }

    fn nodes(&self) -> u32 {
        u32::try_from(self.shared.link.nodes())
            .unwrap_or(u32::MAX)
            .max(1)
    }

    fn decide(&self, cells: Vec<FleetCell>) -> FleetDecision {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let Some(connection) = shared.commands.load_full() else {
                return FleetDecided::Unavailable;
            };
            let mut connection = (*connection).clone();
            // By name once loaded: Redis need not read and hash the script.
            let by_name = shared.decide_sha.get().map(String::as_str);
            let answer = async {
                let eval = decision(&shared, &cells, by_name);
                match eval.query_async::<(i64, i64)>(&mut connection).await {
                    // A Redis that lost its scripts (restarted, flushed):
                    // the script itself, which it keeps again.
                    Err(error) if error.kind() == NO_SCRIPT => {
                        let eval = decision(&shared, &cells, None);
                        eval.query_async::<(i64, i64)>(&mut connection).await
                    }
                    answer => answer,
                }
            };
            match tokio::time::timeout(shared.timeout, answer).await {
                Ok(Ok((0, _))) => FleetDecided::Allowed,
                Ok(Ok((cell, wait))) if cell >= 1 && (cell as usize) <= cells.len() => {
                    FleetDecided::Refused {
                        cell: cell as usize - 1,
                        wait: Duration::from_micros(wait.max(0) as u64),
                    }
                }
                Ok(Ok(_)) => FleetDecided::Unavailable,
                Ok(Err(error)) => {
                    tracing::debug!(%error, "rate limits: Redis refused the script");
                    FleetDecided::Unavailable
                }
                Err(_) => {
                    tracing::debug!("rate limits: Redis did not answer in time");
                    FleetDecided::Unavailable
                }
            }
        })
    }
}

/// Redis's answer to a script called by a name it does not know.
const NO_SCRIPT: redis::ErrorKind = redis::ErrorKind::Server(redis::ServerErrorKind::NoScript);

/// The command deciding `cells`: the script by its name (`sha`) or itself.
fn decision(shared: &BusParts, cells: &[FleetCell], sha: Option<&str>) -> redis::Cmd {
    let mut eval = match sha {
        Some(sha) => {
            let mut eval = redis::cmd("EVALSHA");
            eval.arg(sha);
            eval
        }
        None => {
            let mut eval = redis::cmd("EVAL");
            eval.arg(DECIDE);
            eval
        }
    };
    eval.arg(cells.len());
    for cell in cells {
        eval.arg(format!("{}{}", shared.rate_prefix, cell.hex()));
    }
    for cell in cells {
        eval.arg(cell.interval_us).arg(cell.tolerance_us);
    }
    eval
}

/// Loads the rate limits' script into Redis, once per link up: decisions
/// call it by its SHA-1 from then on.
pub(super) async fn load_script(
    shared: &BusParts,
    commands: &mut MultiplexedConnection,
) -> redis::RedisResult<()> {
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(DECIDE)
        .query_async(commands)
        .await?;
    // The same script has the same SHA-1 every time: set once.
    let _ = shared.decide_sha.set(sha);
    Ok(())
}

/// Says this node alive in the fleet's set for `alive` and stores how many
/// nodes are.
pub(super) async fn count_nodes(
    shared: &BusParts,
    commands: &mut MultiplexedConnection,
    alive: Duration,
) -> redis::RedisResult<u32> {
    let millis = u64::try_from(alive.as_millis()).unwrap_or(u64::MAX).max(1);
    let nodes: u32 = redis::cmd("EVAL")
        .arg(COUNT)
        .arg(1)
        .arg(&shared.nodes_key)
        .arg(&shared.member)
        .arg(millis)
        .query_async(commands)
        .await?;
    shared.link.set_nodes(u64::from(nodes));
    Ok(nodes)
}

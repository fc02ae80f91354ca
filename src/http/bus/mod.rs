//! A fleet's bus on Redis (feature `redis`): what one node knows that every
//! node must, shared through the engine the ecosystem shares it through.
//!
//! * **Publications** ([`Publisher`](crate::http::Publisher)): each is delivered to this node's
//!   listeners at once and handed, without waiting, to a bounded queue
//!   ([`RedisBusBuilder::queue`]; past it dropped and counted) that a task
//!   drains into Redis `PUBLISH`es on one channel; every node subscribes to
//!   it and delivers what other nodes publish to its own listeners, exactly
//!   as a local publication, its audience with it (`wire.rs`). A node hears
//!   its own publications once: each frame carries the sender's random
//!   origin id, and a node drops its own echo.
//! * **Frames sealed** under the fleet's keys ([`BusKeys`], required:
//!   [`RedisBusBuilder::keys`]; AES-256-GCM, rotatable, `keys.rs`): a
//!   frame another client of the Redis publishes on the channel, forged or
//!   recorded and published again, is dropped unread and counted
//!   (`sessionreg_bus_frames_rejected_total{cause}`); what the frames carry
//!   (principals, URIs) is encrypted.
//! * **Single-use `requestState`s**: the record of used ones is Redis's
//!   (`record.rs`): a retry that carries one, on whichever node, is one
//!   script that makes a key derived from the state (`SET key 1 NX PX <its
//!   remaining life>`) if the state's epoch is the record's. No other
//!   request touches Redis. The record's epoch (a random number kept under
//!   `NAMESPACE:epoch` with the Redis process's `run_id`, sealed into every
//!   state: `epoch.rs`) tells, in the same atomic step, when Redis may have
//!   lost used keys (flushed, restarted from older data, failed over):
//!   states sealed before are refused then, as a used one might be among
//!   them.
//!
//! * **Rate limits across the fleet** (`fleet_rates.rs`): with
//!   [`Builder::rate_limit`](crate::http::Builder::rate_limit) or
//!   [`Builder::tool_rate_limit`](crate::http::Builder::tool_rate_limit),
//!   each request is decided by one script in Redis for all the limits it
//!   meets (GCRA on Redis's clock; the cells, under
//!   `NAMESPACE:rate:DIGEST`, name no principal and expire once back at a
//!   full burst), so a principal's combined rate through any number of
//!   nodes holds to its limit plus its burst; a round trip per limited
//!   request. Each node says it is alive every heartbeat in
//!   `NAMESPACE:nodes`, and counts the nodes there ([`RedisBus::nodes`]).
//!
//! **When Redis is away** (`link.rs`): the node keeps serving everything
//! that needs no bus. Its listen streams are ended gracefully
//! ([`Reason::Unavailable`](crate::Reason::Unavailable): their clients
//! re-listen and refetch) and new listens are answered 503 with
//! `Retry-After` until the link is back; a single-use state is refused
//! (503, counted as `unavailable`) and stays unused; each node keeps its share
//! of each rate limit (the rate and the burst divided by the nodes last
//! counted, at least one request: never no limit, never refusing everyone;
//! said once in the log and counted, `sessionreg_rate_limit_fleet`,
//! `sessionreg_rate_limit_fallbacks_total`). The task reconnects
//! with backoff, says each change of state in one log line, and counts
//! (`sessionreg_bus_*`). A publication a node could not hand to Redis (its
//! queue full, or the link failing under it) makes it tell every node,
//! once the link is back, to end their listen streams too: no listener
//! misses a change silently.
//!
//! ```no_run
//! use sessionreg::http::{BusKeys, Publisher, RedisBus, SessionManager};
//! # use sessionreg::http::{App, Context, HandlerError, Reply};
//! # use sessionreg::http::jsonrpc::{Message, Request, RpcError};
//! # struct Tools;
//! # impl App for Tools {
//! #     type Session = ();
//! #     fn open(&self, _: &Request, _: &http::request::Parts) -> Result<(), RpcError> { Ok(()) }
//! #     async fn handle(&self, _: Context<()>, _: Message) -> Result<Reply, HandlerError> {
//! #         Ok(Reply::Accepted)
//! #     }
//! # }
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let publisher = Publisher::new();
//! // The fleet's keys: the same file on every node (`ID=KEY` lines).
//! let keys = BusKeys::parse(&std::fs::read_to_string("/etc/mcp/bus.keys")?)?;
//! // Inside the tokio runtime: the bus's task runs on it.
//! let bus = RedisBus::builder("redis://127.0.0.1:6379")
//!     .keys(keys)
//!     .start(&publisher)?;
//! let manager = SessionManager::builder(Tools).bus(bus).build()?;
//! # let _ = manager;
//! # Ok(())
//! # }
//! ```
//!
//! Redis must keep what it is told to (`maxmemory-policy noeviction`, its
//! default; the task warns when it is not): a used state's key evicted
//! early would let its state open again. A Redis that refuses a write (out
//! of memory) refuses the retry. The record runs Lua scripts that call
//! `INFO` (Redis 5 or later, where scripts replicate by their effects; a
//! single Redis or a primary with replicas, not Redis Cluster).

mod bus_error;
mod epoch;
mod fleet_rates;
mod keys;
mod link;
mod outbox;
mod parts;
mod record;
mod redis_bus;
mod wire;

pub use bus_error::BusError;
pub use keys::BusKeys;
pub use redis_bus::{RedisBus, RedisBusBuilder};

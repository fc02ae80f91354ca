//! A fleet's bus on Redis (feature `redis`): what one node knows that every
//! node must, shared through the engine the ecosystem shares it through.
//!
//! * **Publications** ([`Publisher`]): each is delivered to this node's
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
//! **When Redis is away** (`link.rs`): the node keeps serving everything
//! that needs no bus. Its listen streams are ended gracefully
//! ([`Reason::Unavailable`](crate::Reason::Unavailable): their clients
//! re-listen and refetch) and new listens are answered 503 with
//! `Retry-After` until the link is back; a single-use state is refused
//! (503, counted as `unavailable`) and stays unused. The task reconnects
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

mod epoch;
mod keys;
mod link;
mod outbox;
mod record;
mod wire;

pub use keys::BusKeys;

use crate::http::input::used::UsedStates;
use crate::http::listen::bus::BusLink;
use crate::http::listen::Publisher;
use arc_swap::{ArcSwap, ArcSwapOption};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

/// A fleet's bus on Redis: carries a [`Publisher`]'s publications to every
/// node and keeps the fleet's record of used single-use `requestState`s.
/// Cheap to clone; give it to [`Builder::bus`](crate::http::Builder::bus).
/// See the [module docs](self).
#[derive(Clone)]
pub struct RedisBus {
    shared: Arc<BusParts>,
    publisher: Publisher,
}

impl fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBus")
            .field("channel", &self.shared.channel)
            .field("up", &self.is_up())
            .finish_non_exhaustive()
    }
}

/// What the bus's handle, its queue, its record and its task share.
struct BusParts {
    /// The channel every node publishes to and listens on.
    channel: String,
    /// The keys frames are sealed and opened with (`keys.rs`, `wire.rs`).
    keys: ArcSwap<keys::FrameKeys>,
    /// The prefix of the record's keys.
    used_prefix: String,
    /// The key of the record's epoch (`epoch.rs`).
    epoch_key: String,
    /// The record's epoch, as last read (0: never read yet): the one this
    /// node seals single-use states in.
    epoch: AtomicU64,
    /// Told by the record when a redemption finds `epoch` behind Redis's:
    /// the task reads it again at once.
    epoch_behind: tokio::sync::Notify,
    /// The commands connection while the link is up (`PUBLISH`, `SET`,
    /// `PING`); `None` while it is down.
    commands: ArcSwapOption<redis::aio::MultiplexedConnection>,
    link: Arc<BusLink>,
    /// Set when a publication of this node could not be handed to Redis:
    /// the task then tells the other nodes, at its first chance.
    lost: AtomicBool,
    timeout: Duration,
}

/// Why a bus could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum BusError {
    /// The URL is not a Redis URL (`redis://HOST:PORT[/DB]`, with an
    /// optional `USER:PASSWORD@`).
    Url(String),
    /// Not called inside a tokio runtime (the bus's task runs on it).
    NoRuntime,
    /// The publisher has a bus already.
    AlreadyAttached,
    /// No keys were given ([`RedisBusBuilder::keys`]): a bus does not
    /// start without them, since any client of the Redis could then speak
    /// for every node.
    NoKeys,
}

impl fmt::Display for BusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BusError::Url(why) => write!(f, "not a Redis URL: {why}"),
            BusError::NoRuntime => f.write_str("the bus starts inside a tokio runtime"),
            BusError::AlreadyAttached => f.write_str("this publisher has a bus already"),
            BusError::NoKeys => f.write_str(
                "the bus needs the fleet's keys (RedisBusBuilder::keys): its frames are \
                 sealed under them",
            ),
        }
    }
}

impl std::error::Error for BusError {}

/// Configures a [`RedisBus`]; from [`RedisBus::builder`].
#[derive(Debug, Clone)]
pub struct RedisBusBuilder {
    url: String,
    keys: Option<BusKeys>,
    namespace: String,
    queue: usize,
    timeout: Duration,
    backoff: (Duration, Duration),
    heartbeat: Duration,
    frame_age: Duration,
}

impl RedisBus {
    /// Starts configuring a bus on the Redis at `url`
    /// (`redis://HOST:PORT`); it starts once given the fleet's keys
    /// ([`RedisBusBuilder::keys`]).
    pub fn builder(url: impl Into<String>) -> RedisBusBuilder {
        RedisBusBuilder {
            url: url.into(),
            keys: None,
            namespace: "sessionreg".into(),
            queue: RedisBusBuilder::DEFAULT_QUEUE,
            timeout: RedisBusBuilder::DEFAULT_TIMEOUT,
            backoff: RedisBusBuilder::DEFAULT_BACKOFF,
            heartbeat: RedisBusBuilder::DEFAULT_HEARTBEAT,
            frame_age: RedisBusBuilder::DEFAULT_FRAME_AGE,
        }
    }

    /// Swaps in new keys (the ones in force are replaced whole): frames
    /// are sealed with the new current key from the next one on, and
    /// opened with any key held. A rotation: first give every node the new
    /// key as one more it opens with, then make it the one that seals,
    /// then drop the old one.
    pub fn set_keys(&self, keys: BusKeys) {
        self.shared
            .keys
            .store(Arc::new(keys::FrameKeys::new(&keys)));
    }

    /// Whether the link is up now: publications travel both ways, listen
    /// streams open, single-use states are recorded.
    pub fn is_up(&self) -> bool {
        self.shared.link.is_up()
    }

    /// The publisher whose publications the bus carries.
    pub fn publisher(&self) -> Publisher {
        self.publisher.clone()
    }

    /// The fleet's record of used single-use states, on this bus.
    pub(crate) fn used_states(&self) -> Arc<dyn UsedStates> {
        Arc::new(record::Record::new(Arc::clone(&self.shared)))
    }
}

impl RedisBusBuilder {
    /// Publications waiting for the bus, at most, by default.
    pub const DEFAULT_QUEUE: usize = 4096;
    /// How long the bus waits for Redis (to connect, to answer), by default.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);
    /// The first and the longest wait between reconnection attempts, by
    /// default (doubling in between, with jitter).
    pub const DEFAULT_BACKOFF: (Duration, Duration) =
        (Duration::from_millis(100), Duration::from_secs(5));
    /// How often an idle link is checked (a `PING` on each connection), by
    /// default: a Redis that went away without closing the connections is
    /// found within about this, plus the timeout.
    pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(1);
    /// How far a frame's sending time may be from the receiving node's
    /// clock, either way, by default: past it the frame is dropped as
    /// stale.
    pub const DEFAULT_FRAME_AGE: Duration = Duration::from_secs(30);
    /// The shortest frame age: the nodes' clocks and the channel's delay
    /// must fit in it.
    pub const MIN_FRAME_AGE: Duration = Duration::from_secs(1);

    /// The fleet's keys, the same on every node (required: [`start`](Self::start)
    /// refuses a bus without them). Every frame is sealed (AES-256-GCM)
    /// under the current one and opened under any one held: what another
    /// client of the same Redis publishes on the channel is dropped and
    /// counted, and it can read neither the principals nor the resources
    /// of the frames it sees.
    pub fn keys(mut self, keys: BusKeys) -> Self {
        self.keys = Some(keys);
        self
    }

    /// The prefix of the bus's channel (`NAMESPACE:publications`) and of
    /// its record's keys (`NAMESPACE:used:...`), so that fleets can share
    /// one Redis (default `sessionreg`). Every node of a fleet uses the
    /// same.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Publications waiting to be handed to Redis, at most (default
    /// [`Self::DEFAULT_QUEUE`], at least 1): past it a publication is
    /// dropped and counted (`sessionreg_bus_dropped_total`), and every
    /// node's listeners are told to refetch.
    pub fn queue(mut self, publications: usize) -> Self {
        self.queue = publications;
        self
    }

    /// How long the bus waits for Redis to connect or to answer (default
    /// [`Self::DEFAULT_TIMEOUT`]): a retry that carries a single-use state
    /// waits at most this for its record.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The first and the longest wait between reconnection attempts
    /// (default [`Self::DEFAULT_BACKOFF`]; doubling in between, each with up
    /// to a quarter more at random, so a fleet does not knock at once).
    pub fn backoff(mut self, first: Duration, longest: Duration) -> Self {
        self.backoff = (first, longest.max(first));
        self
    }

    /// How often the link is checked while it is quiet (default
    /// [`Self::DEFAULT_HEARTBEAT`]).
    pub fn heartbeat(mut self, period: Duration) -> Self {
        self.heartbeat = period;
        self
    }

    /// How far a frame's sending time (its sender's clock) may be from this
    /// node's clock when it arrives, either way (default
    /// [`Self::DEFAULT_FRAME_AGE`], at least [`Self::MIN_FRAME_AGE`]):
    /// past it the frame is dropped (`stale`). A frame recorded from the
    /// channel and published again is dropped by every node that heard it
    /// (by its sequence number); this bounds how long it can still reach a
    /// node that did not.
    pub fn frame_age(mut self, age: Duration) -> Self {
        self.frame_age = age;
        self
    }

    /// Starts the bus for `publisher`, on the current tokio runtime: from
    /// now on its publications are handed to the bus, and its listeners
    /// hear the other nodes'. The link comes up in the background (until
    /// it does, listens are refused with 503); the URL and the keys are
    /// checked here.
    pub fn start(self, publisher: &Publisher) -> Result<RedisBus, BusError> {
        let client =
            redis::Client::open(self.url.as_str()).map_err(|e| BusError::Url(e.to_string()))?;
        let keys = self.keys.as_ref().ok_or(BusError::NoKeys)?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| BusError::NoRuntime)?;
        let shared = Arc::new(BusParts {
            channel: format!("{}:publications", self.namespace),
            keys: ArcSwap::from_pointee(keys::FrameKeys::new(keys)),
            used_prefix: format!("{}:used:", self.namespace),
            epoch_key: format!("{}:epoch", self.namespace),
            epoch: AtomicU64::new(0),
            epoch_behind: tokio::sync::Notify::new(),
            commands: ArcSwapOption::empty(),
            link: Arc::new(BusLink::default()),
            lost: AtomicBool::new(false),
            timeout: self.timeout,
        });
        let (outbox, queue) = outbox::Outbox::new(self.queue.max(1), Arc::clone(&shared));
        if !publisher.attach_bus(Box::new(outbox), Arc::clone(&shared.link)) {
            return Err(BusError::AlreadyAttached);
        }
        let task = link::LinkTask {
            client,
            shared: Arc::clone(&shared),
            publisher: publisher.downgrade(),
            queue,
            sender: wire::Sender::new(),
            replays: wire::Replays::new(self.frame_age.max(Self::MIN_FRAME_AGE)),
            said_rejected: Vec::new(),
            backoff: self.backoff,
            heartbeat: self.heartbeat,
            url: redacted(&self.url),
        };
        runtime.spawn(task.run());
        Ok(RedisBus {
            shared,
            publisher: publisher.clone(),
        })
    }
}

/// The URL as logs show it: without a password.
fn redacted(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://***@{}", &url[at + 1..]),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder(url: &str) -> RedisBusBuilder {
        RedisBus::builder(url).keys(BusKeys::new(1, [7; 32]))
    }

    #[test]
    fn urls_are_checked_and_logged_without_their_password() {
        assert!(matches!(
            builder("http://nope").start(&Publisher::new()),
            Err(BusError::Url(_))
        ));
        assert!(matches!(
            builder("redis://127.0.0.1:1").start(&Publisher::new()),
            Err(BusError::NoRuntime)
        ));
        assert_eq!(
            redacted("redis://user:secret@10.0.0.1:6379/0"),
            "redis://***@10.0.0.1:6379/0"
        );
        assert_eq!(redacted("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    }

    #[tokio::test]
    async fn a_publisher_takes_one_bus() {
        let publisher = Publisher::new();
        let bus = builder("redis://127.0.0.1:1").start(&publisher).unwrap();
        assert!(!bus.is_up(), "down until it connects");
        assert!(!publisher.bus_ready(), "no listener opens before");
        assert!(matches!(
            builder("redis://127.0.0.1:1").start(&publisher),
            Err(BusError::AlreadyAttached)
        ));
    }

    #[tokio::test]
    async fn a_bus_without_keys_does_not_start() {
        let publisher = Publisher::new();
        assert!(matches!(
            RedisBus::builder("redis://127.0.0.1:1").start(&publisher),
            Err(BusError::NoKeys)
        ));
        assert!(publisher.bus_link().is_none(), "nothing attached");
    }
}

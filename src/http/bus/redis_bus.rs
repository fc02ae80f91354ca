//! The bus's handle and how it starts ([`RedisBus`], [`RedisBusBuilder`]).

use super::parts::BusParts;
use super::{fleet_rates, keys, link, outbox, record, wire, BusError, BusKeys};
use crate::http::access::rates::FleetRates;
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
/// See the [module docs](super).
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

    /// Where the fleet decides its rate limits, on this bus.
    pub(crate) fn fleet_rates(&self) -> Arc<dyn FleetRates> {
        Arc::new(fleet_rates::BusRates::new(Arc::clone(&self.shared)))
    }

    /// The fleet's nodes as this node last counted them (each says it is
    /// alive every heartbeat; 0 before the link was ever up): each node's
    /// share of a rate limit while Redis cannot decide is the limit
    /// divided by it (`sessionreg_bus_nodes`).
    pub fn nodes(&self) -> u32 {
        u32::try_from(self.shared.link.nodes()).unwrap_or(u32::MAX)
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
            rate_prefix: format!("{}:rate:", self.namespace),
            nodes_key: format!("{}:nodes", self.namespace),
            member: random_member(),
            decide_sha: std::sync::OnceLock::new(),
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

/// A node's member of the fleet's set of nodes: 16 random hex digits.
fn random_member() -> String {
    let mut bytes = [0u8; 8];
    crate::secret::fill_random(&mut bytes);
    format!("{:016x}", u64::from_be_bytes(bytes))
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

//! Building a registry: [`Registry::builder`], the [`Builder`] whose
//! settings are validated once, in [`Builder::build`], and the errors it
//! refuses a configuration with.

use crate::activity::MAX_TIMEOUT;
use crate::clock::{Clock, IdleClock, ManualClock};
use crate::config::{Config, OnClose, DEFAULT_CAPACITY, MAX_CAPACITY, MAX_SHARDS};
use crate::id::SessionId;
use crate::reason::Reason;
use crate::registry::Registry;
use crate::slab::free_list::TAGS;
use crate::slab::lifecycle::GENERATIONS;
use crate::slab::storage::Storage;
use crate::wrap::Wrap;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

impl<S: Send + Sync + 'static> Registry<S> {
    /// A builder, to set capacity, idle timeout and close callback.
    ///
    /// ```
    /// use std::time::Duration;
    /// use sessionreg::Registry;
    ///
    /// let registry = Registry::<u32>::builder()
    ///     .capacity(10_000)
    ///     .idle_timeout(Duration::from_secs(30 * 60))
    ///     .on_close(|id, value, reason| println!("{id} ({value}) ended: {reason}"))
    ///     .build()
    ///     .expect("valid configuration");
    /// assert_eq!(registry.capacity(), 10_000);
    /// ```
    pub fn builder() -> Builder<S> {
        Builder::new()
    }
}

/// Builds a [`Registry`]; see [`Registry::builder`]. (The HTTP layer's
/// `sessionreg::http::Builder` builds a `SessionManager`: the same word for
/// the same role one layer up, one of the crate's two deliberate pairs of
/// names.)
#[must_use]
pub struct Builder<S> {
    capacity: usize,
    idle_timeout: Option<Duration>,
    shards: Option<usize>,
    node: u8,
    clock: Option<ManualClock>,
    on_close: Option<OnClose<S>>,
    widths: Option<(u32, u32)>,
    outcomes: bool,
    _values: PhantomData<fn(S)>,
}

impl<S: Send + Sync + 'static> Builder<S> {
    fn new() -> Builder<S> {
        Builder {
            capacity: DEFAULT_CAPACITY,
            idle_timeout: None,
            shards: None,
            node: 0,
            clock: None,
            on_close: None,
            widths: None,
            outcomes: false,
            _values: PhantomData,
        }
    }

    /// The maximum number of live sessions (default [`DEFAULT_CAPACITY`]). At
    /// the maximum, inserts fail at once.
    ///
    /// Memory grows with use, in pages, up to this many slots; a session that
    /// has ended keeps its slot until the last handle to it is dropped.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Ends sessions that had nothing in flight for this long (by
    /// [`Registry::reap_idle`], or on lookup). Default: never.
    ///
    /// Run [`reap_idle`](Registry::reap_idle) periodically: no hot path
    /// reads the clock, so a session's idle time starts at the first sweep
    /// after its last activity (see there), and a session ends between its
    /// timeout and its timeout plus two sweep periods after that activity.
    ///
    /// Timeouts count whole milliseconds: a timeout with a fraction of a
    /// millisecond is rounded up (a positive timeout never becomes zero),
    /// and `Duration::ZERO` means "idle as soon as nothing is in flight".
    ///
    /// A session that is inserted and then never used (no request of it
    /// ends, it is never touched) starts its idle time at the first
    /// [`Registry::reap_idle`] that sees it: inserts read no clock. A session
    /// is never ended before it has been idle for the timeout.
    ///
    /// Time is read from a coarse monotonic clock: expect a few milliseconds
    /// of slack.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// How many shards (each with its own free list) spread concurrent
    /// inserts; a power of two. Default: twice the available parallelism,
    /// rounded up to a power of two.
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The node id written into every id (default 0): the first two hex
    /// digits of an id's text form, so a load balancer can route each
    /// request to the node that owns its session. Ids of another node are
    /// unknown here. Any `u8`.
    pub fn node_id(mut self, node: u8) -> Self {
        self.node = node;
        self
    }

    /// Reads idle time from `clock` instead of the system's monotonic clock,
    /// so tests can move time by hand.
    pub fn manual_clock(mut self, clock: &ManualClock) -> Self {
        self.clock = Some(clock.clone());
        self
    }

    /// Called exactly once per session, by the caller that ended it, with the
    /// reason it ended for. It runs on that caller's thread before
    /// `terminate` returns, so keep it short (hand slow work to a task).
    pub fn on_close(mut self, f: impl Fn(&SessionId, &S, Reason) + Send + Sync + 'static) -> Self {
        self.on_close = Some(Box::new(f));
        self
    }

    /// **For tests only**: narrows the slot generation to `generation_bits`
    /// bits (of 30) and the free-list tag to `tag_bits` (of 37), so that
    /// wrap-around, which takes 2^30 reuses of one slot or 2^37 updates of
    /// one free list in production, is reached within a few operations.
    /// The loom suite and the stress tests use it to check what happens at
    /// each bound (see the design notes, "Wrap-around"). Ids then repeat
    /// after 2^`generation_bits` reuses of a slot: never use it in
    /// production. Out-of-range widths fail the build with
    /// [`BuildError::Widths`]. Exists only for this crate's own tests and
    /// loom models (feature `internals`, or the loom build).
    #[cfg(any(test, feature = "internals", sessionreg_loom))]
    #[doc(hidden)]
    pub fn test_widths(mut self, generation_bits: u32, tag_bits: u32) -> Self {
        self.widths = Some((generation_bits, tag_bits));
        self
    }

    /// Counts the entries' own ends by kind beside the registry's counters
    /// (a task store's: `tasks.rs`).
    pub(crate) fn count_outcomes(mut self) -> Self {
        self.outcomes = true;
        self
    }

    /// Builds the registry, or says what is wrong with the configuration.
    pub fn build(self) -> Result<Registry<S>, BuildError> {
        if self.capacity == 0 {
            return Err(BuildError::ZeroCapacity);
        }
        if self.capacity > MAX_CAPACITY {
            return Err(BuildError::CapacityTooLarge(self.capacity));
        }
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
        let shards = match self.shards {
            Some(n) if n == 0 || !n.is_power_of_two() || n > MAX_SHARDS => {
                return Err(BuildError::Shards(n))
            }
            Some(n) => n,
            None => (2 * parallelism).next_power_of_two().min(MAX_SHARDS),
        };
        let idle_timeout_ms = match self.idle_timeout {
            Some(t) if t > MAX_TIMEOUT => return Err(BuildError::IdleTimeoutTooLong(t)),
            // Whole milliseconds, rounded up: 0.5 ms is 1 ms, not "at once".
            Some(t) => Some(t.as_nanos().div_ceil(1_000_000) as u64),
            None => None,
        };
        let (generations, tags) = match self.widths {
            None => (GENERATIONS, TAGS),
            Some((g, t))
                if (1..=GENERATIONS.max().count_ones()).contains(&g)
                    && (1..=TAGS.max().count_ones()).contains(&t) =>
            {
                (Wrap::bits(g), Wrap::bits(t))
            }
            Some((g, t)) => return Err(BuildError::Widths(g, t)),
        };
        let config = Config {
            capacity: self.capacity,
            shards,
            stripes: (4 * parallelism).clamp(8, 256),
            outcomes: self.outcomes,
            node: u64::from(self.node),
            clock: IdleClock::new(
                self.clock.map_or_else(Clock::coarse, Clock::Manual),
                idle_timeout_ms,
            ),
            generations,
            tags,
        };
        Ok(Registry::from_parts(
            Storage::new(config),
            self.on_close,
            self.capacity,
        ))
    }
}

impl<S> fmt::Debug for Builder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("capacity", &self.capacity)
            .field("idle_timeout", &self.idle_timeout)
            .field("shards", &self.shards)
            .field("node", &self.node)
            .field("on_close", &self.on_close.is_some())
            .finish()
    }
}

/// What is wrong with a registry's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// A capacity of zero would refuse every session.
    ZeroCapacity,
    /// More sessions than an id can address.
    CapacityTooLarge(usize),
    /// The shard count is not a power of two between 1 and [`MAX_SHARDS`].
    Shards(usize),
    /// The idle timeout is longer than the activity clock can measure.
    IdleTimeoutTooLong(Duration),
    /// A per-owner share of zero (`HandlesBuilder::owner_share`) would
    /// refuse every owner.
    ZeroShare,
    /// `Builder::test_widths` (feature `internals`) asked for a generation or tag width of zero
    /// or wider than its field (generation, tag).
    #[doc(hidden)]
    Widths(u32, u32),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroCapacity => f.write_str("capacity must be at least 1"),
            BuildError::CapacityTooLarge(n) => {
                write!(f, "capacity {n} is over the maximum of {MAX_CAPACITY}")
            }
            BuildError::Shards(n) => write!(
                f,
                "shards must be a power of two from 1 to {MAX_SHARDS}, not {n}"
            ),
            BuildError::IdleTimeoutTooLong(t) => write!(
                f,
                "idle timeout {t:?} is over the maximum of {MAX_TIMEOUT:?}"
            ),
            BuildError::ZeroShare => f.write_str("a share must be at least 1"),
            BuildError::Widths(g, t) => write!(
                f,
                "test widths of {g} generation bits and {t} tag bits: they must be 1..={} and 1..={}",
                GENERATIONS.max().count_ones(),
                TAGS.max().count_ones()
            ),
        }
    }
}

impl std::error::Error for BuildError {}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    fn build(b: Builder<()>) -> Result<(), String> {
        b.build().map(drop).map_err(|e| e.to_string())
    }

    #[test]
    fn bad_configurations_are_refused_with_a_reason() {
        let err = build(Registry::builder().capacity(0)).unwrap_err();
        assert!(err.contains("at least 1"), "{err}");
        let err = build(Registry::builder().capacity(MAX_CAPACITY + 1)).unwrap_err();
        assert!(err.contains("maximum"), "{err}");
        for n in [0, 3, 512] {
            let err = build(Registry::builder().shards(n)).unwrap_err();
            assert!(err.contains("power of two"), "{err}");
        }
        let err =
            build(Registry::builder().idle_timeout(Duration::from_secs(u64::MAX))).unwrap_err();
        assert!(err.contains("idle timeout"), "{err}");
        for (g, t) in [(0, 4), (31, 4), (4, 0), (4, 38)] {
            let err = build(Registry::builder().test_widths(g, t)).unwrap_err();
            assert!(err.contains("test widths"), "{err}");
        }
    }

    #[test]
    fn edges_are_accepted() {
        build(Registry::builder().capacity(1).shards(MAX_SHARDS)).unwrap();
        build(Registry::builder().capacity(MAX_CAPACITY).shards(1)).unwrap();
        build(
            Registry::builder()
                .node_id(255)
                .idle_timeout(Duration::ZERO),
        )
        .unwrap();
    }
}

//! Where the registry reads the time for idle timeouts.
//!
//! No hot path reads the clock. An insert and a request's end mark the
//! session's stamp *rough* (see `activity.rs`) instead of reading it; the
//! reaper's sweep replaces a rough stamp with a reading it takes after
//! seeing it rough, and a touch reads the clock. A lookup decides expiry
//! against the latest reading any of those took (`recent_ms`), which is
//! never later than the time now, first with one comparison of the
//! session's word with the number that reading gives (`recent_word`, see
//! `activity.rs`). Why that keeps every idle decision from being early, and
//! how late one can be, is in the design notes ("Idle time").

use crate::activity::{self, MAX_STAMP, NONE_RECENT};
use crate::sync::{Arc, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::time::Duration;

/// Milliseconds since the registry was built.
pub(crate) enum Clock {
    /// The coarse monotonic clock (`CLOCK_MONOTONIC_COARSE` on Linux): read
    /// in user space, without a system call, with a resolution of a few
    /// milliseconds, plenty for idle timeouts.
    Coarse {
        epoch: coarsetime::Instant,
        /// The latest reading taken (by a sweep or a touch): what lookups
        /// decide with. Written at most once per reading that moved it, so
        /// on its own cache line it stays shared by the lookups that load it.
        latest: CachePadded<AtomicU64>,
    },
    /// Time that moves only when a test says so.
    Manual(ManualClock),
}

impl Clock {
    pub(crate) fn coarse() -> Clock {
        Clock::Coarse {
            epoch: coarsetime::Instant::now_without_cache_update(),
            latest: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// The time now, read from the clock.
    #[inline]
    pub(crate) fn now_ms(&self) -> u64 {
        match self {
            Clock::Coarse { epoch, latest } => {
                // `now_without_cache_update`: `coarsetime::Instant::now` also
                // stores the time into one process-wide static for its
                // `recent()`, which nothing here reads; every thread reading
                // the clock would write that one cache line, which threads
                // then contend for.
                let ms = coarsetime::Instant::now_without_cache_update()
                    .duration_since(*epoch)
                    .as_millis()
                    .min(MAX_STAMP);
                // Relaxed: `latest` orders nothing. Whatever value a load of
                // it returns was read from the clock before it was stored,
                // so it is never later than the time of the load; fetch_max
                // keeps it from moving back when two readers race.
                if ms > latest.load(Ordering::Relaxed) {
                    latest.fetch_max(ms, Ordering::Relaxed);
                }
                ms
            }
            Clock::Manual(manual) => manual.read().min(MAX_STAMP),
        }
    }

    /// The time a lookup decides expiry with: the latest reading taken (the
    /// system clock; no earlier than the last sweep's), or the time now (a
    /// manual clock). Never later than the time now.
    #[inline]
    pub(crate) fn recent_ms(&self) -> u64 {
        match self {
            // Relaxed: see `now_ms`.
            Clock::Coarse { latest, .. } => latest.load(Ordering::Relaxed),
            Clock::Manual(manual) => manual.read().min(MAX_STAMP),
        }
    }

    /// The stamp of an activity on a hot path (an insert, a request's end):
    /// `None` for a rough one (the system clock: no read), or the time now
    /// (a manual clock, so that tests see idle times to the millisecond,
    /// unless it was made to stamp roughly as production does).
    #[inline]
    pub(crate) fn stamp(&self) -> Option<u64> {
        match self {
            Clock::Manual(manual) if !manual.rough_stamps => Some(self.now_ms()),
            _ => None,
        }
    }
}

/// A registry's clock together with its idle timeout: what the registry
/// reads for each kind of activity, and that a registry whose sessions never
/// expire reads no clock at all.
pub(crate) struct IdleClock {
    clock: Clock,
    timeout_ms: Option<u64>,
    /// What a lookup compares a session's word with first
    /// ([`activity::recent_above`] of the latest reading, the system clock
    /// with a timeout), or [`NONE_RECENT`] (a manual clock, whose time moves
    /// without a reading; no timeout). Written at most once per reading that
    /// moved it, on a line of its own, as `Clock::Coarse::latest`.
    recent: CachePadded<AtomicU64>,
}

impl IdleClock {
    pub(crate) fn new(clock: Clock, timeout_ms: Option<u64>) -> IdleClock {
        let recent = match (&clock, timeout_ms) {
            (Clock::Coarse { .. }, Some(timeout)) => activity::recent_above(0, timeout),
            _ => NONE_RECENT,
        };
        IdleClock {
            clock,
            timeout_ms,
            recent: CachePadded::new(AtomicU64::new(recent)),
        }
    }

    /// The idle timeout in milliseconds, if sessions expire.
    #[inline]
    pub(crate) fn timeout_ms(&self) -> Option<u64> {
        self.timeout_ms
    }

    /// The time now, read from the clock (a sweep's reading, a stamp made
    /// exact), kept for the lookups that follow.
    pub(crate) fn now_ms(&self) -> u64 {
        let ms = self.clock.now_ms();
        if let (Clock::Coarse { .. }, Some(timeout)) = (&self.clock, self.timeout_ms) {
            let word = activity::recent_above(ms, timeout);
            // Relaxed, and never moved back, as `latest` (see
            // `Clock::now_ms`): a lookup that loads an older word compares
            // with an earlier reading, still no later than now.
            if word > self.recent.load(Ordering::Relaxed) {
                self.recent.fetch_max(word, Ordering::Relaxed);
            }
        }
        ms
    }

    /// The time a lookup decides expiry with (see [`Clock::recent_ms`]).
    #[inline]
    pub(crate) fn recent_ms(&self) -> u64 {
        self.clock.recent_ms()
    }

    /// What a lookup compares a session's word with first (see
    /// [`Activity::check`](crate::activity::Activity::check)).
    #[inline]
    pub(crate) fn recent_word(&self) -> u64 {
        // Relaxed: see `now_ms`.
        self.recent.load(Ordering::Relaxed)
    }

    /// The time for an exact activity stamp (a touch), or 0 when sessions
    /// never expire (so registries without an idle timeout never read the
    /// clock).
    #[inline]
    pub(crate) fn exact_stamp(&self) -> u64 {
        match self.timeout_ms {
            Some(_) => self.now_ms(),
            None => 0,
        }
    }

    /// The stamp of an activity on a hot path, an insert or a request's end
    /// (see [`Clock::stamp`]): `None` when rough; 0 without an idle timeout
    /// (never read).
    #[inline]
    pub(crate) fn stamp(&self) -> Option<u64> {
        match self.timeout_ms {
            Some(_) => self.clock.stamp(),
            None => Some(0),
        }
    }
}

/// A clock for tests of idle timeouts: it starts at zero and moves only by
/// [`advance`](ManualClock::advance). Give it to
/// [`Builder::manual_clock`](crate::Builder::manual_clock).
///
/// By default it stamps every activity (an insert, a request's end) with
/// the time it happened, so tests see idle times to the millisecond.
/// [`with_rough_stamps`](ManualClock::with_rough_stamps) makes it behave as
/// the system clock does in production, where neither reads the clock.
///
/// ```
/// use std::time::Duration;
/// use sessionreg::{ManualClock, Registry};
///
/// let clock = ManualClock::new();
/// let registry = Registry::builder()
///     .idle_timeout(Duration::from_secs(60))
///     .manual_clock(&clock)
///     .build()
///     .unwrap();
/// let id = registry.insert(()).unwrap();
/// clock.advance(Duration::from_secs(59));
/// assert_eq!(registry.reap_idle(), 0);
/// clock.advance(Duration::from_secs(1));
/// assert_eq!(registry.reap_idle(), 1);
/// assert!(registry.get(&id).is_none());
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    ms: Arc<AtomicU64>,
    rough_stamps: bool,
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// The same clock (it moves with this one), stamping activity the way
    /// the system clock does in production: neither an insert nor a
    /// request's end reads the clock, so the session's idle time starts
    /// when it is touched or when a sweep first sees it after its last
    /// activity, whichever comes first. Never earlier than that activity: a
    /// session is never found idle early, and it may live up to two sweep
    /// periods longer than the timeout (one to start its idle time, one to
    /// see it expired).
    ///
    /// ```
    /// use std::time::Duration;
    /// use sessionreg::{ManualClock, Registry};
    ///
    /// let clock = ManualClock::new();
    /// let registry = Registry::builder()
    ///     .idle_timeout(Duration::from_secs(60))
    ///     .manual_clock(&clock.with_rough_stamps())
    ///     .build()
    ///     .unwrap();
    /// let id = registry.insert(()).unwrap();
    /// clock.advance(Duration::from_secs(120));
    /// // The first sweep that sees the session starts its idle time.
    /// assert_eq!(registry.reap_idle(), 0);
    /// assert!(registry.get(&id).is_some());
    /// clock.advance(Duration::from_secs(60));
    /// assert_eq!(registry.reap_idle(), 1);
    /// ```
    pub fn with_rough_stamps(&self) -> ManualClock {
        ManualClock {
            ms: Arc::clone(&self.ms),
            rough_stamps: true,
        }
    }

    /// Moves the clock forward (in whole milliseconds).
    pub fn advance(&self, by: Duration) {
        // Relaxed: the clock orders nothing; each read just needs some value
        // this clock has had.
        self.ms.fetch_add(by.as_millis() as u64, Ordering::Relaxed);
    }

    fn read(&self) -> u64 {
        self.ms.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    /// Reading the clock must not write coarsetime's process-wide cache of
    /// the last reading (every thread would write that one cache line).
    #[test]
    fn reading_the_clock_writes_nothing_shared() {
        coarsetime::Instant::update();
        let cached = coarsetime::Instant::recent();
        let clock = Clock::coarse();
        // Past the coarse clock's resolution (a tick is 1-10 ms).
        std::thread::sleep(Duration::from_millis(30));
        let read = clock.now_ms();
        // Coarse readings lag by up to a tick, so not necessarily 30.
        assert!(read >= 20, "the clock did not move: {read} ms");
        assert_eq!(
            coarsetime::Instant::recent(),
            cached,
            "reading the clock updated coarsetime's shared cache"
        );
    }

    /// Lookups decide with the latest reading a sweep or a touch took:
    /// nothing but a reading moves it, and it is never ahead of the clock.
    #[test]
    fn lookups_see_the_latest_reading_and_never_a_later_time() {
        let clock = Clock::coarse();
        assert_eq!(clock.recent_ms(), 0);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(clock.recent_ms(), 0, "only a reading moves it");
        let read = clock.now_ms();
        assert!(read >= 20);
        assert_eq!(clock.recent_ms(), read);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(clock.recent_ms(), read);
        assert!(clock.recent_ms() < clock.now_ms());
        assert_eq!(clock.stamp(), None, "hot paths read no clock");
    }

    /// The number a lookup compares a session's word with first follows
    /// the readings, as `recent_ms` does; with a manual clock, whose time
    /// moves without a reading, or without a timeout, no word is above it.
    #[test]
    fn the_lookups_first_comparison_follows_the_readings() {
        let idle = IdleClock::new(Clock::coarse(), Some(10));
        assert_eq!(idle.recent_word(), activity::recent_above(0, 10));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(idle.recent_word(), activity::recent_above(0, 10));
        let read = idle.now_ms();
        assert!(read >= 20);
        assert_eq!(idle.recent_word(), activity::recent_above(read, 10));
        assert_eq!(idle.recent_ms(), read);
        assert!(activity::recent_above(read, 10) > activity::recent_above(0, 10));
        let manual = IdleClock::new(Clock::Manual(ManualClock::new()), Some(10));
        assert_eq!(manual.recent_word(), NONE_RECENT);
        assert_eq!(manual.now_ms(), 0);
        assert_eq!(manual.recent_word(), NONE_RECENT);
        let never = IdleClock::new(Clock::coarse(), None);
        assert_eq!(never.recent_word(), NONE_RECENT);
    }
}

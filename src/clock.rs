//! Where the registry reads the time for idle timeouts.
//!
//! Reads are kept off the hot paths: a request's end, a touch and the
//! reaper's sweep read the clock (their stamps and decisions are exact, to
//! the clock's resolution); an insert does not: it marks the new session's
//! stamp *rough* (see `activity.rs`), and a lookup reads the clock only for
//! a session that could be idle (nothing in flight, an exact stamp). How
//! that keeps every idle decision from being early is in the design notes
//! ("Idle time").

use crate::activity::MAX_STAMP;
use crate::sync::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Milliseconds since the registry was built.
pub(crate) enum Clock {
    /// The coarse monotonic clock (`CLOCK_MONOTONIC_COARSE` on Linux): a few
    /// nanoseconds a read and a resolution of a few milliseconds, plenty for
    /// idle timeouts.
    Coarse(coarsetime::Instant),
    /// Time that moves only when a test says so.
    Manual(ManualClock),
}

impl Clock {
    pub(crate) fn coarse() -> Clock {
        Clock::Coarse(coarsetime::Instant::now_without_cache_update())
    }

    /// The time now.
    #[inline]
    pub(crate) fn now_ms(&self) -> u64 {
        // `now_without_cache_update`: `coarsetime::Instant::now` also stores
        // the time into one process-wide static for its `recent()`, which
        // nothing here reads; every thread reading the clock would write
        // that one cache line (with an idle timeout, that was 27 ns per
        // session's life on two threads instead of 21).
        let ms = match self {
            Clock::Coarse(epoch) => coarsetime::Instant::now_without_cache_update()
                .duration_since(*epoch)
                .as_millis(),
            Clock::Manual(manual) => manual.read(),
        };
        ms.min(MAX_STAMP)
    }

    /// The stamp of a new session: `None` for a rough one (the system
    /// clock: inserts do not read it), or the time now (a manual clock, so
    /// that tests see idle times to the millisecond, unless it was made to
    /// stamp inserts roughly as production does).
    #[inline]
    pub(crate) fn insert_stamp(&self) -> Option<u64> {
        match self {
            Clock::Manual(manual) if !manual.rough_inserts => Some(self.now_ms()),
            _ => None,
        }
    }
}

/// A clock for tests of idle timeouts: it starts at zero and moves only by
/// [`advance`](ManualClock::advance). Give it to
/// [`Builder::manual_clock`](crate::Builder::manual_clock).
///
/// By default it stamps new sessions with the time they were inserted, so
/// tests see idle times to the millisecond.
/// [`with_rough_inserts`](ManualClock::with_rough_inserts) makes it behave
/// as the system clock does in production, where an insert reads no clock.
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
    rough_inserts: bool,
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// The same clock (it moves with this one), stamping new sessions the
    /// way the system clock does in production: an insert reads no clock,
    /// so the session's idle time starts when a request of it ends, it is
    /// touched, or a sweep first sees it, whichever comes first. Never
    /// earlier than the insert: a session is never found idle early, and a
    /// session nobody uses may live up to one sweep longer than the timeout.
    ///
    /// ```
    /// use std::time::Duration;
    /// use sessionreg::{ManualClock, Registry};
    ///
    /// let clock = ManualClock::new();
    /// let registry = Registry::builder()
    ///     .idle_timeout(Duration::from_secs(60))
    ///     .manual_clock(&clock.with_rough_inserts())
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
    pub fn with_rough_inserts(&self) -> ManualClock {
        ManualClock {
            ms: Arc::clone(&self.ms),
            rough_inserts: true,
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
}

//! Where the registry reads the time for idle timeouts.

use crate::activity::MAX_STAMP;
use crate::sync::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Milliseconds since the registry was built.
#[derive(Clone)]
pub(crate) enum Clock {
    /// The coarse monotonic clock (`CLOCK_MONOTONIC_COARSE` on Linux): a few
    /// nanoseconds a read and a resolution of a few milliseconds, plenty for
    /// idle timeouts, and cheap enough to read on every lookup.
    Coarse(coarsetime::Instant),
    /// Time that moves only when a test says so.
    Manual(ManualClock),
}

impl Clock {
    pub(crate) fn coarse() -> Clock {
        Clock::Coarse(coarsetime::Instant::now_without_cache_update())
    }

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
            Clock::Manual(manual) => manual.0.load(Ordering::Relaxed),
        };
        ms.min(MAX_STAMP)
    }
}

/// A clock for tests of idle timeouts: it starts at zero and moves only by
/// [`advance`](ManualClock::advance). Give it to
/// [`Builder::manual_clock`](crate::Builder::manual_clock).
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
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> ManualClock {
        ManualClock(Arc::new(AtomicU64::new(0)))
    }

    /// Moves the clock forward (in whole milliseconds).
    pub fn advance(&self, by: Duration) {
        // Relaxed: the clock orders nothing; each read just needs some value
        // this clock has had.
        self.0.fetch_add(by.as_millis() as u64, Ordering::Relaxed);
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

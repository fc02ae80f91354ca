//! One histogram of durations, lock-free: a count per bucket and the sum,
//! each an atomic that an observation adds to (two `fetch_add`s and a scan
//! of the bounds), read by a scrape without stopping anyone.
//!
//! The count is the buckets' sum, so a scrape never shows more
//! observations than its buckets hold; a scrape that races observations
//! may see an observation's bucket without its share of the sum (or the
//! other way round), a moment's difference that the next scrape settles.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The upper bounds (seconds, inclusive) of the MCP semantic conventions'
/// `mcp.server.operation.duration`.
pub(crate) const OPERATION_BOUNDS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The upper bounds (seconds) of `mcp.server.session.duration`: the
/// conventions' (which stop at five minutes), then on to a day, since a
/// session lives for hours.
pub(crate) const SESSION_BOUNDS: [f64; 21] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
    3600.0, 7200.0, 14400.0, 28800.0, 86400.0,
];

/// [`OPERATION_BOUNDS`] in nanoseconds, to compare without a float
/// conversion per observation.
const OPERATION_NANOS: [u64; 14] = nanos(OPERATION_BOUNDS);
/// [`SESSION_BOUNDS`] in nanoseconds.
const SESSION_NANOS: [u64; 21] = nanos(SESSION_BOUNDS);

const fn nanos<const N: usize>(seconds: [f64; N]) -> [u64; N] {
    let mut out = [0; N];
    let mut i = 0;
    while i < N {
        out[i] = (seconds[i] * 1e9) as u64;
        i += 1;
    }
    out
}

/// Durations counted in buckets of fixed bounds.
pub(crate) struct DurationHistogram {
    bounds: &'static [f64],
    bounds_nanos: &'static [u64],
    /// One count per bound, then the one past the last (`+Inf`).
    counts: Box<[AtomicU64]>,
    sum_nanos: AtomicU64,
}

/// What a scrape reads of a histogram.
pub(crate) struct HistogramSnapshot {
    pub(crate) sum_seconds: f64,
    pub(crate) count: u64,
    /// Each bucket's own count (not cumulative), the last one `+Inf`'s.
    pub(crate) buckets: Vec<(f64, u64)>,
}

impl DurationHistogram {
    /// One with [`OPERATION_BOUNDS`].
    pub(crate) fn operation() -> DurationHistogram {
        DurationHistogram::new(&OPERATION_BOUNDS, &OPERATION_NANOS)
    }

    /// One with [`SESSION_BOUNDS`].
    pub(crate) fn session() -> DurationHistogram {
        DurationHistogram::new(&SESSION_BOUNDS, &SESSION_NANOS)
    }

    fn new(bounds: &'static [f64], bounds_nanos: &'static [u64]) -> DurationHistogram {
        DurationHistogram {
            bounds,
            bounds_nanos,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
        }
    }

    /// Counts one duration.
    pub(crate) fn observe(&self, duration: Duration) {
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let bucket = self
            .bounds_nanos
            .iter()
            .position(|bound| nanos <= *bound)
            .unwrap_or(self.bounds_nanos.len());
        // Relaxed: counters, read by a scrape that promises no order
        // between them (see the module's note).
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The counts so far.
    pub(crate) fn snapshot(&self) -> HistogramSnapshot {
        let buckets: Vec<(f64, u64)> = self
            .bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(self.counts.iter().map(|c| c.load(Ordering::Relaxed)))
            .collect();
        HistogramSnapshot {
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            count: buckets.iter().map(|(_, n)| n).sum(),
            buckets,
        }
    }

    /// Whether nothing was observed yet (a series shown only once it has
    /// a value).
    pub(crate) fn is_empty(&self) -> bool {
        self.counts.iter().all(|c| c.load(Ordering::Relaxed) == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_lands_in_the_first_bucket_whose_bound_holds_it() {
        let h = DurationHistogram::operation();
        h.observe(Duration::from_millis(10)); // on the bound: le is inclusive
        h.observe(Duration::from_micros(300));
        h.observe(Duration::from_millis(11));
        h.observe(Duration::from_secs(301));
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.buckets[0], (0.01, 2));
        assert_eq!(s.buckets[1], (0.02, 1));
        assert_eq!(s.buckets.last(), Some(&(f64::INFINITY, 1)));
        assert!((s.sum_seconds - 301.0213).abs() < 1e-9, "{}", s.sum_seconds);
    }

    #[test]
    fn the_session_buckets_reach_a_day() {
        assert_eq!(SESSION_BOUNDS[..14], OPERATION_BOUNDS);
        assert_eq!(SESSION_BOUNDS.last(), Some(&86400.0));
        let h = DurationHistogram::session();
        h.observe(Duration::from_secs(2 * 3600));
        assert_eq!(h.snapshot().buckets[SESSION_BOUNDS.len() - 4], (7200.0, 1));
    }
}

//! The counters as production runs them: per-thread stripes bumped with a
//! plain load and Release store, summed by `len()` and `stats()` while
//! other threads count on (`stats.rs`). While sessions come and go, the
//! live figure is never above the capacity and never below the number of
//! sessions live for the whole read: one inserted before it and terminated
//! after it is always counted.
#![cfg(sessionreg_loom)]

use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_clean, model, race_point, registry, wait_for, Log};
use sessionreg::Reason;
use std::sync::atomic::Ordering::Release;

/// A stable session, live from before the reads to after them, while one
/// thread inserts and ends a session of its own (capacity 2) and another
/// reads `len()` and `stats()`: every read sees between 1 and 2 live
/// sessions, and a snapshot never counts more ended than created. Fails if
/// `Counters::read` sums creations before terminations: it can then count
/// the churning session's end but not its start, and report the stable
/// session as gone.
///
/// The reads run on a thread of their own, not the model's main thread:
/// loom lets a load return an older store only if the loading thread has
/// not yielded since it saw that store, and the main thread yields at
/// [`race_point`] in the second pass; its DPOR misses the reverse order (a
/// counter bump is a load and a store of the same atomic, which hides the
/// store's race with another thread's earlier load: tokio-rs/loom#166).
#[test]
fn live_counts_stay_between_the_stable_sessions_and_the_capacity() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(registry(&log, 2, false));
        let stable = registry.insert(log.value()).unwrap();
        let value = log.value();
        let read = Arc::new(AtomicBool::new(false));

        let churner = {
            let (registry, read) = (registry.clone(), read.clone());
            thread::spawn(move || {
                let id = registry.insert(value).unwrap();
                assert!(registry.terminate(&id, Reason::Deleted).is_won());
                // The stable session ends only after the reads.
                wait_for(&read);
                assert!(registry.terminate(&stable, Reason::Deleted).is_won());
            })
        };
        race_point();
        let reader = {
            let (registry, read) = (registry.clone(), read.clone());
            thread::spawn(move || {
                let len = registry.len();
                let stats = registry.stats();
                read.store(true, Release);
                (len, stats)
            })
        };
        let (len, stats) = reader.join().unwrap();
        churner.join().unwrap();

        assert!(
            (1..=2).contains(&len),
            "len() = {len} (capacity 2, 1 stable)"
        );
        assert!((1..=2).contains(&stats.live), "{stats:?}");
        assert!(stats.created >= stats.terminated_total(), "{stats:?}");
        assert!(stats.created >= 1, "{stats:?}");
        assert_eq!(registry.len(), 0);
        assert_clean(&registry, &log);
    });
}

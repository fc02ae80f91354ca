//! The registry dropped while handles are still held elsewhere (the orphan
//! protocol of `slab/storage.rs`): every value dropped exactly once, by whoever
//! lets go last, and the shared storage freed exactly once, after both.
//!
//! A use after free shows up as loom panicking on a garbage object index
//! (the freed storage's atomics), or as a poisoned or twice-dropped
//! [`Tracked`](loom_tests::Tracked) value; a leak or double free of the
//! storage as [`StorageWatch`] failing.
//!
//! Both models found a use after free in an earlier core (66e6aac fixed it):
//! the handle's last `release` could come just before the registry's
//! `orphan_all` reached the slot, which then saw no reference left, counted
//! nothing pending and freed the storage while the handle's thread was still
//! dropping the value and pushing the slot on the free list. Now a slot
//! being freed (`TERMINATED` with no refs) counts as pending, and the last
//! one out's final `free` swap settles it.
#![cfg(sessionreg_loom)]

use loom::thread;
use loom_tests::{builder, model, race_point, registry, Log, StorageWatch};
use sessionreg::{ManualClock, Reason};
use std::time::Duration;

/// A live session's handle on another thread while the registry drops (and
/// ends the session with `Shutdown`).
#[test]
fn registry_dropped_while_a_live_handle_is_held() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = registry(&log, 2, false);
        let id = registry.insert(log.value()).unwrap();
        let session = registry.get(&id).unwrap();
        watch.assert_allocated();

        let holder = thread::spawn(move || {
            assert_eq!(session.read(), 0);
            let ended = session.is_terminated();
            drop(session);
            ended
        });
        race_point();
        drop(registry);
        let _ = holder.join().unwrap();

        assert_eq!(log.drops(0), 1);
        log.assert_closed_once(id, Reason::Shutdown);
        watch.assert_freed();
    });
}

/// An ended session held on two threads, another session never looked up,
/// and the registry dropping: three parties settle the storage's account.
#[test]
fn registry_dropped_while_two_threads_hold_an_ended_session() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = registry(&log, 2, false);
        let ended = registry.insert(log.value()).unwrap();
        let _live = registry.insert(log.value()).unwrap();
        let first = registry.get(&ended).unwrap();
        let second = first.clone();
        assert!(registry.terminate(&ended, Reason::Failed).is_won());

        let holders: Vec<_> = [first, second]
            .into_iter()
            .map(|session| {
                thread::spawn(move || {
                    assert_eq!(session.read(), 0);
                    assert!(session.is_terminated());
                })
            })
            .collect();
        race_point();
        drop(registry);
        for holder in holders {
            holder.join().unwrap();
        }

        log.assert_all_dropped_once();
        let mut reasons: Vec<_> = log.closes().iter().map(|c| (c.serial, c.reason)).collect();
        reasons.sort_by_key(|c| c.0);
        assert_eq!(reasons, [(0, Reason::Failed), (1, Reason::Shutdown)]);
        watch.assert_freed();
    });
}

/// The registry dropped while another thread works with its handle: clones
/// it, drops the original, stamps activity (`touch`), begins and ends a
/// request (which stamps again), reads the value. Each of these reaches
/// the storage (the clock the registry reads idle time from lives there),
/// and must find it alive however far the drop has got; the session ends
/// once, with `Shutdown`, and its value is dropped once, by whoever lets go
/// last (seen failing with `Lifecycle::orphan` not counting a held slot:
/// the storage was freed under the handle).
#[test]
fn registry_dropped_while_a_handle_is_cloned_begun_and_touched() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let registry = builder(&log, 1)
            .idle_timeout(Duration::from_secs(60))
            .manual_clock(&clock)
            .build()
            .unwrap();
        let id = registry.insert(log.value()).unwrap();
        let session = registry.get(&id).unwrap();

        let holder = thread::spawn(move || {
            let clone = session.clone();
            drop(session);
            clone.touch();
            if let Some(request) = clone.begin() {
                assert_eq!(request.read(), 0);
                assert_eq!(request.id(), id);
            }
            assert_eq!(clone.read(), 0);
        });
        race_point();
        drop(registry);
        holder.join().unwrap();

        log.assert_closed_once(id, Reason::Shutdown);
        assert_eq!(log.drops(0), 1);
        watch.assert_freed();
    });
}

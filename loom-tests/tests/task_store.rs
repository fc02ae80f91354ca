//! The task store's operations racing each other, beyond a task's end
//! (`tasks.rs`): a task created while the store shuts down, the shutdown
//! racing the work's completion and a cancel, the reaper racing a lookup
//! that expires a task past its retention, and a lookup bound to its owner
//! (`get_if`) racing the reaper. Under every interleaving loom explores:
//! each end is counted once, every value and result is dropped once, no
//! slot is lost, and the storage is freed with the store.
#![cfg(sessionreg_loom)]

use loom::thread;
use loom_tests::{model, race_point, Log, StorageWatch, Tracked};
use sessionreg::{EndKind, Ended, ManualClock, Miss, TaskStore};
use std::time::Duration;

/// The retention of every store here: one tick of the manual clock.
const RETENTION: Duration = Duration::from_millis(1);

type Store = TaskStore<Tracked, Box<Tracked>>;

/// A store of `capacity` tasks in one shard on `clock`, with [`RETENTION`].
fn store(clock: &ManualClock, capacity: usize) -> Store {
    TaskStore::builder()
        .capacity(capacity)
        .shards(1)
        .retention(RETENTION)
        .manual_clock(clock)
        .build()
        .expect("a valid configuration")
}

/// A task is created on one thread while the store shuts down on another.
/// The shutdown frees every task it finds (its work keeps the entry until
/// it stops): the new one, if it came first, or none. Either way the task's
/// work finishes and is counted once, the creator's own lookup finds the
/// task or misses it as ended (never a panic), and once the work is done
/// the slot comes back: the store at capacity 1 creates again.
#[test]
fn a_task_created_while_the_store_shuts_down() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let store = store(&clock, 1);
        let value = log.value();

        let creator = {
            let (store, log) = (store.clone(), log.clone());
            thread::spawn(move || {
                let running = store.create(value).expect("room for one");
                let id = running.id();
                let seen = store.get(&id).map(|task| task.value().read());
                assert!(matches!(seen, Ok(0) | Err(Miss::Stale)), "{seen:?}");
                assert!(running
                    .finish(Ended::Failed(Box::new(log.value())))
                    .is_won());
                id
            })
        };
        race_point();
        let freed = store.shutdown();
        let id = creator.join().unwrap();

        assert!(freed <= 1);
        let stats = store.stats();
        assert_eq!(stats.ended(EndKind::Failed), 1, "{stats:?}");
        assert_eq!(stats.running(), 0, "{stats:?}");
        // Survived the shutdown (it came after), or ended by it.
        match store.get(&id) {
            Ok(task) => {
                assert_eq!(freed, 0);
                assert_eq!(task.value().read(), 0);
                drop(task);
                assert_eq!(store.shutdown(), 1);
            }
            Err(miss) => {
                assert_eq!(miss, Miss::Stale);
                assert_eq!(freed, 1);
            }
        }
        assert_eq!(store.stats().registry.live, 0);
        log.assert_all_dropped_once();
        let again = store.create(log.value()).expect("the slot came back");
        drop(again);
        assert_eq!(store.shutdown(), 1);
        drop(store);
        log.assert_all_dropped_once();
        watch.assert_freed();
    });
}

/// The store shuts down while the work completes on one thread and a
/// cancel settles the task on another: exactly one end wins and is counted,
/// the shutdown frees the task's entry (its work, if still running, keeps
/// it until it stops), a lookup afterwards misses it as ended, and every
/// value and result is dropped once.
#[test]
fn shutdown_racing_finish_and_a_cancel() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let store = store(&clock, 1);
        let running = store.create(log.value()).unwrap();
        let id = running.id();
        let for_cancel = store.get(&id).unwrap();
        let result = Box::new(log.value());

        let worker = thread::spawn(move || running.finish(Ended::Completed(result)).is_won());
        let canceller = {
            let store = store.clone();
            thread::spawn(move || store.settle(&for_cancel, Ended::Cancelled).is_won())
        };
        race_point();
        assert_eq!(store.shutdown(), 1, "the live entry is the shutdown's");
        let completed = worker.join().unwrap();
        let cancelled = canceller.join().unwrap();

        assert!(
            completed != cancelled,
            "completed {completed}, cancelled {cancelled}"
        );
        let stats = store.stats();
        assert_eq!(stats.ended_total(), 1, "{stats:?}");
        let kind = if completed {
            EndKind::Completed
        } else {
            EndKind::Cancelled
        };
        assert_eq!(stats.ended(kind), 1, "{stats:?}");
        assert_eq!(stats.registry.live, 0, "{stats:?}");
        assert_eq!(store.get(&id).unwrap_err(), Miss::Stale);
        log.assert_all_dropped_once();
        drop(store);
        watch.assert_freed();
    });
}

/// A task that has ended and been retained past its retention: the reaper
/// sweeps while a lookup finds it. Exactly one of them ends the entry (one
/// idle-timeout end), the lookup never hands it out (it expires it itself,
/// or finds it ended), and its value and result are dropped once.
#[test]
fn the_reaper_racing_a_lookup_that_expires_a_task() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let store = store(&clock, 1);
        let running = store.create(log.value()).unwrap();
        let id = running.id();
        assert!(running
            .finish(Ended::Completed(Box::new(log.value())))
            .is_won());
        clock.advance(RETENTION);

        let reaper = {
            let store = store.clone();
            thread::spawn(move || store.reap())
        };
        race_point();
        let found = store.get(&id).map(|task| task.value().read());
        let reaped = reaper.join().unwrap();

        assert!(
            matches!(found, Err(Miss::Expired | Miss::Stale)),
            "a task past its retention was handed out: {found:?} (reaped {reaped})"
        );
        let stats = store.stats().registry;
        assert_eq!(stats.terminated_total(), 1, "{stats:?}");
        assert_eq!(stats.live, 0, "{stats:?}");
        assert_eq!(store.stats().ended(EndKind::Completed), 1);
        log.assert_all_dropped_once();
        drop(store);
        watch.assert_freed();
    });
}

/// A task past its retention, looked up by another principal and then by
/// its owner (`get_if`) while the reaper sweeps. The other principal's
/// lookup never expires it (a refused lookup touches nothing) and is
/// refused as `Principal`, or misses it as ended if the reaper came first;
/// the owner's finds it expired or ended, never live. One end, values
/// dropped once.
#[test]
fn get_if_racing_the_reaper() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let store = store(&clock, 1);
        let running = store.create(log.value()).unwrap();
        let id = running.id();
        drop(running);
        clock.advance(RETENTION);

        let reaper = {
            let store = store.clone();
            thread::spawn(move || store.reap())
        };
        race_point();
        let other = store.get_if(&id, |value| value.read() == 9).map(drop);
        let owner = store.get_if(&id, |value| value.read() == 0).map(drop);
        let reaped = reaper.join().unwrap();

        assert!(
            matches!(other, Err(Miss::Principal | Miss::Stale)),
            "{other:?}"
        );
        assert!(
            matches!(owner, Err(Miss::Expired | Miss::Stale)),
            "{owner:?}"
        );
        if other == Err(Miss::Principal) && owner == Err(Miss::Stale) {
            assert_eq!(reaped, 1, "nobody expired it");
        }
        let stats = store.stats();
        assert_eq!(stats.registry.terminated_total(), 1, "{stats:?}");
        assert_eq!(stats.ended(EndKind::Abandoned), 1, "{stats:?}");
        log.assert_all_dropped_once();
        drop(store);
        watch.assert_freed();
    });
}

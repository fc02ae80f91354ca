//! Panics in the code the registry calls, racing other threads: a close
//! callback that panics, a value whose `Drop` panics. Whatever panics, the
//! slot comes back (a later insert at capacity succeeds), every other
//! session is still closed and dropped, and the storage and its pages are
//! freed exactly once ([`StorageWatch`]). The panics are planned
//! ([`Fate`]), caught with `catch_unwind` and checked to be the planned
//! ones; the panic hook stays quiet about them.
//!
//! Loom runs every model thread on one OS thread, which has one panic
//! count: while one thread unwinds, `std::thread::panicking()` is true on
//! the others too. `Registry::drop` reads it (to swallow a panic rather
//! than abort), so only a model where no other thread can be unwinding
//! drops the registry with a panic to come.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{
    assert_clean, assert_planned, model, quiet_planned_panics, race_point, registry, Close, Fate,
    Log, StorageWatch,
};
use sessionreg::{Reason, Termination};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The close callback panics in the `terminate` that wins, while another
/// thread holds the session and lets go of it: whoever is the last one out
/// (the handle, or the winner's guard while the panic unwinds) frees the
/// slot, once.
#[test]
fn a_panicking_close_in_terminate_racing_a_handle() {
    quiet_planned_panics();
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let id = registry
            .insert(log.value_that(Fate::PanicsOnClose))
            .unwrap();
        let handle = registry.get(&id).unwrap();

        let holder = thread::spawn(move || {
            assert_eq!(handle.read(), 0);
            drop(handle);
        });
        race_point();
        assert_planned(catch_unwind(AssertUnwindSafe(|| {
            registry.terminate(&id, Reason::Deleted)
        })));
        holder.join().unwrap();

        log.assert_closed_once(id, Reason::Deleted);
        assert_eq!(log.drops(0), 1);
        assert_eq!(
            registry.terminate(&id, Reason::Failed),
            Termination::AlreadyTerminated
        );
        // The slot came back: the one insert capacity allows succeeds.
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

/// `terminate_all` meets a close callback that panics and a value whose
/// `Drop` panics, while another thread drops its handle to the third
/// session: the sweep ends all three, every value is dropped, every slot
/// comes back, and the first panic comes out of `terminate_all`.
#[test]
fn a_sweep_goes_on_past_a_panicking_close_and_drop() {
    quiet_planned_panics();
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 3, false));
        let ids = [Fate::PanicsOnClose, Fate::PanicsOnDrop, Fate::Quiet]
            .map(|fate| registry.insert(log.value_that(fate)).unwrap());
        let handle = registry.get(&ids[2]).unwrap();

        let holder = thread::spawn(move || {
            assert_eq!(handle.read(), 2);
            drop(handle);
        });
        race_point();
        assert_planned(catch_unwind(AssertUnwindSafe(|| {
            registry.terminate_all(Reason::Shutdown)
        })));
        holder.join().unwrap();

        let closes: Vec<_> = (0..3)
            .map(|serial| Close {
                id: ids[serial],
                serial: serial as u32,
                reason: Reason::Shutdown,
            })
            .collect();
        assert_eq!(log.closes(), closes);
        log.assert_all_dropped_once();
        assert_eq!(registry.len(), 0);
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

/// The registry is dropped while another thread holds a session, and the
/// close callback of the other session panics: both are closed and
/// dropped, the storage is freed once (by the drop or the handle), and the
/// panic comes out of the drop.
#[test]
fn registry_drop_goes_on_past_a_panicking_close() {
    quiet_planned_panics();
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = registry(&log, 2, false);
        let ids = [Fate::PanicsOnClose, Fate::Quiet]
            .map(|fate| registry.insert(log.value_that(fate)).unwrap());
        let handle = registry.get(&ids[1]).unwrap();

        let holder = thread::spawn(move || {
            assert_eq!(handle.read(), 1);
            drop(handle);
        });
        race_point();
        assert_planned(catch_unwind(AssertUnwindSafe(move || drop(registry))));
        holder.join().unwrap();

        let mut closes = log.closes();
        closes.sort_by_key(|c| c.serial);
        let expected: Vec<_> = (0..2)
            .map(|serial| Close {
                id: ids[serial],
                serial: serial as u32,
                reason: Reason::Shutdown,
            })
            .collect();
        assert_eq!(closes, expected);
        log.assert_all_dropped_once();
        watch.assert_freed();
    });
}

/// A handle is the last one out of an ended session whose value's `Drop`
/// panics, while an insert (capacity 1) races for the slot: the slot is
/// freed and listed all the same (the insert takes it, perhaps helping the
/// unwinding handle's free along, or finds it still in use and a retry
/// takes it), the value is dropped once, and nothing leaks.
#[test]
fn a_panicking_drop_in_the_last_handle_racing_an_insert() {
    quiet_planned_panics();
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let id = registry.insert(log.value_that(Fate::PanicsOnDrop)).unwrap();
        let handle = registry.get(&id).unwrap();
        assert!(registry.terminate(&id, Reason::Deleted).is_won());
        let value = log.value();

        let holder = thread::spawn(move || {
            assert_planned(catch_unwind(AssertUnwindSafe(move || drop(handle))));
        });
        race_point();
        let first = registry.insert(value);
        holder.join().unwrap();
        let new = match first {
            Ok(id) => id,
            // The handle was still held: now it is gone, the slot is back.
            Err(e) => registry.insert(e.into_inner()).expect("the slot came back"),
        };

        assert_eq!(log.drops(0), 1);
        log.assert_closed_once(id, Reason::Deleted);
        assert_eq!(registry.get(&new).expect("the new session").read(), 1);
        assert!(registry.terminate(&new, Reason::Deleted).is_won());
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

/// The reaper holds the one reference left to a session another thread has
/// just ended, whose value's `Drop` panics: the sweep takes its reference
/// while the session looks idle, the other thread touches it (so the
/// reaper finds it active after all), ends it and lets go of its handle,
/// and the reaper's letting go is then the last one out. The panic from
/// that `Drop` must not stop the sweep: the session after it (idle, never
/// touched) is still reaped by the same call, and then the panic comes
/// out. Every value is dropped once, and the storage is freed.
///
/// Failed at fa87d08: `reap_idle` let go of a session it found active
/// outside `catch_unwind`, so the panic escaped before the next slot.
#[test]
fn a_panicking_drop_in_the_reapers_let_go_does_not_stop_the_sweep() {
    quiet_planned_panics();
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = sessionreg::ManualClock::new();
        let registry = loom_tests::builder(&log, 2)
            .idle_timeout(std::time::Duration::from_millis(1))
            .manual_clock(&clock)
            .build()
            .expect("a valid configuration");
        let registry = Arc::new(registry);
        let touched = registry.insert(log.value_that(Fate::PanicsOnDrop)).unwrap();
        let idle = registry.insert(log.value()).unwrap();
        let handle = registry.get(&touched).unwrap();
        clock.advance(std::time::Duration::from_millis(1));

        let other = {
            let registry = registry.clone();
            thread::spawn(move || {
                handle.touch();
                let ended = registry.terminate_session(&handle, Reason::Deleted);
                // The value's `Drop` runs here if the reaper let go first.
                let dropped = catch_unwind(AssertUnwindSafe(move || drop(handle)));
                (ended, dropped.is_err())
            })
        };
        race_point();
        let reaped = catch_unwind(AssertUnwindSafe(|| registry.reap_idle()));
        let (ended, panicked_here) = other.join().unwrap();

        let idle_closed = log
            .closes()
            .iter()
            .any(|close| close.id == idle && close.reason == Reason::IdleTimeout);
        assert!(idle_closed, "the sweep stopped before the idle session");
        assert!(registry.get(&idle).is_none());
        assert_eq!(log.drops(0), 1);
        // The one panicking `Drop` ran once, on one of the two threads.
        assert!(
            reaped.is_err() != panicked_here,
            "the value's panic came out of both threads or neither (terminate: {ended:?})"
        );
        if let Err(panic) = reaped {
            assert_planned::<usize>(Err(panic));
        }
        assert_eq!(registry.len(), 0);
        log.assert_all_dropped_once();
        drop(registry);
        watch.assert_freed();
    });
}

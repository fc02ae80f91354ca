//! `terminate_all` racing an insert: every session is closed exactly once,
//! with its own id and value. A session inserted while the sweep runs may
//! survive it (the sweep may have passed its slot already, as documented),
//! and is then closed by the registry's drop.
//!
//! The sweep reads a session's id from its slot (the secret the inserter
//! wrote before publishing it): both models fail if `Slot::fill` stores the
//! secret after publishing `LIVE`, when the sweep can close the session
//! under a stale secret.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{model, model_capped, race_point, registry, Close, Log, StorageWatch};
use sessionreg::Reason;

/// The sweep ends the one live session and perhaps the one being inserted;
/// with `reused`, the insert pops a slot used before (it sits behind the
/// live one in the sweep's order), otherwise it takes a fresh one.
fn shutdown_racing_insert(reused: bool) {
    model(move || {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 2, false));
        let live = registry.insert(log.value()).unwrap();
        let mut expected = vec![(live, 0, Reason::Shutdown)];
        if reused {
            let gone = registry.insert(log.value()).unwrap();
            assert!(registry.terminate(&gone, Reason::Deleted).is_won());
            expected.push((gone, 1, Reason::Deleted));
        }
        let value = log.value();
        let serial = value.serial();

        let inserter = {
            let registry = registry.clone();
            thread::spawn(move || registry.insert(value).unwrap())
        };
        race_point();
        let ended = registry.terminate_all(Reason::Shutdown);
        let new = inserter.join().unwrap();

        let survived = match ended {
            1 => true,
            2 => false,
            n => panic!("terminate_all ended {n} of 2 sessions"),
        };
        assert_eq!(registry.len(), usize::from(survived));
        if survived {
            let session = registry.get(&new).expect("it survived the sweep");
            assert_eq!(session.read(), serial);
        } else {
            assert!(registry.get(&new).is_none(), "ended by the sweep");
        }
        drop(registry);

        // Closed once each, by the sweep or the drop, with its own id (the
        // one the sweep read from the slot) and value.
        expected.push((new, serial, Reason::Shutdown));
        let expected: Vec<_> = expected
            .into_iter()
            .map(|(id, serial, reason)| Close { id, serial, reason })
            .collect();
        let mut closes = log.closes();
        closes.sort_by_key(|c| c.serial);
        assert_eq!(closes, expected, "(ids print without their secrets)");
        log.assert_all_dropped_once();
        watch.assert_freed();
    });
}

#[test]
fn terminate_all_racing_an_insert_into_a_fresh_slot() {
    shutdown_racing_insert(false);
}

#[test]
fn terminate_all_racing_an_insert_into_a_reused_slot() {
    shutdown_racing_insert(true);
}

/// Two reapers step through the registry at once (a budget of one page a
/// step, two pages: one per shard, one of them holding an idle session),
/// each until a step of its own says the pass is done: every page is
/// visited by one of them at least (the shared cursor moves on only over
/// pages its mover looked at), so the session is reaped, once, by one of
/// them.
#[test]
fn two_reapers_stepping_at_once_skip_no_page() {
    model_capped(3, || {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = loom_tests::builder(&log, 2)
            .shards(2)
            .idle_timeout(std::time::Duration::ZERO)
            .manual_clock(&sessionreg::ManualClock::new())
            .build()
            .expect("a valid configuration");
        let registry = Arc::new(registry);
        let id = registry.insert(log.value()).unwrap();

        let pass = |registry: &sessionreg::Registry<loom_tests::Tracked>| {
            let mut ended = 0;
            loop {
                let step = registry.reap_idle_step(1);
                ended += step.ended;
                if step.pass_done {
                    return ended;
                }
            }
        };
        let other = {
            let registry = registry.clone();
            thread::spawn(move || pass(&registry))
        };
        race_point();
        let here = pass(&registry);
        let there = other.join().unwrap();

        assert_eq!(here + there, 1, "reaped {here} and {there}");
        assert!(registry.get(&id).is_none());
        log.assert_closed_once(id, Reason::IdleTimeout);
        log.assert_all_dropped_once();
        drop(registry);
        watch.assert_freed();
    });
}

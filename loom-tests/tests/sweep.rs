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
use loom_tests::{model, race_point, registry, Close, Log, StorageWatch};
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

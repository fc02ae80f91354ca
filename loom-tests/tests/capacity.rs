//! Capacity at its edge: an insert racing the end of the one live session
//! either fails at once with its value handed back, or takes the freed slot;
//! never more live sessions than the capacity, nothing leaked.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_clean, model, race_point, registry, Log, StorageWatch};
use sessionreg::{Reason, Termination};

#[test]
fn insert_racing_terminate_at_capacity() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let first = registry.insert(log.value()).unwrap();
        let value = log.value();

        let terminator = {
            let registry = registry.clone();
            thread::spawn(move || registry.terminate(&first, Reason::Deleted))
        };
        race_point();
        let inserted = match registry.insert(value) {
            Ok(id) => {
                assert!(registry.len() <= 1, "over capacity: {}", registry.len());
                Some(id)
            }
            Err(e) => {
                let value = e.into_inner();
                assert_eq!(value.read(), 1, "insert handed back another value");
                drop(value);
                assert_eq!(log.drops(1), 1);
                None
            }
        };
        assert_eq!(terminator.join().unwrap(), Termination::Won);

        assert!(registry.stats().live <= 1);
        assert!(registry.get(&first).is_none());
        if let Some(id) = inserted {
            assert_eq!(registry.len(), 1);
            let session = registry.get(&id).expect("the new session is live");
            assert_eq!(session.read(), 1);
            drop(session);
            assert_eq!(registry.terminate(&id, Reason::Failed), Termination::Won);
        }
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

/// Two inserts race for the last free slot: exactly one gets it.
#[test]
fn two_inserts_race_for_the_last_slot() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let (a, b) = (log.value(), log.value());

        let other = {
            let registry = registry.clone();
            thread::spawn(move || registry.insert(a).map_err(|e| e.into_inner().read()))
        };
        race_point();
        let here = registry.insert(b).map_err(|e| e.into_inner().read());
        let there = other.join().unwrap();

        let (id, loser) = match (here, there) {
            (Ok(id), Err(serial)) => (id, (serial, 0)),
            (Err(serial), Ok(id)) => (id, (serial, 1)),
            other => panic!("capacity 1, two inserts: {other:?}"),
        };
        assert_eq!(loser.0, loser.1, "the loser got another value back");
        assert_eq!(registry.len(), 1);
        assert_eq!(registry.terminate(&id, Reason::Deleted), Termination::Won);
        assert_clean(&registry, &log);
    });
}

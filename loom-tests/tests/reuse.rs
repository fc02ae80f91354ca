//! Slot reuse: once a session has ended and its slot holds a new one, the old
//! id finds nothing and ends nothing, even while the reuse is in progress.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom_tests::{assert_clean, model, race_point, registry, spawn_reuser, Log, StorageWatch};
use sessionreg::{Miss, Reason, SessionId, Termination};

/// The slot half of an id's text form (node, generation, index: the high 64
/// bits, first in the text), without the secret.
fn slot_and_generation(id: &SessionId) -> String {
    id.to_string()[..16].to_string()
}

/// With one slot: end, reinsert (same slot, next generation), and try the
/// old id every way.
#[test]
fn the_old_id_fails_after_reuse() {
    model(|| {
        let log = Log::new();
        let registry = registry(&log, 1, false);
        let old = registry.insert(log.value()).unwrap();
        assert_eq!(registry.terminate(&old, Reason::Deleted), Termination::Won);
        let new = registry.insert(log.value()).unwrap();
        // One slot: the same one, under its next generation.
        assert_ne!(slot_and_generation(&old), slot_and_generation(&new));

        assert!(registry.get(&old).is_none());
        assert_eq!(registry.lookup(&old).map(drop), Err(Miss::Stale));
        assert_eq!(
            registry.terminate(&old, Reason::Failed),
            Termination::AlreadyTerminated
        );
        let session = registry.get(&new).expect("the new session is untouched");
        assert_eq!(session.read(), 1);
        assert_eq!(session.id(), new);
        assert!(!session.is_terminated());
        drop(session);
        assert_eq!(registry.terminate(&new, Reason::Deleted), Termination::Won);
        assert_clean(&registry, &log);
    });
}

/// One thread ends the session and inserts a new one into the freed slot;
/// the other uses the old id meanwhile, first to look it up, then to end it.
/// The lookup finds the old session or nothing, and the old id never reaches
/// the new session.
#[test]
fn the_old_id_never_reaches_the_new_session_while_racing() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let old = registry.insert(log.value()).unwrap();
        let value = log.value();

        // Its insert fails (value handed back) while this thread still
        // holds the old session: the slot is not free yet.
        let reuser = spawn_reuser(&registry, old, value);
        race_point();
        if let Some(session) = registry.get(&old) {
            assert_eq!(session.id(), old, "the old id reached another session");
            assert_eq!(session.read(), 0, "the old id reached another value");
        }
        let second = registry.terminate(&old, Reason::Failed);
        let (first, new) = reuser.join().unwrap();

        let wins = [first, second].iter().filter(|t| t.is_won()).count();
        assert_eq!(wins, 1, "terminate(old) won {first:?} / {second:?}");
        for t in [first, second] {
            assert!(
                matches!(t, Termination::Won | Termination::AlreadyTerminated),
                "{t:?}"
            );
        }
        let closes = log.closes();
        assert_eq!(closes.len(), 1, "{closes:?}");
        assert_eq!((closes[0].id, closes[0].serial), (old, 0));
        assert!(registry.get(&old).is_none());

        if let Ok(new) = new {
            // The old id's terminate did not end the new session.
            let session = registry.get(&new).expect("the new session is live");
            assert_eq!(session.read(), 1);
            assert_eq!(session.id(), new);
            drop(session);
            assert_eq!(registry.terminate(&new, Reason::Deleted), Termination::Won);
        }
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

/// A lookup by the old id racing an end and a reinsert that completes: never
/// the new session.
#[test]
fn a_stale_lookup_racing_reuse_finds_nothing_new() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let old = registry.insert(log.value()).unwrap();
        let value = log.value();

        let reuser = spawn_reuser(&registry, old, value);
        race_point();
        let found = registry.lookup(&old);
        match &found {
            Ok(session) => {
                assert_eq!(session.id(), old);
                assert_eq!(session.read(), 0);
            }
            Err(cause) => assert_eq!(*cause, Miss::Stale),
        }
        drop(found);
        let (ended, new) = reuser.join().unwrap();
        assert_eq!(ended, Termination::Won);
        match new {
            Ok(new) => {
                assert_eq!(registry.get(&new).unwrap().read(), 1);
                assert_eq!(registry.terminate(&new, Reason::Deleted), Termination::Won);
            }
            // Only while the lookup held the old session.
            Err(serial) => assert_eq!(serial, 1),
        }
        assert!(registry.get(&old).is_none());
        assert_clean(&registry, &log);
    });
}

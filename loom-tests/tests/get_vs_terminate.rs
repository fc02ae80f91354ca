//! Lookups racing termination: a lookup sees the live session it asked for,
//! or nothing; a handle taken before the end stays readable, reports the end,
//! and the value is dropped once, by whoever lets go last.
#![cfg(sessionreg_loom)]

use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_clean, model, race_point, registry, Log, StorageWatch};
use sessionreg::{Reason, Termination};
use std::sync::atomic::Ordering::Relaxed;

/// `get` on one thread while another terminates the session.
#[test]
fn get_sees_the_live_session_or_nothing() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let id = registry.insert(log.value()).unwrap();

        let terminator = {
            let registry = registry.clone();
            thread::spawn(move || registry.terminate(&id, Reason::Deleted))
        };
        race_point();
        let found = registry.get(&id);
        if let Some(session) = &found {
            assert_eq!(session.id(), id, "a lookup returned another session");
            assert_eq!(session.read(), 0, "a lookup returned another value");
        }
        assert_eq!(terminator.join().unwrap(), Termination::Won);

        if let Some(session) = found {
            // Ended while we held it: still readable, and says so.
            assert!(session.is_terminated());
            assert_eq!(session.read(), 0);
            assert!(
                session.begin().is_none(),
                "a request began on an ended session"
            );
            assert_eq!(log.drops(0), 0, "dropped under a live handle");
            drop(session);
        }
        assert_eq!(log.drops(0), 1);
        assert!(registry.get(&id).is_none());
        log.assert_closed_once(id, Reason::Deleted);
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

/// A handle taken before the end, cloned to the terminating thread: both
/// copies read the value while the session ends, and the last of the three
/// references (the two handles and the winner's own) drops it, once.
#[test]
fn handles_outlive_the_end_and_the_last_one_out_drops() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let id = registry.insert(log.value()).unwrap();
        let session = registry.get(&id).unwrap();
        let clone = session.clone();

        let terminator = {
            let registry = registry.clone();
            thread::spawn(move || {
                let won = registry.terminate(&id, Reason::Failed);
                assert_eq!(clone.read(), 0);
                assert!(clone.is_terminated());
                drop(clone);
                won
            })
        };
        race_point();
        assert_eq!(session.read(), 0);
        assert_eq!(session.id(), id);
        drop(session);
        assert_eq!(terminator.join().unwrap(), Termination::Won);

        assert_eq!(log.drops(0), 1);
        assert_eq!(log.closes().len(), 1);
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

/// An in-flight request (`begin`) racing the end of its session: it either
/// starts before the end (and the session then reports it ended) or is
/// refused; either way the value is dropped once, after the request.
#[test]
fn request_in_flight_racing_terminate() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let id = registry.insert(log.value()).unwrap();
        let session = registry.get(&id).unwrap();

        let terminator = {
            let registry = registry.clone();
            thread::spawn(move || registry.terminate(&id, Reason::Deleted))
        };
        race_point();
        if let Some(request) = session.begin() {
            assert_eq!(session.read(), 0);
            drop(request);
        }
        assert_eq!(terminator.join().unwrap(), Termination::Won);
        assert!(session.is_terminated());
        assert!(session.begin().is_none());
        drop(session);
        assert_eq!(log.drops(0), 1);
        assert_clean(&registry, &log);
    });
}

/// A lookup racing the insert that creates the session: it finds nothing
/// yet, or the whole session, value written. The id reaches the reader
/// through a `std` mutex (which loom does not see) behind a relaxed flag, so
/// the only happens-before edge is the one the registry itself provides (the
/// lifecycle word's Release store in `publish`, Acquire load in `get`).
#[test]
fn a_lookup_racing_the_insert_sees_the_whole_session() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        // A first life, so the insert below reuses a slot whose page is
        // already there (and only the lifecycle word publishes the value).
        let first = registry.insert(log.value()).unwrap();
        assert!(registry.terminate(&first, Reason::Deleted).is_won());
        let value = log.value();
        let mailbox = std::sync::Arc::new(std::sync::Mutex::new(None));
        let posted = Arc::new(AtomicBool::new(false));

        let inserter = {
            let (registry, mailbox, posted) = (registry.clone(), mailbox.clone(), posted.clone());
            thread::spawn(move || {
                let id = registry.insert(value).unwrap();
                *mailbox.lock().unwrap() = Some(id);
                posted.store(true, Relaxed);
                id
            })
        };
        race_point();
        if posted.load(Relaxed) {
            let id = mailbox.lock().unwrap().expect("posted after it was set");
            // Nothing orders the insert before this lookup: it may find
            // nothing, but what it finds must be whole.
            if let Some(session) = registry.get(&id) {
                assert_eq!(session.id(), id);
                assert_eq!(session.read(), 1, "the value is not all there");
            }
        }
        let id = inserter.join().unwrap();
        assert_eq!(registry.terminate(&id, Reason::Deleted), Termination::Won);
        assert_clean(&registry, &log);
    });
}

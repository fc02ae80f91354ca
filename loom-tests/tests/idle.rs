//! Idle expiry racing work on the session: a request in flight is never
//! reaped, and a session being reaped admits no new request.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_clean, model, race_point, registry, spawn_reaper_of_an_idle_session, Log};
use sessionreg::Reason;

/// The session is idle (its last activity one timeout ago) when a request
/// begins on a handle taken earlier, while the reaper sweeps. Either the
/// request gets in first, and then the reaper leaves the session alone (the
/// request is in flight, then its end restarts the idle clock), or the
/// reaper closes the session first, and then the request is refused. Never
/// both, never neither.
#[test]
fn reaper_vs_a_request_beginning() {
    model(|| {
        let log = Log::new();
        let (registry, session, reaper) = spawn_reaper_of_an_idle_session(&log);
        let id = session.id();
        race_point();
        let began = match session.begin() {
            Some(request) => {
                // In flight: the reaper cannot end it now.
                assert!(!request.is_terminated(), "reaped under a request");
                assert_eq!(session.read(), 0);
                drop(request);
                true
            }
            None => false,
        };
        let reaped = reaper.join().unwrap();

        assert!(
            began != (reaped == 1),
            "request began: {began}, sessions reaped: {reaped}"
        );
        if began {
            assert!(!session.is_terminated(), "reaped under a request");
            assert!(registry.terminate(&id, Reason::Deleted).is_won());
        }
        assert!(session.is_terminated());
        drop(session);
        let reason = if began {
            Reason::Deleted
        } else {
            Reason::IdleTimeout
        };
        log.assert_closed_once(id, reason);
        assert_clean(&registry, &log);
    });
}

/// A session created with its first request in flight cannot be reaped
/// while that request runs, even with a zero idle timeout; once the request
/// ends, the reaper may take it, and exactly one of the reaper and a later
/// DELETE ends it.
#[test]
fn insert_in_flight_vs_reaper() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, true));
        let request = registry.insert_in_flight(log.value()).unwrap();
        let id = request.id();
        let reaper = {
            let registry = registry.clone();
            thread::spawn(move || registry.reap_idle())
        };
        race_point();
        assert!(!request.is_terminated(), "reaped under its first request");
        assert_eq!(request.read(), 0);
        drop(request);
        let reaped = reaper.join().unwrap();
        let deleted = registry.terminate(&id, Reason::Deleted).is_won();
        assert!(
            deleted != (reaped == 1),
            "deleted: {deleted}, reaped: {reaped}"
        );
        let reason = if deleted {
            Reason::Deleted
        } else {
            Reason::IdleTimeout
        };
        log.assert_closed_once(id, reason);
        assert_clean(&registry, &log);
    });
}

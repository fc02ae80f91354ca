//! The clock path production runs: neither an insert nor a request's end
//! reads the clock (their stamps are *rough*), and the reaper's sweep makes
//! a rough stamp exact with a reading it takes afterwards
//! ([`ManualClock::with_rough_stamps`] makes a manual clock behave so).
//!
//! The promise: a session is never found idle earlier than it is. So the
//! time the sweep stamps must be no earlier than the last activity before
//! the stamp lands, whatever happens between the sweep's look at the slot
//! and its write: a request beginning and ending there (which puts back the
//! very activity word the sweep saw), or the session ending and its slot
//! being reused by a new one (whose fresh word is the same again). And the
//! reading must be ordered after the activity it covers on every
//! architecture, so the models also fail if a request's end or the sweep's
//! look is Relaxed.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_clean, builder, model, race_point, Log, Tracked};
use sessionreg::{ManualClock, Reason, Registry};
use std::time::Duration;

/// The idle timeout of every registry here.
const TIMEOUT: Duration = Duration::from_millis(10);

/// A one-slot registry with [`TIMEOUT`], whose clock stamps as production's
/// does; and that clock (at zero).
fn rough_registry(log: &std::sync::Arc<Log>) -> (ManualClock, Arc<Registry<Tracked>>) {
    let clock = ManualClock::new();
    let registry = builder(log, 1)
        .idle_timeout(TIMEOUT)
        .manual_clock(&clock.with_rough_stamps())
        .build()
        .expect("a valid configuration");
    (clock, Arc::new(registry))
}

/// A session never used since its insert at t = 0 (rough) is swept while a
/// request begins on it, the clock moves to t = 10 ms and the request
/// ends. The sweep may stamp the session before the request, or after it,
/// or see it in flight and leave it: whichever, at t = 10 ms the request
/// has just ended, so neither a sweep nor a lookup may find the session
/// idle (its timeout is 10 ms). It is ended by the idle timeout only once a
/// sweep has seen it idle for the timeout after the request.
///
/// Failed at fa87d08 (`Activity::make_exact` compared the word by value:
/// the request's begin and end between the sweep's load and its CAS put
/// back the word it loaded, and the CAS stamped t = 0 under it).
#[test]
fn a_request_between_the_sweeps_look_and_its_stamp_is_not_lost() {
    model(|| {
        let log = Log::new();
        let (clock, registry) = rough_registry(&log);
        let id = registry.insert(log.value()).unwrap();
        let session = registry.get(&id).expect("rough: never idle");

        let reaper = {
            let registry = registry.clone();
            thread::spawn(move || registry.reap_idle())
        };
        race_point();
        let request = session.begin().expect("the session is live");
        clock.advance(TIMEOUT);
        drop(request);
        assert_eq!(reaper.join().unwrap(), 0, "reaped at t = 0");

        // t = 10 ms: the request ended just now.
        assert_eq!(registry.reap_idle(), 0, "reaped as the request ended");
        assert!(registry.get(&id).is_some(), "expired as the request ended");
        clock.advance(TIMEOUT);
        // Idle since a sweep at t = 10 ms at the latest: this sweep or the
        // next one ends it, by the idle timeout.
        let reaped = registry.reap_idle() + registry.reap_idle();
        assert_eq!(reaped, 1);
        drop(session);
        log.assert_closed_once(id, Reason::IdleTimeout);
        assert_clean(&registry, &log);
    });
}

/// The sweep looks at a session inserted at t = 0 (rough) while it is
/// deleted, the clock moves to t = 10 ms and a new session takes its slot
/// (rough, as every insert; or, if the sweep holds the old one, once the
/// sweep lets go). Whatever the sweep stamps must not land on the new
/// session with a time from before it was inserted: at t = 10 ms nothing
/// finds it idle.
///
/// Failed at fa87d08: the new session's fresh activity word is the one the
/// sweep loaded from the old one, and its CAS stamped t = 0 on it.
#[test]
fn a_slot_reused_between_the_sweeps_look_and_its_stamp_gets_no_older_time() {
    model(|| {
        let log = Log::new();
        let (clock, registry) = rough_registry(&log);
        let old = registry.insert(log.value()).unwrap();

        let reaper = {
            let registry = registry.clone();
            thread::spawn(move || registry.reap_idle())
        };
        race_point();
        assert!(registry.terminate(&old, Reason::Deleted).is_won());
        clock.advance(TIMEOUT);
        let inserted = registry.insert(log.value());
        assert_eq!(reaper.join().unwrap(), 0, "reaped at t = 0");
        let new = match inserted {
            Ok(id) => id,
            // The sweep held the old session while it stamped it: its slot
            // came back once the sweep let go.
            Err(full) => registry
                .insert(full.into_inner())
                .expect("the slot came back"),
        };

        // t = 10 ms: the new session was inserted just now.
        assert_eq!(registry.reap_idle(), 0, "reaped as it was inserted");
        assert!(registry.get(&new).is_some(), "expired as it was inserted");
        assert!(registry.terminate(&new, Reason::Deleted).is_won());
        assert_clean(&registry, &log);
    });
}

//! The registry's calls beyond insert/get/terminate: `insert_with` (a value
//! made from its own id, before anyone can see it), `lookup_if` (a session
//! bound to an owner) and `terminate_session` (ending the session a handle
//! holds).

use sessionreg::{ManualClock, Miss, Reason, Registry, SessionId, Termination};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn the_value_knows_its_id_and_is_closed_with_it() {
    let closed = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&closed);
    let registry = Registry::builder()
        .on_close(move |id: &SessionId, value: &SessionId, reason| {
            assert_eq!(id, value);
            assert_eq!(reason, Reason::Deleted);
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    let id = registry.insert_with(|id| id).unwrap();
    assert_eq!(*registry.get(&id).unwrap(), id);
    assert!(registry.terminate(&id, Reason::Deleted).is_won());
    assert_eq!(closed.load(Ordering::SeqCst), 1);
}

#[test]
fn at_capacity_the_function_is_handed_back_uncalled() {
    let registry = Registry::builder().capacity(1).build().unwrap();
    registry.insert(String::from("first")).unwrap();
    let calls = AtomicUsize::new(0);
    let err = registry
        .insert_with(|_| {
            calls.fetch_add(1, Ordering::SeqCst);
            String::from("second")
        })
        .unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(err.to_string().contains("capacity (1 sessions)"), "{err}");
    // The function comes back, and still works.
    let make = err.into_inner();
    assert_eq!(make(SessionId::from_bytes([0; 24])), "second");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_panicking_function_costs_no_slot_and_creates_nothing() {
    let registry = Registry::builder().capacity(1).shards(1).build().unwrap();
    let leaked = AtomicUsize::new(0);
    for _ in 0..3 {
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            registry.insert_with(|id| -> u32 {
                leaked.store(usize::from(id.to_bytes()[23]), Ordering::SeqCst);
                panic!("cannot make the value")
            })
        }));
        assert!(panicked.is_err());
    }
    assert_eq!(registry.len(), 0);
    assert_eq!(registry.stats().created, 0);
    // The one slot is free again, and an id shown to the failed function
    // names nothing.
    let id = registry.insert_in_flight_with(|_| 7).unwrap().id();
    assert!(registry.get(&id).is_some());
    assert_eq!(registry.len(), 1);
}

#[test]
fn a_refused_lookup_leaves_the_session_as_it_was() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .idle_timeout(Duration::from_secs(10))
        .manual_clock(&clock)
        .build()
        .unwrap();
    let id = registry.insert("ada").unwrap();
    clock.advance(Duration::from_secs(10));
    // Idle past the timeout, but another owner's lookup must not end it.
    assert_eq!(
        registry
            .lookup_if(&id, |owner| *owner == "eve")
            .unwrap_err(),
        Miss::Principal
    );
    assert_eq!(registry.len(), 1);
    assert_eq!(registry.stats().misses(Miss::Expired), 0);
    // The owner's lookup finds it expired, as `lookup` would.
    assert_eq!(
        registry
            .lookup_if(&id, |owner| *owner == "ada")
            .unwrap_err(),
        Miss::Expired
    );
    assert_eq!(registry.len(), 0);
    let stats = registry.stats();
    assert_eq!(stats.misses(Miss::Principal), 1);
    assert_eq!(stats.terminated(Reason::IdleTimeout), 1);
}

#[test]
fn terminate_session_ends_exactly_the_held_session_once() {
    let closes = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&closes);
    let registry = Registry::builder()
        .capacity(1)
        .shards(1)
        .on_close(move |_, _: &u32, reason| {
            if reason == Reason::Failed {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build()
        .unwrap();
    let id = registry.insert(1).unwrap();
    let session = registry.get(&id).unwrap();
    assert_eq!(
        registry.terminate_session(&session, Reason::Failed),
        Termination::Won
    );
    assert_eq!(
        registry.terminate_session(&session, Reason::Failed),
        Termination::AlreadyTerminated
    );
    assert_eq!(closes.load(Ordering::SeqCst), 1);
    assert_eq!(*session, 1, "the handle still reads its value");
    // The slot is reused only once the handle is gone.
    assert!(registry.insert(2).is_err());
    drop(session);
    let next = registry.insert(2).unwrap();
    assert_ne!(next, id);

    // A handle of another registry ends nothing here.
    let other = Registry::builder().build().unwrap();
    let foreign = other.get(&other.insert(3).unwrap()).unwrap();
    assert_eq!(
        registry.terminate_session(&foreign, Reason::Failed),
        Termination::Missed(Miss::Unknown)
    );
    assert!(!foreign.is_terminated());
}

/// A registry with a 10 s idle timeout whose clock stamps as production's
/// does (no clock read on inserts and request ends), and that clock.
fn stamped_as_in_production<S: Send + Sync + 'static>() -> (ManualClock, Registry<S>) {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .idle_timeout(Duration::from_secs(10))
        .manual_clock(&clock.with_rough_stamps())
        .build()
        .unwrap();
    (clock, registry)
}

/// In production neither an insert nor a request's end reads the clock
/// (their stamps are rough): a session's idle time starts when it is
/// touched or when a sweep first sees it after its last activity. Never
/// earlier than that activity, so a session is never ended early, however
/// long after it is looked up; late by up to two sweep periods.
#[test]
fn no_session_is_found_idle_early_when_hot_paths_read_no_clock() {
    let (clock, registry) = stamped_as_in_production();
    let unused = registry.insert("unused").unwrap();
    let used = registry.insert("used").unwrap();
    // A request of `used` ends at t = 5 s, reading no clock.
    clock.advance(Duration::from_secs(5));
    drop(registry.get(&used).unwrap().begin().unwrap());
    // At t = 15 s nothing has read the clock for either session: lookups
    // hand both out (late, never early) ...
    clock.advance(Duration::from_secs(10));
    assert!(registry.get(&used).is_some());
    assert!(registry.get(&unused).is_some());
    // ... and the first sweep starts their idle time now, ending nothing.
    assert_eq!(registry.reap_idle(), 0);
    clock.advance(Duration::from_millis(9_999));
    assert_eq!(registry.reap_idle(), 0);
    assert!(registry.get(&used).is_some());
    assert!(registry.get(&unused).is_some());
    // Idle for the timeout since the sweep saw them: a lookup ends one, the
    // next sweep the other.
    clock.advance(Duration::from_millis(1));
    assert_eq!(registry.lookup(&used).unwrap_err(), Miss::Expired);
    assert_eq!(registry.reap_idle(), 1);
    assert!(registry.get(&unused).is_none());
    assert_eq!(registry.stats().terminated(Reason::IdleTimeout), 2);
}

/// With the system clock, a lookup first compares the session's word with
/// a number kept from the latest reading (`activity.rs`): a rough session,
/// or one stamped less than the timeout before that reading, is handed out
/// on that comparison; one stamped by a sweep at that reading is looked at
/// field by field, and with a zero timeout (idle as soon as nothing is in
/// flight) found idle.
#[test]
fn with_the_system_clock_a_lookup_decides_with_the_latest_reading() {
    for (timeout, idle) in [(Duration::ZERO, true), (Duration::from_secs(3600), false)] {
        let registry = Registry::builder().idle_timeout(timeout).build().unwrap();
        let id = registry.insert(()).unwrap();
        drop(registry.get(&id).unwrap().begin().unwrap());
        assert!(registry.get(&id).is_some(), "rough: not idle");
        // The sweep makes the stamp exact with its reading, and ends nothing.
        assert_eq!(registry.reap_idle(), 0);
        match idle {
            true => assert_eq!(registry.lookup(&id).unwrap_err(), Miss::Expired),
            false => assert!(registry.get(&id).is_some()),
        }
        assert_eq!(
            registry.stats().terminated(Reason::IdleTimeout),
            u64::from(idle)
        );
    }
}

/// A touch makes a rough stamp exact at once (it reads the clock).
#[test]
fn a_touch_starts_the_idle_time_of_a_session_never_used() {
    let (clock, registry) = stamped_as_in_production();
    let id = registry.insert(()).unwrap();
    clock.advance(Duration::from_secs(3));
    registry.get(&id).unwrap().touch();
    clock.advance(Duration::from_secs(10));
    assert_eq!(registry.reap_idle(), 1, "idle since the touch");
}

//! Lookups racing expiry: a lookup never hands out a session that is being
//! expired, and when two threads expire one session, it ends once.
//!
//! Expiry is two steps: `Activity::try_expire` closes the session to new
//! requests (the `closed` bit), and then the expirer ends it through the
//! lifecycle CAS with `IdleTimeout`. Between the two, the session is still
//! `LIVE`: a lookup that takes its reference there must see the bit and
//! treat the session as expiring.
//!
//! Both models fail if `Activity::try_expire` treats a session another
//! thread has closed as active (the lookup then hands it out). The first
//! also fails if `Activity::check` ignores the bit and judges by the clock
//! alone; the second does not see that one, since with its zero timeout a
//! closed session is idle by the clock too. (Two reapers racing is
//! `reap_vs_reap` in `terminate.rs`.)
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{
    assert_clean, model, race_point, registry, spawn_reaper_of_an_idle_session, Log, StorageWatch,
};
use sessionreg::{Miss, Reason};

/// The session is idle when the reaper starts; a request handler on another
/// thread stamps it active (`touch`) and then looks it up by id. If the
/// reaper closed it before the touch, the lookup finds it closed but no
/// longer idle by the clock: the already-closed branch, where only the bit
/// tells the lookup the session is about to end. Whatever the order, a
/// session the lookup returns is never ended by the reaper afterwards: a
/// request can begin on it, and it is still live once the reaper is done.
#[test]
fn a_lookup_never_returns_a_session_the_reaper_has_closed() {
    model(|| {
        let log = Log::new();
        let (registry, handle, reaper) = spawn_reaper_of_an_idle_session(&log);
        let id = handle.id();
        race_point();
        handle.touch();
        drop(handle);
        let found = registry.lookup(&id);
        let request = match &found {
            Ok(session) => {
                assert_eq!(session.id(), id);
                assert_eq!(session.read(), 0);
                Some(session.begin().expect("a request on a session looked up"))
            }
            // Closed or idle (whoever then ended it), or ended already.
            Err(cause) => {
                assert!(matches!(cause, Miss::Expired | Miss::Stale), "{cause:?}");
                None
            }
        };
        let reaped = reaper.join().unwrap();

        match found {
            Ok(session) => {
                assert_eq!(reaped, 0, "the reaper ended a session handed out");
                assert!(!session.is_terminated(), "ended under its holder");
                drop(request);
                drop(session);
                assert!(registry.terminate(&id, Reason::Deleted).is_won());
                log.assert_closed_once(id, Reason::Deleted);
            }
            // The lookup or the reaper ended it: one close, for idleness.
            Err(_) => log.assert_closed_once(id, Reason::IdleTimeout),
        }
        assert_clean(&registry, &log);
    });
}

/// Two expirers: the reaper's sweep and a lookup that finds the session
/// idle (zero timeout), which ends it itself. Exactly one of them ends it,
/// one `IdleTimeout` close, and the lookup never returns it.
#[test]
fn reap_idle_vs_an_expiring_lookup() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, true));
        let id = registry.insert(log.value()).unwrap();

        let reaper = {
            let registry = registry.clone();
            thread::spawn(move || registry.reap_idle())
        };
        race_point();
        let found = registry.lookup(&id).map(|session| session.read());
        let reaped = reaper.join().unwrap();

        // `Expired` if it saw the session idle or closed (whoever then won
        // the end), `Stale` if the reaper had ended it already.
        assert!(
            matches!(found, Err(Miss::Expired | Miss::Stale)),
            "an expiring session was looked up: {found:?} (reaped {reaped})"
        );
        assert!(reaped <= 1);
        log.assert_closed_once(id, Reason::IdleTimeout);
        let stats = registry.stats();
        assert_eq!(stats.terminated(Reason::IdleTimeout), 1, "{stats:?}");
        assert_eq!(stats.terminated_total(), 1, "{stats:?}");
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

//! Generation wrap-around, with the test-only narrow widths
//! (`Builder::test_widths`) so that loom reaches each bound in a few steps.
//!
//! Generations: with one generation bit, two reuses of a slot bring its
//! generation back to the old id's. A `get` or `terminate` by the old id
//! that has checked the slot and is descheduled before its CAS while
//! another thread ends the session and fills the slot twice finds the word
//! it checked again (same generation, state and references), so its CAS
//! succeeds, on the newer session. It must then notice, by the secret it
//! re-reads under the reference it took, and let go: it never returns nor
//! ends the newer session (both models fail without that re-check in
//! `Registry::acquire`).
//!
//! Free-list tags wrap in `slab/free_list.rs`
//! (`pop_racing_pop_pop_push_across_a_tag_wrap`), beside the same race
//! with the production tag.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_clean, builder, model, race_point, Log, Tracked};
use sessionreg::{Miss, Reason, Registry, SessionId, Termination};

/// A registry of one slot whose generation has one bit (it comes back
/// every two reuses), holding one session (value 0), and a thread that ends
/// that session and then fills the slot twice (values 1 and 2, ending the
/// first), so that the slot's generation is the old id's again. Returns the
/// registry, the old id and the thread, once the main thread may race it;
/// the thread returns the last session's id, or `None` if a full registry
/// stopped it (the main thread held the old session, whose slot was not
/// free yet).
fn wrap_the_old_generation(
    log: &std::sync::Arc<Log>,
) -> (
    Arc<Registry<Tracked>>,
    SessionId,
    thread::JoinHandle<Option<SessionId>>,
) {
    let registry = Arc::new(builder(log, 1).test_widths(1, 37).build().unwrap());
    let old = registry.insert(log.value()).unwrap();
    let (second, third) = (log.value(), log.value());
    let wrapper = {
        let registry = registry.clone();
        thread::spawn(move || {
            let _ = registry.terminate(&old, Reason::Deleted);
            let between = registry.insert(second).ok()?;
            assert!(registry.terminate(&between, Reason::Deleted).is_won());
            registry.insert(third).ok()
        })
    };
    race_point();
    (registry, old, wrapper)
}

/// After the race: the session that came back to the old generation (if
/// the wrapper got that far) is live and untouched, and the old id reaches
/// nothing.
fn assert_newest_untouched(registry: &Registry<Tracked>, log: &Log, newest: Option<SessionId>) {
    if let Some(newest) = newest {
        let session = registry.get(&newest).expect("the newest session is live");
        assert_eq!(session.read(), 2);
        assert!(!session.is_terminated());
        drop(session);
        assert!(
            log.closes().iter().all(|c| c.serial != 2),
            "{:?}",
            log.closes()
        );
        assert!(registry.terminate(&newest, Reason::Deleted).is_won());
    }
}

/// A `get` by the old id, racing the end of its session and two refills of
/// the slot: it returns the old session, or nothing; never the newer one.
#[test]
fn a_stalled_get_never_returns_the_session_its_generation_came_back_for() {
    model(|| {
        let log = Log::new();
        let (registry, old, wrapper) = wrap_the_old_generation(&log);
        match registry.lookup(&old) {
            Ok(session) => {
                assert_eq!(session.read(), 0, "the old id returned another session");
                assert_eq!(session.id(), old);
            }
            // Ended, or the slot wrapped to another session of its
            // generation (whose secret is not the id's).
            Err(cause) => assert!(
                matches!(cause, Miss::Stale | Miss::Unknown | Miss::Forged),
                "{cause:?}"
            ),
        }
        let newest = wrapper.join().unwrap();
        assert_newest_untouched(&registry, &log, newest);
        assert_clean(&registry, &log);
    });
}

/// A `terminate` by the old id, racing the same: it ends the old session
/// (racing the wrapper's own end of it), or finds it ended; it never ends
/// the newer one, and no close ever pairs the old id with a newer value.
#[test]
fn a_stalled_terminate_never_ends_the_session_its_generation_came_back_for() {
    model(|| {
        let log = Log::new();
        let (registry, old, wrapper) = wrap_the_old_generation(&log);
        let ended = registry.terminate(&old, Reason::Failed);
        assert!(
            matches!(
                ended,
                Termination::Won
                    | Termination::AlreadyTerminated
                    | Termination::Missed(Miss::Unknown | Miss::Forged)
            ),
            "{ended:?}"
        );
        let newest = wrapper.join().unwrap();

        let old_closes: Vec<_> = log.closes().into_iter().filter(|c| c.id == old).collect();
        assert_eq!(old_closes.len(), 1, "{old_closes:?}");
        assert_eq!(old_closes[0].serial, 0, "the old id ended a newer session");
        let reason = if ended.is_won() {
            Reason::Failed
        } else {
            Reason::Deleted
        };
        assert_eq!(old_closes[0].reason, reason);
        assert_newest_untouched(&registry, &log, newest);
        assert_clean(&registry, &log);
    });
}

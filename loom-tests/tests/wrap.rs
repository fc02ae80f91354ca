//! Wrap-around, with the test-only narrow widths
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
//! Free-list tags: with a two-bit tag, a pop that read the head and the top
//! slot's link is descheduled while three updates (a pop, a pop, a push)
//! carry the tag through its maximum back past zero and leave the same slot
//! on top. Fewer than 2^2 updates: the tag differs and the pop's CAS fails,
//! as it must. (Exactly 2^bits updates within one pop's window is the
//! documented bound, where a stale link would be installed: no model here
//! reaches it, since the production tag makes it unreachable in practice.)
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{assert_clean, builder, model, race_point, Log, Tracked};
use sessionreg::{Reason, Registry, Rejection, SessionId, Termination};

/// One slot whose generation has one bit: it comes back every two reuses.
fn one_generation_bit(log: &std::sync::Arc<Log>) -> Registry<Tracked> {
    builder(log, 1).test_widths(1, 37).build().unwrap()
}

/// Ends `old` and then fills its slot twice (ending the first refill), so
/// that the slot's generation is the old id's again. Returns the id of the
/// last session, or `None` if a full registry stopped it (another thread
/// held the old session, and its slot was not free yet).
fn spawn_wrapper(
    registry: &Arc<Registry<Tracked>>,
    old: SessionId,
    values: [Tracked; 2],
) -> thread::JoinHandle<Option<SessionId>> {
    let registry = registry.clone();
    thread::spawn(move || {
        let _ = registry.terminate(&old, Reason::Deleted);
        let [second, third] = values;
        let between = registry.insert(second).ok()?;
        assert!(registry.terminate(&between, Reason::Deleted).is_won());
        registry.insert(third).ok()
    })
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
        let registry = Arc::new(one_generation_bit(&log));
        let old = registry.insert(log.value()).unwrap();
        let wrapper = spawn_wrapper(&registry, old, [log.value(), log.value()]);
        race_point();
        match registry.lookup(&old) {
            Ok(session) => {
                assert_eq!(session.read(), 0, "the old id returned another session");
                assert_eq!(session.id(), old);
            }
            // Ended, or the slot wrapped to another session of its
            // generation (whose secret is not the id's).
            Err(cause) => assert!(
                matches!(
                    cause,
                    Rejection::Stale | Rejection::Unknown | Rejection::Forged
                ),
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
        let registry = Arc::new(one_generation_bit(&log));
        let old = registry.insert(log.value()).unwrap();
        let wrapper = spawn_wrapper(&registry, old, [log.value(), log.value()]);
        race_point();
        let ended = registry.terminate(&old, Reason::Failed);
        assert!(
            matches!(
                ended,
                Termination::Won
                    | Termination::AlreadyTerminated
                    | Termination::Rejected(Rejection::Unknown | Rejection::Forged)
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

/// The ABA shape of `free_list.rs`'s `pop_racing_pop_pop_push`, with a
/// two-bit tag that the race carries through its maximum: the head's tag is
/// 3 (three pushes) when the two threads start; the main thread pops A and
/// B and pushes A back (tags 0, 1, 2) while the other thread's pop, which
/// read A on top with link B under tag 3, may be descheduled in between.
/// Its CAS must fail (tag 2, not 3), and it must never hand out B, which is
/// in use.
#[test]
fn a_pop_across_a_tag_wrap_never_installs_a_stale_link() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(builder(&log, 3).test_widths(30, 2).build().unwrap());
        // Three fresh slots, then three pushes: tag 3, the two-bit maximum.
        let ids: Vec<_> = (0..3)
            .map(|_| registry.insert(log.value()).unwrap())
            .collect();
        for id in &ids {
            assert!(registry.terminate(id, Reason::Deleted).is_won());
        }
        let value = log.value();

        let popper = {
            let registry = registry.clone();
            thread::spawn(move || {
                let serial = value.serial();
                let id = registry.insert(value).expect("a free slot was lost");
                assert_eq!(registry.get(&id).unwrap().read(), serial);
                id
            })
        };
        race_point();
        let a = registry.insert(log.value()).expect("a free slot was lost");
        let b = registry.insert(log.value()).expect("a free slot was lost");
        assert!(registry.terminate(&a, Reason::Deleted).is_won());
        let c = popper.join().unwrap();

        // b and c were live together: different slots, each its own value.
        assert_ne!(slot_of(&b), slot_of(&c), "one slot handed out twice");
        assert_eq!(registry.get(&b).unwrap().id(), b);
        assert_eq!(registry.get(&c).unwrap().id(), c);
        assert_eq!(registry.len(), 2);
        for id in [b, c] {
            assert!(registry.terminate(&id, Reason::Deleted).is_won());
        }
        assert_clean(&registry, &log);
    });
}

/// The slot half of an id's text form (node, generation, index).
fn slot_of(id: &SessionId) -> String {
    id.to_string()[..16].to_string()
}

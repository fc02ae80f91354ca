//! The free list under insert/terminate churn: concurrent pops and pushes on
//! one shard's list lose no slot and hand none out twice (ABA included).
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{
    assert_clean, builder, end_all_and_assert_clean, model, race_point, registry, Log, Tracked,
};
use sessionreg::{Reason, Registry, SessionId, Termination};

/// The slot half of an id's text form (node, generation, index).
fn slot_of(id: &SessionId) -> String {
    id.to_string()[..16].to_string()
}

/// Fills and empties the registry, so every slot is on the free list.
fn with_every_slot_freed(registry: &Registry<Tracked>, log: &std::sync::Arc<Log>) {
    let ids: Vec<_> = (0..registry.capacity())
        .map(|_| registry.insert(log.value()).unwrap())
        .collect();
    for id in &ids {
        assert_eq!(registry.terminate(id, Reason::Deleted), Termination::Won);
    }
}

/// One session's life: insert (a pop), look it up, end it (a push).
fn life(registry: &Registry<Tracked>, value: Tracked) -> SessionId {
    let serial = value.serial();
    let id = registry.insert(value).expect("a free slot was lost");
    let session = registry.get(&id).expect("our own session");
    assert_eq!(session.read(), serial, "our slot holds another value");
    drop(session);
    assert_eq!(registry.terminate(&id, Reason::Deleted), Termination::Won);
    id
}

/// Two threads each pop and push a slot of a two-slot list.
#[test]
fn two_threads_churn_two_slots() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(registry(&log, 2, false));
        with_every_slot_freed(&registry, &log);
        let value = log.value();

        let other = {
            let registry = registry.clone();
            thread::spawn(move || life(&registry, value))
        };
        race_point();
        let here = life(&registry, log.value());
        let there = other.join().unwrap();
        assert_ne!(here, there);
        assert_clean(&registry, &log);
    });
}

/// The ABA shape: one thread pops (reads top A and its link B) while the
/// other pops A and B and pushes A back. A pop that CASed the head from A to
/// B then would hand out B, which is in use. The head's tag prevents it.
#[test]
fn pop_racing_pop_pop_push() {
    model(|| {
        let log = Log::new();
        pop_racing_pop_pop_push_in(registry(&log, 3, false), &log);
    });
}

/// The same with a two-bit tag (`Builder::test_widths`), which the race
/// carries through its maximum: three pushes leave the head's tag at 3 when
/// the threads start, and the pop, pop and push in the other pop's window
/// take it to 0, 1 and 2. Fewer than 2^2 updates: the descheduled pop's CAS
/// still fails, as it must. (Exactly 2^bits updates within one pop's
/// window is the documented bound, where a stale link would be installed:
/// no model reaches it.) Fails if `Wrap::next` wraps at the maximum instead
/// of past it (the tag then comes back after three updates); the 37-bit
/// model above does not see that.
#[test]
fn pop_racing_pop_pop_push_across_a_tag_wrap() {
    model(|| {
        let log = Log::new();
        let narrow = builder(&log, 3).test_widths(30, 2).build().unwrap();
        pop_racing_pop_pop_push_in(narrow, &log);
    });
}

/// The ABA race on `registry` (three slots, one shard), all of them free.
fn pop_racing_pop_pop_push_in(registry: Registry<Tracked>, log: &std::sync::Arc<Log>) {
    let registry = Arc::new(registry);
    with_every_slot_freed(&registry, log);
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
    assert_eq!(registry.terminate(&a, Reason::Deleted), Termination::Won);
    let c = popper.join().unwrap();

    // b and c were live together: different slots, each its own value.
    assert_ne!(slot_of(&b), slot_of(&c), "one slot handed out twice");
    // Values 0 to 2 filled the slots before; 3 is the popper's, 4 and 5 ours.
    end_all_and_assert_clean(&registry, log, &[(b, 5), (c, 3)]);
}

//! What the task store and the handles promise about ids that are not
//! theirs, or no longer theirs: a store settles only its own tasks, and an
//! id is answered "ended" (a task "expired", a handle `Ended`, a lookup
//! `Miss::Stale`) only when its secret shows it was minted here; anything
//! else is as unknown as a guess.

use sessionreg::handles::{Handles, Resolved};
use sessionreg::{Ended, Miss, Reason, Registry, SessionId, Settled, TaskStore};

/// `id` with one bit of its secret flipped: the right slot and generation,
/// a wrong secret.
fn forged(id: SessionId) -> SessionId {
    let mut bytes = id.to_bytes();
    bytes[23] ^= 1;
    SessionId::from_bytes(bytes)
}

#[test]
fn a_store_refuses_to_settle_a_task_of_another_store() {
    let owner: TaskStore<u8, ()> = TaskStore::builder().build().unwrap();
    let other: TaskStore<u8, ()> = TaskStore::builder().build().unwrap();
    let running = owner.create(1).unwrap();
    let task = owner.get(&running.id()).unwrap();

    let settled = other.settle(&task, Ended::Cancelled);
    assert!(!settled.is_won(), "another store settled the task");
    assert_eq!(settled, Settled::Foreign(Ended::Cancelled));
    assert!(task.outcome().is_none(), "the task ended by another store");
    assert_eq!(
        other.stats().ended_total(),
        0,
        "counted an end it never created"
    );
    assert_eq!(owner.stats().running(), 1);

    // Its own store still ends it, once, and counts it.
    assert!(owner.settle(&task, Ended::Cancelled).is_won());
    assert!(!running.finish(Ended::Completed(())).is_won());
    assert_eq!(owner.stats().ended_total(), 1);
    assert_eq!(owner.stats().running(), 0);
}
/// The registry: an id whose generation is behind its slot's is `Stale`
/// only with its own secret; with a wrong one it is `Forged`; and once the
/// slot has moved on too far to check the secret, `Unknown`.
#[test]
fn an_ended_id_is_stale_only_with_its_own_secret() {
    let registry = Registry::builder().capacity(1).shards(1).build().unwrap();
    let first = registry.insert(()).unwrap();
    assert!(registry.terminate(&first, Reason::Deleted).is_won());
    // The slot is free, one generation on.
    assert_eq!(registry.lookup(&first).unwrap_err(), Miss::Stale);
    assert_ne!(registry.lookup(&forged(first)).unwrap_err(), Miss::Stale);
    // Reused: the old id is one generation behind.
    let second = registry.insert(()).unwrap();
    assert_eq!(registry.lookup(&first).unwrap_err(), Miss::Stale);
    assert_eq!(registry.lookup(&forged(first)).unwrap_err(), Miss::Forged);
    // Held while it ends: the whole secret is still there to compare.
    let held = registry.get(&second).unwrap();
    assert!(registry.terminate(&second, Reason::Deleted).is_won());
    assert_eq!(registry.lookup(&second).unwrap_err(), Miss::Stale);
    assert_eq!(registry.lookup(&forged(second)).unwrap_err(), Miss::Forged);
    drop(held);
    // Two generations on, the first id can no longer be checked.
    let third = registry.insert(()).unwrap();
    assert_eq!(registry.lookup(&first).unwrap_err(), Miss::Unknown);
    assert_eq!(registry.lookup(&forged(first)).unwrap_err(), Miss::Unknown);
    assert_eq!(registry.lookup(&second).unwrap_err(), Miss::Stale);
    assert!(registry.get(&third).is_some());

    let stats = registry.stats();
    assert_eq!(stats.misses(Miss::Stale), 4);
    assert_eq!(stats.misses(Miss::Forged), 3);
    assert_eq!(stats.misses(Miss::Unknown), 2);
}

/// A handle id forged at a generation its slot has passed resolves
/// `Unknown`, like any guess, not `Ended`.
#[test]
fn a_forged_old_handle_is_unknown_and_a_real_one_ended() {
    let handles: Handles<u8, ()> = Handles::builder().capacity(1).build().unwrap();
    let old = handles.mint(1, ()).unwrap();
    assert!(handles.destroy(&old, &1));
    assert!(matches!(handles.resolve(&old, &1), Resolved::Ended));
    assert!(matches!(
        handles.resolve(&forged(old), &1),
        Resolved::Unknown
    ));
    let new = handles.mint(1, ()).unwrap();
    assert!(matches!(handles.resolve(&old, &1), Resolved::Ended));
    assert!(matches!(
        handles.resolve(&forged(old), &1),
        Resolved::Unknown
    ));
    assert!(matches!(handles.resolve(&new, &1), Resolved::Found(_)));
}

/// A task id forged at a generation its slot has passed is not found, like
/// any guess; the real one has expired.
#[test]
fn a_forged_old_task_is_not_found_and_a_real_one_expired() {
    let store: TaskStore<u8, ()> = TaskStore::builder().capacity(1).shards(1).build().unwrap();
    let running = store.create(1).unwrap();
    let old = running.id();
    drop(running);
    assert_eq!(store.shutdown(), 1);
    assert_eq!(store.get(&old).unwrap_err(), Miss::Stale);
    assert_ne!(store.get(&forged(old)).unwrap_err(), Miss::Stale);
    let _new = store.create(2).unwrap();
    assert_eq!(store.get(&old).unwrap_err(), Miss::Stale);
    assert_ne!(store.get(&forged(old)).unwrap_err(), Miss::Stale);
}

/// A handle ended by its lifetime (the reaper's sweep, as a server runs
/// it) answers the same: `Ended` to its real id, `Unknown` to a forged one.
#[test]
fn a_forged_handle_ended_by_its_lifetime_is_unknown() {
    let handles: Handles<u8, ()> = Handles::builder()
        .capacity(4)
        .lifetime(std::time::Duration::from_millis(20))
        .build()
        .unwrap();
    let old = handles.mint(1, ()).unwrap();
    // A sweep makes a rough activity stamp exact before it can expire it:
    // sweep until the handle is gone.
    for _ in 0..200 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        if handles.reap() == 1 {
            break;
        }
    }
    assert!(handles.is_empty());
    assert!(matches!(handles.resolve(&old, &1), Resolved::Ended));
    assert!(matches!(
        handles.resolve(&forged(old), &1),
        Resolved::Unknown
    ));
}

//! Insert is lock-free: it never waits for a handle that is freeing a slot.
//!
//! A handle that is the last one out of an ended session pushes the slot on
//! its free list first and frees it (`FREE(g+1)`) second, with a CAS. An
//! insert that pops the slot in between finds it still `TERMINATED(g, 0)`
//! and frees it itself, after counting a debt in the storage's `pending`
//! count; the handle's CAS then finds it was helped and pays the debt
//! (`Lifecycle::try_help`, `finish_free`, `Storage::help`). These models
//! race exactly that, at capacity 1 so that the insert can only get the
//! handle's slot: the insert gets it, the session in it is a new generation
//! (the old id is stale, not forged), the old value is dropped once, and the
//! storage and its pages are freed exactly once, also when the registry is
//! dropped while the handle is still freeing the slot.
//!
//! Both fail if the popper does not help (treats the popped slot as free
//! and publishes over `TERMINATED(g, 0)`: the new session takes the old
//! generation, and the handle pays a debt nobody counted) or if the handle
//! does not pay the debt it finds (`Finished::Helped` ignored: the storage
//! leaks).
#![cfg(sessionreg_loom)]

use loom::thread;
use loom_tests::{assert_clean, model, race_point, registry, Log, StorageWatch, Tracked};
use sessionreg::{Miss, Reason, Registry, SessionId};

/// A one-slot registry whose session (value 0) has ended while a handle
/// still holds it; another thread drops that handle (the last one out)
/// while this one inserts value 1, trying again (after letting the other
/// thread run) while the registry is full. An attempt before the handle has
/// pushed the slot finds every slot in use, rightly; one after the push
/// must succeed without waiting for the handle's last step. Returns the
/// registry, the old and the new id, and the handle's thread.
fn insert_while_the_last_handle_frees(
    log: &std::sync::Arc<Log>,
) -> (
    Registry<Tracked>,
    SessionId,
    SessionId,
    thread::JoinHandle<()>,
) {
    let registry = registry(log, 1, false);
    let old = registry.insert(log.value()).unwrap();
    let handle = registry.get(&old).unwrap();
    assert!(registry.terminate(&old, Reason::Deleted).is_won());
    let mut value = log.value();

    let holder = thread::spawn(move || {
        assert_eq!(handle.read(), 0);
        drop(handle);
    });
    race_point();
    let new = loop {
        match registry.insert(value) {
            Ok(id) => break id,
            Err(e) => {
                value = e.into_inner();
                thread::yield_now();
            }
        }
    };
    (registry, old, new, holder)
}

/// The insert gets the slot, under a new generation.
#[test]
fn an_insert_takes_the_slot_a_handle_is_freeing() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let (registry, old, new, holder) = insert_while_the_last_handle_frees(&log);
        holder.join().unwrap();

        assert_eq!(log.drops(0), 1);
        let session = registry.get(&new).expect("the new session");
        assert_eq!(session.read(), 1);
        drop(session);
        // The slot moved on a generation: the old id is stale.
        assert_eq!(registry.lookup(&old).map(drop), Err(Miss::Stale));
        assert!(registry.terminate(&new, Reason::Deleted).is_won());
        log.assert_all_dropped_once();
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

/// As above, and the registry is dropped right after the insert, perhaps
/// while the handle has not made its last step: the handle's debt (or its
/// orphaned slot) keeps the storage until it is done, and then exactly one
/// party frees it.
#[test]
fn the_registry_drops_while_a_handle_is_freeing_its_slot() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let (registry, old, new, holder) = insert_while_the_last_handle_frees(&log);
        drop(registry);
        holder.join().unwrap();

        log.assert_all_dropped_once();
        let closes: Vec<_> = log
            .closes()
            .iter()
            .map(|c| (c.id, c.serial, c.reason))
            .collect();
        assert_eq!(
            closes,
            [(old, 0, Reason::Deleted), (new, 1, Reason::Shutdown)]
        );
        watch.assert_freed();
    });
}

//! Capacity across shards: an insert fails only if every slot was in use at
//! one instant during the call, however the free slots fall over the shards.
//!
//! With one shard, one free list holds every free slot (most models use
//! one). Here there are two shards of one slot each (capacity 2): an insert
//! looks at its home shard, then the other, and must not miss a slot freed
//! in a shard it has already looked at while another insert took the slot
//! it was about to look at. Each model is built so that while any insert
//! runs, at least one slot is free until that insert takes it; so no insert
//! may be refused.
//!
//! The first two models fail on the core as of 222f377 (found by loom, one
//! preemption each): the main thread's insert is refused although a slot
//! was free at every instant. Its second look at shard 0's free-list head is
//! an Acquire load that nothing orders after the other thread's push there:
//! it has seen shard 1's slot taken (through `Shard::fresh`, a Relaxed CAS,
//! or a free-list pop, an Acquire-only CAS), which that thread did *after*
//! its push, but neither write releases the push, so the load may still
//! return the old, empty head, and "every head unchanged" proves nothing.
//! (Impossible on x86-64, whose RMWs are full fences; allowed by the Rust
//! memory model and on AArch64.) Making the fresh-slot CAS AcqRel (its loads
//! Acquire) and the pop's CAS AcqRel makes all three models pass; each
//! change alone fixes one of the two. (The core now makes every push, pop,
//! fresh take and the check's loads SeqCst instead: see
//! `Shards::allocate_elsewhere`.)
//!
//! The same two models fail, at one preemption, if `allocate_elsewhere`
//! looks at every shard only once (no second look at the heads): the main
//! insert finds shard 0 full, the other thread then ends the session there
//! and takes shard 1's slot, and the main insert, finding shard 1 taken,
//! gives up although shard 0 has had a free slot since.
#![cfg(sessionreg_loom)]

use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;
use loom_tests::{
    builder, end_all_and_assert_clean, model, race_point, wait_for, Log, StorageWatch, Tracked,
};
use sessionreg::{Reason, Registry, SessionId};
use std::sync::atomic::Ordering::Release;

/// Two shards of one slot each. The thread that builds it first inserts
/// (the model's main thread) gets thread id 0, so its home shard is 0; the
/// first thread it spawns that touches the registry gets 1, home shard 1.
fn two_shards(log: &std::sync::Arc<Log>) -> Registry<Tracked> {
    builder(log, 2).shards(2).build().unwrap()
}

/// Inserts, and says which value came back if refused.
fn insert(registry: &Registry<Tracked>, value: Tracked) -> SessionId {
    match registry.insert(value) {
        Ok(id) => id,
        Err(e) => panic!(
            "insert of value {} refused while a slot was free",
            e.into_inner().serial()
        ),
    }
}

/// One thread ends the session in shard 0 and then inserts (taking the free
/// slot of its home shard 1), while the main thread (home shard 0) inserts.
/// The main insert may find shard 0 full, then shard 1 taken: by then shard
/// 0 has a free slot again, and it must look again and take it. At every
/// instant one slot is free for each insert: before the end, shard 1's; after
/// it, shard 0's too, of which the other insert takes one.
#[test]
fn an_insert_takes_a_slot_freed_behind_it() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(two_shards(&log));
        // The main thread's first insert: thread id 0, home shard 0.
        let first = insert(&registry, log.value());
        let (theirs, ours) = (log.value(), log.value());

        let other = {
            let registry = registry.clone();
            thread::spawn(move || {
                assert!(registry.terminate(&first, Reason::Deleted).is_won());
                insert(&registry, theirs)
            })
        };
        race_point();
        let here = insert(&registry, ours);
        let there = other.join().unwrap();

        end_all_and_assert_clean(&registry, &log, &[(here, 2), (there, 1)]);
        drop(registry);
        watch.assert_freed();
    });
}

/// As [`an_insert_takes_a_slot_freed_behind_it`], with every slot used once
/// before, so that the other thread takes shard 1's slot from its free list
/// (a pop) rather than fresh.
#[test]
fn an_insert_takes_a_slot_freed_behind_it_from_a_free_list() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(two_shards(&log));
        // Shard 0's slot, then (shard 0 full) shard 1's, which goes back on
        // shard 1's free list.
        let first = insert(&registry, log.value());
        let second = insert(&registry, log.value());
        assert!(registry.terminate(&second, Reason::Deleted).is_won());
        let (theirs, ours) = (log.value(), log.value());

        let other = {
            let registry = registry.clone();
            thread::spawn(move || {
                assert!(registry.terminate(&first, Reason::Deleted).is_won());
                insert(&registry, theirs)
            })
        };
        race_point();
        let here = insert(&registry, ours);
        let there = other.join().unwrap();

        end_all_and_assert_clean(&registry, &log, &[(here, 3), (there, 2)]);
    });
}

/// Three threads: one ends the first session (shard 0) and then says so;
/// one inserts whenever it likes; one inserts only after the end (the flag
/// orders "free before take", so two inserts never want the two slots
/// while the first session still holds one). Each insert, while it runs,
/// has a slot free until it takes one, whichever shard it looks at first:
/// neither may be refused.
#[test]
fn two_inserts_and_an_end_across_two_shards() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(two_shards(&log));
        let first = insert(&registry, log.value());
        let freed = Arc::new(AtomicBool::new(false));
        let (early, late) = (log.value(), log.value());

        let ender = {
            let (registry, freed) = (registry.clone(), freed.clone());
            thread::spawn(move || {
                assert!(registry.terminate(&first, Reason::Deleted).is_won());
                freed.store(true, Release);
            })
        };
        let waiter = {
            let (registry, freed) = (registry.clone(), freed.clone());
            thread::spawn(move || {
                wait_for(&freed);
                insert(&registry, late)
            })
        };
        race_point();
        let here = insert(&registry, early);
        ender.join().unwrap();
        let there = waiter.join().unwrap();

        end_all_and_assert_clean(&registry, &log, &[(here, 1), (there, 2)]);
    });
}

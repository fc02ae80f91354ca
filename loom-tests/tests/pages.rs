//! Pages of slots are installed on first use, by whichever insert takes a
//! fresh slot of a page nobody has installed yet, while lookups may index
//! into the page table at any time. A lookup sees a page whole (its slots
//! initialised) or not at all, two inserts that both want one page agree on
//! one (the other is freed at once), and every page is freed exactly once
//! ([`StorageWatch`]).
#![cfg(sessionreg_loom)]

use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;
use loom_tests::{
    builder, end_all_and_assert_clean, model, race_point, registry, Log, StorageWatch, Tracked,
};
use sessionreg::{Miss, Registry, SessionId};
use std::sync::atomic::Ordering::Relaxed;

/// An id for the slot at global `index`, generation 0, with a secret no
/// session has: what an attacker probing slots would send.
fn probe(index: u64) -> SessionId {
    let mut bytes = [0; 24];
    bytes[..8].copy_from_slice(&index.to_be_bytes());
    bytes[16..].copy_from_slice(&0x5EC2E7_u64.to_be_bytes());
    SessionId::from_bytes(bytes)
}

/// A probe finds nothing: no page yet, a slot never used, or a session
/// whose secret it does not have.
fn assert_probe_rejected(registry: &Registry<Tracked>, index: u64) {
    let found = registry.lookup(&probe(index)).map(|s| s.read());
    assert!(
        matches!(found, Err(Miss::Unknown | Miss::Forged)),
        "a probe of slot {index}: {found:?}"
    );
}

/// Two shards of one slot each, nothing installed: each thread's insert
/// installs its home shard's page (the main thread takes thread id 0, home
/// shard 0, by its first lookup; the other gets id 1, shard 1) while the
/// other thread probes that slot, and the main thread also looks up the
/// other's session by its real id, which reaches it through a `std` mutex
/// loom does not see: the only order between the install and the lookup is
/// the page table's own (Release install, Acquire load). A page a lookup
/// finds has its slots initialised: loom reports any access to a slot's
/// atomics or value that its creation does not happen before (seen failing
/// with the page pointer loaded Relaxed).
#[test]
fn lookups_racing_page_installs_in_two_shards() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(builder(&log, 2).shards(2).build().unwrap());
        // Thread id 0 for this thread; no page is installed by a lookup.
        assert_probe_rejected(&registry, 0);
        let mailbox = std::sync::Arc::new(std::sync::Mutex::new(None));
        let posted = Arc::new(AtomicBool::new(false));
        let (theirs, ours) = (log.value(), log.value());

        let other = {
            let (registry, mailbox, posted) = (registry.clone(), mailbox.clone(), posted.clone());
            thread::spawn(move || {
                let id = registry.insert(theirs).unwrap();
                *mailbox.lock().unwrap() = Some(id);
                posted.store(true, Relaxed);
                assert_probe_rejected(&registry, 0);
                id
            })
        };
        race_point();
        let here = registry.insert(ours).unwrap();
        assert_probe_rejected(&registry, 1);
        if posted.load(Relaxed) {
            let there = mailbox.lock().unwrap().expect("posted after it was set");
            if let Some(session) = registry.get(&there) {
                assert_eq!(session.id(), there);
                assert_eq!(session.read(), 0, "a session on a page not all there");
            }
        }
        let there = other.join().unwrap();

        end_all_and_assert_clean(&registry, &log, &[(here, 1), (there, 0)]);
        drop(registry);
        watch.assert_freed();
    });
}

/// One shard, one page of two slots, not installed yet: two inserts take
/// the two fresh slots at once and may both build the page. One install
/// wins; the other thread uses the winner's page and frees its own. Both
/// sessions are found, whole, in one page, and every page built is freed
/// once (seen failing with the install a plain store: the second page
/// replaced the first, which leaked).
#[test]
fn two_inserts_install_one_page() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 2, false));
        let (theirs, ours) = (log.value(), log.value());

        let other = {
            let registry = registry.clone();
            thread::spawn(move || registry.insert(theirs).unwrap())
        };
        race_point();
        let here = registry.insert(ours).unwrap();
        let there = other.join().unwrap();

        end_all_and_assert_clean(&registry, &log, &[(here, 1), (there, 0)]);
        drop(registry);
        watch.assert_freed();
    });
}

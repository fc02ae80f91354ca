//! Handles (`handles.rs`) racing their expiry, their destroy and their
//! slot's reuse: a handle found in use is never reaped; one that has
//! expired or was destroyed resolves `Ended` (its id's secret checked,
//! against the handle's own or the digest its slot keeps of it), never
//! `Unknown` and never another handle; a mint at capacity takes the slot a
//! destroy frees, or hands its value back.
//!
//! A resolve is a lookup (which itself expires a handle it finds idle)
//! followed by `begin`, which counts the call in flight unless the handle
//! is being expired; the reaper closes an idle handle (nothing in flight)
//! before it ends it. So between the two steps of a resolve the reaper may
//! close the handle, and the resolve must then answer `Ended`, not hand out
//! a handle about to end.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{model, race_point, Log, StorageWatch, Tracked};
use sessionreg::handles::{Handles, Resolved};
use sessionreg::{ManualClock, Reason};
use std::time::Duration;

/// Who the handle was minted for.
const OWNER: u8 = 7;

/// The handle's lifetime: one tick of the manual clock.
const LIFETIME: Duration = Duration::from_millis(1);

/// The handle has just outlived its lifetime unused when the reaper starts;
/// its owner resolves it on the main thread meanwhile. Either the resolve
/// finds it and holds it in use: then the reaper ended nothing, the handle
/// is not terminated under its holder, a sweep while it is held ends
/// nothing, and after the call its lifetime starts again (it resolves
/// again, and its owner can destroy it). Or the resolve answers `Ended`
/// (the reaper, or the resolve's own lookup, expired it): one end, for
/// idleness. Never `Unknown`. Afterwards every resolve is `Ended`, the
/// value has been dropped once, and the storage is freed with the store.
///
/// Fails if `Handles::resolve` answers a lookup that found the handle
/// expired as `Unknown`.
#[test]
fn a_handle_in_use_is_never_reaped_and_an_expired_one_resolves_ended() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let handles = Arc::new(
            Handles::<u8, Tracked>::builder()
                .capacity(1)
                .lifetime(LIFETIME)
                .manual_clock(&clock)
                .build()
                .expect("a valid configuration"),
        );
        watch.assert_allocated();
        let id = handles.mint(OWNER, log.value()).unwrap();
        clock.advance(LIFETIME);

        let reaper = {
            let handles = handles.clone();
            thread::spawn(move || handles.reap())
        };
        race_point();
        let resolved = handles.resolve(&id, &OWNER);
        let reaped = reaper.join().unwrap();

        match resolved {
            Resolved::Found(in_use) => {
                assert_eq!(reaped, 0, "the reaper ended a handle in use");
                assert!(!in_use.is_terminated(), "ended under its holder");
                assert_eq!(in_use.value().read(), 0);
                assert_eq!(handles.reap(), 0, "a handle in use was reaped");
                drop(in_use);
                assert!(matches!(handles.resolve(&id, &OWNER), Resolved::Found(_)));
                assert!(handles.destroy(&id, &OWNER));
                assert_eq!(handles.stats().terminated(Reason::Deleted), 1);
            }
            Resolved::Ended => {
                assert!(reaped <= 1);
                let stats = handles.stats();
                assert_eq!(stats.terminated(Reason::IdleTimeout), 1, "{stats:?}");
            }
            Resolved::Unknown => panic!("a minted handle, expired, resolved as unknown"),
        }
        assert!(matches!(handles.resolve(&id, &OWNER), Resolved::Ended));
        assert_eq!(handles.stats().terminated_total(), 1);
        assert!(handles.is_empty());
        log.assert_all_dropped_once();
        drop(handles);
        watch.assert_freed();
    });
}

/// A one-slot store of handles on a manual clock (its handles never expire
/// in these models: the clock does not move).
fn one_slot(clock: &ManualClock) -> Arc<Handles<u8, Tracked>> {
    Arc::new(
        Handles::<u8, Tracked>::builder()
            .capacity(1)
            .lifetime(LIFETIME)
            .manual_clock(clock)
            .build()
            .expect("a valid configuration"),
    )
}

/// At capacity (one slot), a mint races the destroy of the one handle:
/// the mint takes the slot the destroy frees, or finds none yet and hands
/// its value back (then a mint afterwards succeeds). The new handle is
/// never the old one: the old id resolves `Ended` (its secret checked
/// against the slot's record of it), the new one `Found` with its own
/// value.
#[test]
fn a_mint_at_capacity_racing_a_destroy() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let handles = one_slot(&clock);
        let old = handles.mint(OWNER, log.value()).unwrap();
        let value = log.value();

        let destroyer = {
            let handles = handles.clone();
            thread::spawn(move || handles.destroy(&old, &OWNER))
        };
        race_point();
        let minted = handles.mint(OWNER, value);
        assert!(
            destroyer.join().unwrap(),
            "the owner's destroy ended its handle"
        );
        let new = match minted {
            Ok(id) => id,
            Err(full) => handles
                .mint(OWNER, full.into_inner())
                .expect("the slot came back"),
        };

        assert_ne!(new, old);
        assert!(matches!(handles.resolve(&old, &OWNER), Resolved::Ended));
        match handles.resolve(&new, &OWNER) {
            Resolved::Found(handle) => assert_eq!(handle.value().read(), 1),
            other => panic!("the new handle: {other:?}"),
        }
        assert_eq!(log.drops(0), 1);
        assert!(handles.destroy(&new, &OWNER));
        log.assert_all_dropped_once();
        drop(handles);
        watch.assert_freed();
    });
}

/// The owner destroys its handle while a call resolves it: either the
/// resolve comes first and holds the handle in use (the destroy still ends
/// it; the holder keeps reading its value, which is dropped once the
/// holder lets go), or it finds the handle ended. The destroy wins exactly
/// once, and afterwards every resolve is `Ended`.
#[test]
fn destroy_racing_resolve() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let handles = one_slot(&clock);
        let id = handles.mint(OWNER, log.value()).unwrap();

        let destroyer = {
            let handles = handles.clone();
            thread::spawn(move || handles.destroy(&id, &OWNER))
        };
        race_point();
        match handles.resolve(&id, &OWNER) {
            Resolved::Found(in_use) => {
                assert_eq!(in_use.value().read(), 0);
                drop(in_use);
            }
            Resolved::Ended => {}
            Resolved::Unknown => panic!("a destroyed handle resolved as unknown"),
        }
        assert!(destroyer.join().unwrap(), "the destroy lost to nothing");

        assert!(matches!(handles.resolve(&id, &OWNER), Resolved::Ended));
        assert!(!handles.destroy(&id, &OWNER), "destroyed twice");
        let stats = handles.stats();
        assert_eq!(stats.terminated(Reason::Deleted), 1, "{stats:?}");
        assert_eq!(stats.terminated_total(), 1, "{stats:?}");
        log.assert_all_dropped_once();
        drop(handles);
        watch.assert_freed();
    });
}

/// A call resolves an old handle while another thread destroys it and
/// mints a new one, which takes its slot: the resolve finds the old handle
/// (its own value), or answers `Ended` (the old id's secret checked against
/// what the slot keeps of it); never the new handle, never `Unknown`.
#[test]
fn resolve_racing_the_reuse_of_its_slot() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let handles = one_slot(&clock);
        let old = handles.mint(OWNER, log.value()).unwrap();
        let value = log.value();

        let reuser = {
            let handles = handles.clone();
            thread::spawn(move || {
                assert!(handles.destroy(&old, &OWNER));
                // Boxed: a `Tracked` is 512 bytes (aligned so).
                handles
                    .mint(OWNER, value)
                    .map_err(|full| Box::new(full.into_inner()))
            })
        };
        race_point();
        match handles.resolve(&old, &OWNER) {
            Resolved::Found(in_use) => {
                assert_eq!(in_use.value().read(), 0, "resolved to another handle");
                drop(in_use);
            }
            Resolved::Ended => {}
            Resolved::Unknown => panic!("an old handle resolved as unknown"),
        }
        let new = match reuser.join().unwrap() {
            Ok(id) => id,
            // The resolve held the old handle when the mint looked.
            Err(value) => handles.mint(OWNER, *value).expect("the slot came back"),
        };

        assert!(matches!(handles.resolve(&old, &OWNER), Resolved::Ended));
        match handles.resolve(&new, &OWNER) {
            Resolved::Found(handle) => assert_eq!(handle.value().read(), 1),
            other => panic!("the new handle: {other:?}"),
        }
        assert!(handles.destroy(&new, &OWNER));
        log.assert_all_dropped_once();
        drop(handles);
        watch.assert_freed();
    });
}

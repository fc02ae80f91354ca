//! Handles (`handles.rs`) racing their expiry: a handle found in use is
//! never reaped, and one that has expired resolves `Ended`, never
//! `Unknown`.
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

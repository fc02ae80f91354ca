//! Panics in the code the registry calls (a value's `Drop`, the close
//! callback) never cost a slot, never stop a sweep from ending the other
//! sessions, and never leak the storage.
//!
//! Memory is checked with a counting allocator: the bytes this thread has
//! allocated and not freed must come back to where they were once the
//! registry and its handles are gone.

use sessionreg::{Reason, Registry, Termination};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

/// Counts, per thread, bytes allocated minus bytes freed.
struct Counting;

thread_local! {
    static NET: Cell<isize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counting touches only a
// const-initialised thread-local without a destructor (no allocation, and
// usable at any point of a thread's life).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = NET.try_with(|n| n.set(n.get() + layout.size() as isize));
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = NET.try_with(|n| n.set(n.get() - layout.size() as isize));
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The panics these tests provoke on purpose.
const PROVOKED: [&str; 3] = [
    "a value's Drop panicked",
    "on_close panicked",
    "the application panicked",
];

/// Runs `scenario` and checks that it left no memory allocated on this
/// thread. The default panic hook is replaced first: it would write each
/// message into the test harness's capture buffer, which grows and stays.
/// The new one is silent about the provoked panics and writes any other
/// (a failing assertion) straight to stderr.
fn leaves_nothing_allocated(scenario: impl FnOnce()) {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let message = info.payload().downcast_ref::<&str>().copied();
            if !message.is_some_and(|m| PROVOKED.contains(&m)) {
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "{info}");
            }
        }))
    });
    // Warm up what this thread keeps for its life (the thread-local secret
    // generator, allocated on its first use), so it is not counted below.
    let warm = Registry::builder().build().unwrap();
    warm.insert(()).unwrap();
    drop(warm);
    let before = NET.with(Cell::get);
    scenario();
    let after = NET.with(Cell::get);
    assert_eq!(after - before, 0, "bytes left allocated");
}

/// A value whose `Drop` panics, and counts that it ran.
struct Bomb {
    drops: Arc<AtomicUsize>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        panic!("a value's Drop panicked");
    }
}

fn bomb(drops: &Arc<AtomicUsize>) -> Bomb {
    Bomb {
        drops: Arc::clone(drops),
    }
}

#[test]
fn a_value_whose_drop_panics_costs_no_slot() {
    leaves_nothing_allocated(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let registry = Registry::builder().capacity(1).shards(1).build().unwrap();
        for _ in 0..3 {
            // Ended by id, nobody holding it: the registry drops the value.
            let id = registry.insert(bomb(&drops)).unwrap();
            let ended = catch_unwind(AssertUnwindSafe(|| {
                registry.terminate(&id, Reason::Deleted)
            }));
            assert!(ended.is_err(), "the value's panic propagates");
            assert_eq!(registry.len(), 0);
            assert!(registry.get(&id).is_none());
            // Ended while held: the handle drops the value.
            let id = registry.insert(bomb(&drops)).expect("the slot came back");
            let handle = registry.get(&id).unwrap();
            assert_eq!(registry.terminate(&id, Reason::Failed), Termination::Won);
            assert!(catch_unwind(AssertUnwindSafe(|| drop(handle))).is_err());
        }
        assert_eq!(drops.load(Ordering::SeqCst), 6, "each value dropped once");
        // The slot is free once more, and the registry goes cleanly.
        let id = registry.insert(bomb(&drops)).expect("the slot came back");
        assert!(registry.get(&id).is_some());
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(registry)));
        assert!(dropped.is_err(), "the last value's panic, raised again");
        assert_eq!(drops.load(Ordering::SeqCst), 7);
    });
}

/// A close callback that panics on the first session it closes, and counts
/// every call.
fn panics_on_the_first_close(
    closes: &Arc<AtomicUsize>,
) -> impl Fn(&sessionreg::SessionId, &Arc<AtomicUsize>, Reason) + Send + Sync + 'static {
    let closes = Arc::clone(closes);
    move |_, _, _| {
        if closes.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("on_close panicked");
        }
    }
}

/// Values that count their drops (without panicking).
fn counted(drops: &Arc<AtomicUsize>) -> Arc<AtomicUsize> {
    Arc::clone(drops)
}

#[test]
fn dropping_the_registry_closes_every_session_past_a_panicking_callback() {
    leaves_nothing_allocated(|| {
        let closes = Arc::new(AtomicUsize::new(0));
        let values = Arc::new(AtomicUsize::new(0));
        let registry = Registry::builder()
            .on_close(panics_on_the_first_close(&closes))
            .build()
            .unwrap();
        for _ in 0..5 {
            registry.insert(counted(&values)).unwrap();
        }
        // A handle outlives the registry: its storage must still go.
        let id = registry.insert(counted(&values)).unwrap();
        let held = registry.get(&id).unwrap();
        assert_eq!(Arc::strong_count(&values), 7);
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(registry)));
        assert!(dropped.is_err(), "the first panic is raised again");
        assert_eq!(closes.load(Ordering::SeqCst), 6, "every session closed");
        assert!(held.is_terminated());
        assert_eq!(Arc::strong_count(&values), 2, "every unheld value dropped");
        drop(held);
        assert_eq!(Arc::strong_count(&values), 1);
    });
}

#[test]
fn terminate_all_and_reap_idle_go_on_past_a_panicking_callback() {
    leaves_nothing_allocated(|| {
        let closes = Arc::new(AtomicUsize::new(0));
        let values = Arc::new(AtomicUsize::new(0));
        let clock = sessionreg::ManualClock::new();
        let registry = Registry::builder()
            .idle_timeout(Duration::from_secs(1))
            .manual_clock(&clock)
            .on_close(panics_on_the_first_close(&closes))
            .build()
            .unwrap();
        for _ in 0..4 {
            registry.insert(counted(&values)).unwrap();
        }
        clock.advance(Duration::from_secs(1));
        let reaped = catch_unwind(AssertUnwindSafe(|| registry.reap_idle()));
        assert!(
            reaped.is_err(),
            "the callback's panic comes out of the sweep"
        );
        assert_eq!(closes.load(Ordering::SeqCst), 4, "but only after all four");
        assert_eq!(registry.len(), 0);
        assert_eq!(registry.stats().terminated(Reason::IdleTimeout), 4);

        closes.store(0, Ordering::SeqCst);
        for _ in 0..4 {
            registry.insert(counted(&values)).unwrap();
        }
        let ended = catch_unwind(AssertUnwindSafe(|| {
            registry.terminate_all(Reason::Shutdown)
        }));
        assert!(ended.is_err());
        assert_eq!(closes.load(Ordering::SeqCst), 4);
        assert_eq!(registry.len(), 0);
        assert_eq!(Arc::strong_count(&values), 1, "every value dropped");
        // Every slot is free again.
        for _ in 0..registry.capacity() {
            registry.insert(counted(&values)).unwrap();
        }
    });
}

#[test]
fn a_panicking_callback_in_terminate_still_ends_the_session() {
    leaves_nothing_allocated(|| {
        let closes = Arc::new(AtomicUsize::new(0));
        let values = Arc::new(AtomicUsize::new(0));
        let registry = Registry::builder()
            .capacity(1)
            .on_close(panics_on_the_first_close(&closes))
            .build()
            .unwrap();
        let id = registry.insert(counted(&values)).unwrap();
        let ended = catch_unwind(AssertUnwindSafe(|| {
            registry.terminate(&id, Reason::Deleted)
        }));
        assert!(ended.is_err());
        assert_eq!(
            registry.terminate(&id, Reason::Deleted),
            Termination::AlreadyTerminated
        );
        assert_eq!(Arc::strong_count(&values), 1, "the value was dropped");
        registry
            .insert(counted(&values))
            .expect("the slot came back");
    });
}

/// A close callback that panics, for a value whose `Drop` panics too: two
/// panics, one after the other, on every way a session ends. Neither may
/// abort the process (a `Drop` that panics while a panic unwinds does),
/// the slot comes back, the value is dropped once, and the callback's panic
/// (the first) is the one that comes out.
#[test]
fn a_panicking_callback_for_a_value_whose_drop_panics_aborts_nothing() {
    leaves_nothing_allocated(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let clock = sessionreg::ManualClock::new();
        let registry = Registry::builder()
            .capacity(1)
            .shards(1)
            .idle_timeout(Duration::from_secs(1))
            .manual_clock(&clock)
            .on_close(|_, _: &Bomb, _| panic!("on_close panicked"))
            .build()
            .unwrap();
        fn first_panic<T: std::fmt::Debug>(result: std::thread::Result<T>) {
            let payload = result.expect_err("the callback's panic propagates");
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"on_close panicked"));
        }
        // Ended by id, nobody else holding it.
        let id = registry.insert(bomb(&drops)).unwrap();
        first_panic(catch_unwind(AssertUnwindSafe(|| {
            registry.terminate(&id, Reason::Deleted)
        })));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        // Reaped, and ended by a sweep.
        registry.insert(bomb(&drops)).expect("the slot came back");
        clock.advance(Duration::from_secs(1));
        first_panic(catch_unwind(AssertUnwindSafe(|| registry.reap_idle())));
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        registry.insert(bomb(&drops)).expect("the slot came back");
        first_panic(catch_unwind(AssertUnwindSafe(|| {
            registry.terminate_all(Reason::Shutdown)
        })));
        assert_eq!(drops.load(Ordering::SeqCst), 3);
        // Expired by a lookup.
        let id = registry.insert(bomb(&drops)).expect("the slot came back");
        clock.advance(Duration::from_secs(1));
        first_panic(catch_unwind(AssertUnwindSafe(|| {
            registry.lookup(&id).map(drop)
        })));
        assert_eq!(drops.load(Ordering::SeqCst), 4);
        assert_eq!(registry.len(), 0);
        // And with the registry's drop.
        registry.insert(bomb(&drops)).expect("the slot came back");
        first_panic(catch_unwind(AssertUnwindSafe(move || drop(registry))));
        assert_eq!(drops.load(Ordering::SeqCst), 5);
    });
}

/// The check given to `lookup_if` panics after the session it was shown
/// has ended (here the check ends it itself), and the value's `Drop`
/// panics too: letting go of the lookup's reference is the last one out.
/// No abort: the check's panic comes out, the value is dropped once and the
/// slot comes back.
#[test]
fn a_panicking_check_in_lookup_if_over_a_panicking_drop_aborts_nothing() {
    leaves_nothing_allocated(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let registry = Registry::builder().capacity(1).shards(1).build().unwrap();
        let id = registry.insert(bomb(&drops)).unwrap();
        let looked = catch_unwind(AssertUnwindSafe(|| {
            registry.lookup_if(&id, |_| {
                assert!(registry.terminate(&id, Reason::Deleted).is_won());
                panic!("the application panicked")
            })
        }));
        let payload = looked.map(drop).expect_err("the check's panic propagates");
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"the application panicked")
        );
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert_eq!(registry.len(), 0);
        registry.insert(bomb(&drops)).expect("the slot came back");
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(registry)));
        assert!(dropped.is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    });
}

/// A registry dropped while its thread is already unwinding must not panic
/// again (that would abort the process): its callbacks' panics are
/// swallowed there, and every session is still closed.
#[test]
fn a_registry_dropped_during_unwinding_swallows_its_callbacks_panics() {
    leaves_nothing_allocated(|| {
        let closes = Arc::new(AtomicUsize::new(0));
        let values = Arc::new(AtomicUsize::new(0));
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let registry = Registry::builder()
                .on_close(panics_on_the_first_close(&closes))
                .build()
                .unwrap();
            for _ in 0..3 {
                registry.insert(counted(&values)).unwrap();
            }
            panic!("the application panicked");
        }));
        let payload = outcome.unwrap_err();
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"the application panicked"),
            "the application's panic, not the callback's"
        );
        drop(payload);
        assert_eq!(closes.load(Ordering::SeqCst), 3);
        assert_eq!(Arc::strong_count(&values), 1);
    });
}

//! `insert_with`: a value made from its own id, before anyone can see it.

use sessionreg::{Reason, Registry, SessionId};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn the_value_knows_its_id_and_is_closed_with_it() {
    let closed = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&closed);
    let registry = Registry::builder()
        .on_close(move |id: &SessionId, value: &SessionId, reason| {
            assert_eq!(id, value);
            assert_eq!(reason, Reason::Deleted);
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    let id = registry.insert_with(|id| id).unwrap();
    assert_eq!(*registry.get(&id).unwrap(), id);
    assert!(registry.terminate(&id, Reason::Deleted).is_won());
    assert_eq!(closed.load(Ordering::SeqCst), 1);
}

#[test]
fn at_capacity_the_function_is_handed_back_uncalled() {
    let registry = Registry::builder().capacity(1).build().unwrap();
    registry.insert(String::from("first")).unwrap();
    let calls = AtomicUsize::new(0);
    let err = registry
        .insert_with(|_| {
            calls.fetch_add(1, Ordering::SeqCst);
            String::from("second")
        })
        .unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(err.to_string().contains("capacity (1 sessions)"), "{err}");
    // The function comes back, and still works.
    let make = err.into_inner();
    assert_eq!(make(SessionId::from_u128(0)), "second");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn a_panicking_function_costs_no_slot_and_creates_nothing() {
    let registry = Registry::builder().capacity(1).shards(1).build().unwrap();
    let leaked = AtomicUsize::new(0);
    for _ in 0..3 {
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            registry.insert_with(|id| -> u32 {
                leaked.store(id.to_u128() as usize, Ordering::SeqCst);
                panic!("cannot make the value")
            })
        }));
        assert!(panicked.is_err());
    }
    assert_eq!(registry.len(), 0);
    assert_eq!(registry.stats().created, 0);
    // The one slot is free again, and an id shown to the failed function
    // names nothing.
    let id = registry.insert_in_flight_with(|_| 7).unwrap().id();
    assert!(registry.get(&id).is_some());
    assert_eq!(registry.len(), 1);
}

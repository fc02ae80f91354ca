//! What the task store and the handles promise about ids that are not
//! theirs, or no longer theirs: a store settles only its own tasks, and an
//! id is answered "ended" (a task "expired", a handle `Ended`, a lookup
//! `Miss::Stale`) only when its secret shows it was minted here; anything
//! else is as unknown as a guess.

use sessionreg::{Ended, Settled, TaskStore};

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

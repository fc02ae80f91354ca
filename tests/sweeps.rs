//! Sweeps cost what is live, not every slot ever used: a page with nothing
//! live since a sweep saw it empty is skipped at the cost of one look, and
//! a budgeted step looks at no more than its budget (and the rest of the
//! page that crosses it), resuming where the last step stopped. (What a
//! step costs in time, at 2^16, 2^20 and 2^23 slots used once, is
//! `benches/sweep.rs`'s; these count what it looks at.)

use sessionreg::{ManualClock, Reason, Registry, SessionId, SweepStep, TaskStore};
use std::time::Duration;

/// Slots in a page of a registry with one shard and this capacity.
const PAGE: usize = 1024;
const PAGES: usize = 64;

/// A one-shard registry of `PAGES` pages, every slot used once (the
/// high-water mark is the capacity), with a 1 s idle timeout on `clock`;
/// the sessions `keep` says stay live, the others are ended.
fn used_once(clock: &ManualClock, keep: impl Fn(usize) -> bool) -> Registry<u32> {
    let registry = Registry::builder()
        .capacity(PAGES * PAGE)
        .shards(1)
        .idle_timeout(Duration::from_secs(1))
        .manual_clock(clock)
        .build()
        .unwrap();
    let ids: Vec<SessionId> = (0..PAGES * PAGE)
        .map(|n| registry.insert(n as u32).unwrap())
        .collect();
    for (n, id) in ids.iter().enumerate() {
        if !keep(n) {
            assert!(registry.terminate(id, Reason::Deleted).is_won());
        }
    }
    registry
}

/// Steps of `budget` until a pass is done: each step's cost, and the
/// sessions ended.
fn pass(registry: &Registry<u32>, budget: usize) -> (Vec<usize>, usize) {
    let (mut costs, mut ended) = (Vec::new(), 0);
    loop {
        let SweepStep {
            ended: n,
            looked,
            pass_done,
        } = registry.reap_idle_step(budget);
        costs.push(looked);
        ended += n;
        if pass_done {
            return (costs, ended);
        }
    }
}

#[test]
fn a_pass_over_pages_seen_empty_costs_a_look_each() {
    let clock = ManualClock::new();
    let registry = used_once(&clock, |_| false);
    // The first pass looks at every slot used (the pages held sessions
    // until a sweep saw them empty) ...
    let (costs, ended) = pass(&registry, 100 * PAGE);
    assert_eq!((costs.iter().sum::<usize>(), ended), (PAGES * PAGE, 0));
    // ... and records them empty: from then on a pass costs one look a page.
    let (costs, _) = pass(&registry, 100 * PAGE);
    assert_eq!(costs.iter().sum::<usize>(), PAGES);

    // One session, on some page: that page is looked at, the others not.
    let id = registry.insert(7).unwrap();
    let (costs, ended) = pass(&registry, 100 * PAGE);
    assert_eq!(ended, 0);
    let looked: usize = costs.iter().sum();
    assert!(looked > PAGES && looked <= PAGES - 1 + PAGE, "{looked}");
    // Idle past its timeout: the next pass ends it, where it is.
    clock.advance(Duration::from_secs(1));
    let (_, ended) = pass(&registry, 100 * PAGE);
    assert_eq!(ended, 1);
    assert!(registry.get(&id).is_none());
    assert_eq!(registry.reap_idle(), 0);
}

#[test]
fn a_step_looks_at_its_budget_and_the_rest_of_one_page_at_most() {
    let clock = ManualClock::new();
    // Every page holds a session (its first slot's).
    let registry = used_once(&clock, |n| n % PAGE == 0);
    assert_eq!(registry.len(), PAGES);
    for budget in [1, 100, PAGE, 3 * PAGE + 1] {
        clock.advance(Duration::from_millis(10));
        let (costs, _) = pass(&registry, budget);
        for cost in &costs {
            assert!(*cost < budget + PAGE, "a step of {budget} looked at {cost}");
        }
    }
    // Steps resume where the last one stopped: a pass covers every page
    // once, whatever the budget, and ends each idle session once.
    clock.advance(Duration::from_secs(1));
    let (_, ended) = pass(&registry, 7);
    assert_eq!(ended, PAGES);
    assert_eq!(registry.len(), 0);
}

/// A task store reaps in steps too: one task still running on a store whose
/// slots were all used once is found and left, what ended is freed.
#[test]
fn a_task_store_reaps_in_steps() {
    let clock = ManualClock::new();
    let store: TaskStore<u32, ()> = TaskStore::builder()
        .capacity(4 * PAGE)
        .shards(1)
        .retention(Duration::from_secs(1))
        .manual_clock(&clock)
        .build()
        .unwrap();
    let ended: Vec<_> = (0..4 * PAGE)
        .map(|n| store.create(n as u32).unwrap())
        .collect();
    drop(ended);
    assert_eq!(store.shutdown(), 4 * PAGE);
    let running = store.create(9).unwrap();
    clock.advance(Duration::from_secs(5));
    let mut freed = 0;
    loop {
        let step = store.reap_step(PAGE);
        assert!(step.looked < 2 * PAGE);
        freed += step.ended;
        if step.pass_done {
            break;
        }
    }
    assert_eq!(freed, 0, "running work is never freed");
    assert!(store.get(&running.id()).is_ok());
    drop(running);
    let mut freed = 0;
    for _ in 0..2 {
        loop {
            let step = store.reap_step(PAGE);
            freed += step.ended;
            if step.pass_done {
                break;
            }
        }
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(freed, 1);
}

//! One tick of the reaper (a budgeted step, [`SWEEP_BUDGET`] slots), and
//! one whole pass, on registries whose every slot was used once: 2^16,
//! 2^20 and 2^23 slots: what a sweep costs where the high-water mark is
//! far above the live sessions.
//!
//! Groups (ids are stable):
//!
//! * `tick_empty/<slots>`: a step of `reap_idle_step(SWEEP_BUDGET)` on a
//!   registry whose sessions have all ended, after the pass that saw its
//!   pages empty (the steady state of a server after a peak);
//! * `tick_live/<slots>`: the same, with one live session (not idle) on
//!   every page: no page can be skipped, the worst case for a step;
//! * `pass_empty/<slots>`: a whole `reap_idle()` on the emptied registry;
//! * `tasks_pass_one_running/<slots>`: a whole `TaskStore::reap()` with
//!   one task running, every other slot used once (the 12 ms at
//!   2^20).
//!
//! `cargo bench --bench sweep` (release; about 3 minutes; the 2^23
//! registry is some 320 MiB of slots).

use criterion::{criterion_group, criterion_main, Criterion};
use sessionreg::{Reason, Registry, SessionId, TaskStore, SWEEP_BUDGET};
use std::hint::black_box;
use std::time::Duration;

/// The high-water marks.
const SIZES: [(u32, usize); 3] = [(16, 1 << 16), (20, 1 << 20), (23, 1 << 23)];

/// Slots in a page (the registry's largest page).
const PAGE: usize = 1024;

/// A registry of `slots` slots, every one used once; the sessions `keep`
/// picks stay live (with an hour's idle timeout, none is idle), the others
/// are ended. Then one whole pass, which sees the emptied pages empty.
fn used_once(slots: usize, keep: impl Fn(usize) -> bool) -> Registry<()> {
    let registry = Registry::builder()
        .capacity(slots)
        .idle_timeout(Duration::from_secs(3600))
        .build()
        .unwrap();
    let ids: Vec<SessionId> = (0..slots).map(|_| registry.insert(()).unwrap()).collect();
    for (n, id) in ids.iter().enumerate() {
        if !keep(n) {
            assert!(registry.terminate(id, Reason::Deleted).is_won());
        }
    }
    assert_eq!(registry.reap_idle(), 0);
    registry
}

fn sweeps(c: &mut Criterion) {
    for (bits, slots) in SIZES {
        let mut group = c.benchmark_group("sweep");
        group
            .sample_size(20)
            .measurement_time(Duration::from_secs(3));

        let registry = used_once(slots, |_| false);
        group.bench_function(format!("tick_empty/2^{bits}"), |b| {
            b.iter(|| black_box(registry.reap_idle_step(SWEEP_BUDGET)))
        });
        group.bench_function(format!("pass_empty/2^{bits}"), |b| {
            b.iter(|| black_box(registry.reap_idle()))
        });
        drop(registry);

        // The sessions inserted first are spread over every page of every
        // shard (each shard hands out its fresh slots in order).
        let registry = used_once(slots, |n| n % PAGE == 0);
        group.bench_function(format!("tick_live/2^{bits}"), |b| {
            b.iter(|| black_box(registry.reap_idle_step(SWEEP_BUDGET)))
        });
        drop(registry);

        if bits == 20 {
            let store: TaskStore<(), ()> = TaskStore::builder()
                .capacity(slots)
                .retention(Duration::from_secs(3600))
                .build()
                .unwrap();
            let ended: Vec<_> = (0..slots).map(|_| store.create(()).unwrap()).collect();
            drop(ended);
            assert_eq!(store.shutdown(), slots);
            let running = store.create(()).unwrap();
            group.bench_function(format!("tasks_pass_one_running/2^{bits}"), |b| {
                b.iter(|| black_box(store.reap()))
            });
            drop(running);
        }
        group.finish();
    }
}

criterion_group!(benches, sweeps);
criterion_main!(benches);

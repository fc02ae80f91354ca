//! Issue 20: a task store's two hot workloads on top of 1k, 10k and 100k
//! running tasks, for `sessionreg::TaskStore`, rmcp 3.11's `TaskManager`
//! and `moka::sync::Cache` (with `time_to_idle`), in one run. What each
//! peer's iteration includes is in the crate's docs (`src/lib.rs`); the
//! tables are made by `benches/tasks/ratios.py` from criterion's output.
//!
//! Groups (each function id `peer/n`):
//!
//! * `tasks_life`: create, three gets, complete, one get of the result;
//!   `sessionreg_spawn` is sessionreg's store with the work on a tokio task
//!   (as the HTTP layer runs it, and as rmcp always does);
//! * `tasks_get`: a get of a random running task, by its text id;
//!   `sessionreg_parsed` is the same get by the parsed id (the store's
//!   lookup alone, without `parse_id`);
//! * `tasks_reap`: one reaper sweep of sessionreg's store over n running
//!   tasks (nothing to free): what the HTTP layer's reaper costs per
//!   period (at most one a second), which the lives above do not include;
//! * `tasks_floor`: `pick/n`, the harness's part of every get (a random
//!   running task's text id picked and read); `parse_id/n`, the same and
//!   the parse of that id (in sessionreg's lives and gets); `slot_read/n`,
//!   the memory hierarchy's floor under a get: one random slot of the
//!   store's size read over the same working set, from plain `Vec`s
//!   (`SlotFloor`); `slot_read_window/n`, the same read followed by as
//!   many register-only instructions as make it execute what the store's
//!   get does (x86-64 only): what the instruction count alone costs there;
//!   `parse_branchless/n`, the same with the bench's own branch-free
//!   decoder (an experiment: what the parse could cost); `uuid_v4_string`, a v4 UUID
//!   minted as text (rmcp's and moka's id, in their lives).
//!
//! Run: `cargo bench -p tasks-bench --bench tasks` (a filter after `--`,
//! e.g. `-- /10000`, runs some; peers are prefilled only when selected).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tasks_bench::{timed, Moka, Parsed, Rmcp, SlotFloor, Spawned, Store, SIZES};

/// rmcp's operations take tens of microseconds to milliseconds, and the
/// cleanup of its lives waits out their TTL: ten flat samples, one second
/// of warm-up and two of measurement, so that a run ends in minutes (also
/// for the reaper's sweeps). Every other function has criterion's
/// defaults, or the command line's (each group starts from them).
fn slow(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
}

/// `TASKS_RMCP_MAX`: rmcp's rows only up to this many running tasks
/// (default: all). Its prefill is quadratic (every `spawn` sweeps the whole
/// map): at 100k it alone takes minutes, so the report's run stops at 10k,
/// where its goal is read.
fn rmcp_max() -> usize {
    std::env::var("TASKS_RMCP_MAX").map_or(usize::MAX, |v| {
        v.parse()
            .expect("TASKS_RMCP_MAX: a number of running tasks")
    })
}

fn tasks(c: &mut Criterion) {
    let rmcp_max = rmcp_max();
    for n in SIZES {
        let mut store: Option<Store> = None;
        let mut rmcp: Option<Rmcp> = None;
        let mut moka: Option<Moka> = None;

        let mut group = c.benchmark_group("tasks_life");
        group.bench_function(BenchmarkId::new("sessionreg", n), |b| {
            let peer = store.get_or_insert_with(|| Store::prefill(n));
            b.iter_custom(|iters| timed(peer, iters, true));
        });
        group.bench_function(BenchmarkId::new("sessionreg_spawn", n), |b| {
            let peer = store.get_or_insert_with(|| Store::prefill(n));
            b.iter_custom(|iters| timed(&mut Spawned(peer), iters, true));
        });
        group.bench_function(BenchmarkId::new("moka", n), |b| {
            let peer = moka.get_or_insert_with(|| Moka::prefill(n));
            b.iter_custom(|iters| timed(peer, iters, true));
        });
        slow(&mut group);
        if n <= rmcp_max {
            group.bench_function(BenchmarkId::new("rmcp", n), |b| {
                let peer = rmcp.get_or_insert_with(|| prefill_rmcp(n));
                b.iter_custom(|iters| timed(peer, iters, true));
            });
        }
        group.finish();
        if let Some(peer) = &rmcp {
            let (lives, polls, expired) = peer.counts();
            eprintln!(
                "rmcp at {n}: lives' TTL {} ms; {lives} lives, {:.2} get_task after the oneshot per life, {expired} expired",
                peer.ttl().as_millis(),
                polls as f64 / lives.max(1) as f64
            );
        }

        let mut group = c.benchmark_group("tasks_get");
        group.bench_function(BenchmarkId::new("sessionreg", n), |b| {
            let peer = store.get_or_insert_with(|| Store::prefill(n));
            b.iter_custom(|iters| timed(peer, iters, false));
        });
        group.bench_function(BenchmarkId::new("sessionreg_parsed", n), |b| {
            let peer = store.get_or_insert_with(|| Store::prefill(n));
            b.iter_custom(|iters| timed(&mut Parsed(peer), iters, false));
        });
        group.bench_function(BenchmarkId::new("moka", n), |b| {
            let peer = moka.get_or_insert_with(|| Moka::prefill(n));
            b.iter_custom(|iters| timed(peer, iters, false));
        });
        slow(&mut group);
        if n <= rmcp_max {
            group.bench_function(BenchmarkId::new("rmcp", n), |b| {
                let peer = rmcp.get_or_insert_with(|| prefill_rmcp(n));
                b.iter_custom(|iters| timed(peer, iters, false));
            });
        }
        group.finish();

        let mut group = c.benchmark_group("tasks_floor");
        group.bench_function(BenchmarkId::new("pick", n), |b| {
            let peer = store.get_or_insert_with(|| Store::prefill(n));
            b.iter_custom(|iters| {
                let start = Instant::now();
                peer.picks(iters);
                start.elapsed()
            });
        });
        group.bench_function(BenchmarkId::new("parse_id", n), |b| {
            let peer = store.get_or_insert_with(|| Store::prefill(n));
            b.iter_custom(|iters| {
                let start = Instant::now();
                peer.parses(iters);
                start.elapsed()
            });
        });
        group.bench_function(BenchmarkId::new("slot_read", n), |b| {
            let mut floor = SlotFloor::new(n);
            b.iter_custom(|iters| {
                let start = Instant::now();
                floor.reads(iters);
                start.elapsed()
            });
        });
        #[cfg(target_arch = "x86_64")]
        group.bench_function(BenchmarkId::new("slot_read_window", n), |b| {
            let mut floor = SlotFloor::new(n);
            b.iter_custom(|iters| {
                let start = Instant::now();
                floor.reads_windowed(iters);
                start.elapsed()
            });
        });
        group.bench_function(BenchmarkId::new("parse_branchless", n), |b| {
            let peer = store.get_or_insert_with(|| Store::prefill(n));
            b.iter_custom(|iters| {
                let start = Instant::now();
                peer.parses_branchless(iters);
                start.elapsed()
            });
        });
        group.finish();

        let mut group = c.benchmark_group("tasks_reap");
        slow(&mut group);
        group.bench_function(BenchmarkId::new("sessionreg", n), |b| {
            let peer = store.get_or_insert_with(|| Store::prefill(n));
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(peer.store().reap());
                }
                start.elapsed()
            });
        });
        group.finish();
        drop((store, rmcp, moka));
    }

    let mut group = c.benchmark_group("tasks_floor");
    group.bench_function("uuid_v4_string", |b| {
        b.iter(|| black_box(uuid::Uuid::new_v4().to_string()));
    });
    group.finish();
}

fn prefill_rmcp(n: usize) -> Rmcp {
    let start = Instant::now();
    let peer = Rmcp::prefill(n);
    eprintln!(
        "rmcp prefilled with {n} running tasks in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    peer
}

criterion_group!(benches, tasks);
criterion_main!(benches);

//! `sessionreg` against its peers, same workloads, same payload, same run.
//!
//! **Threads.** Every workload runs at each thread count of
//! `REGISTRY_THREADS`: a comma-separated list (`1,2,8`), or `all` for every
//! count from 1 to `nproc`; by default 1 and 2 (and `nproc`, where it is
//! more). A count above `nproc` is refused: threads that take turns on a
//! core measure the scheduler. Groups (ids are stable: `run.sh` and
//! `ratios.py` read them): `life_<T>t`, `mix_<T>t`, `stale_<T>t` for each
//! count T, and `floor`. So a user with 64 cores runs
//! `REGISTRY_THREADS=1,8,32,64 cargo bench --bench registry` and sees the
//! scaling this project's 2 cores cannot show.
//!
//! **Peers.** Each bare map, and beside it the same map keyed by an
//! unguessable 128-bit id drawn from `rand`'s thread-local generator (ids
//! ending in `_id128`; `tokio_rwlock_string_rng` for the UUID-keyed map,
//! whose UUID's bytes come from the same generator): the peers that do the
//! same work as `sessionreg`, which mints such an id for every session.
//! `moka` sits right after `sessionreg_idle`, the other peer that tracks
//! idleness, configured as a session store (time-to-idle, LRU, no
//! admission policy, 128-bit random keys). See `support/workload.rs` for
//! what each workload does and `support/peers.rs` for how each peer is
//! driven.
//!
//! Every row but the floors runs its threads through `on_threads`: threads
//! are spawned, warmed up (one operation each, so thread-locals such as the
//! CSPRNG, slab thread ids and runtimes exist), started together on a
//! barrier, and the time reported is the wall time of the whole batch ÷ total
//! operations. So on two threads a figure half the one-thread figure means
//! perfect scaling.
//!
//! Short settings for development:
//! `cargo bench --bench registry -- --warm-up-time 0.2 --measurement-time 0.5`

#[path = "support/payload.rs"]
mod payload;
#[path = "support/peers.rs"]
mod peers;
#[path = "support/workload.rs"]
mod workload;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use payload::Payload;
use peers::{
    Counter, Dash, Moka, MutexSlab, Papaya, Peer, Random, RwLockHashMap, Scc, SessionReg,
    SessionRegIdle, ShardedSlab, TokioStringMap,
};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use workload::{on_threads, runtime, Rng};

/// Room for the mixed workload and the stale set; every peer starts empty.
const CAPACITY: usize = 1 << 16;
/// Live sessions beside the removed one in `stale`.
const STALE_LIVE: usize = 1_000;

/// Runs `$f::<Type>(group, "id", args)` for every synchronous peer, in
/// table order: each bare map, then the same map keyed by a random
/// 128-bit id.
macro_rules! each_peer {
    ($f:ident, $group:expr $(, $arg:expr)*) => {
        $f::<SessionReg>($group, "sessionreg" $(, $arg)*);
        $f::<SessionRegIdle>($group, "sessionreg_idle" $(, $arg)*);
        $f::<Moka>($group, "moka" $(, $arg)*);
        $f::<ShardedSlab>($group, "sharded_slab" $(, $arg)*);
        $f::<ShardedSlab<Random>>($group, "sharded_slab_id128" $(, $arg)*);
        $f::<Dash<Counter>>($group, "dashmap" $(, $arg)*);
        $f::<Dash<Random>>($group, "dashmap_id128" $(, $arg)*);
        $f::<Scc<Counter>>($group, "scc" $(, $arg)*);
        $f::<Scc<Random>>($group, "scc_id128" $(, $arg)*);
        $f::<Papaya<Counter>>($group, "papaya" $(, $arg)*);
        $f::<Papaya<Random>>($group, "papaya_id128" $(, $arg)*);
        $f::<MutexSlab>($group, "mutex_slab" $(, $arg)*);
        $f::<MutexSlab<Random>>($group, "mutex_slab_id128" $(, $arg)*);
        $f::<RwLockHashMap<Counter>>($group, "rwlock_hashmap" $(, $arg)*);
        $f::<RwLockHashMap<Random>>($group, "rwlock_hashmap_id128" $(, $arg)*);
    };
}

/// The thread counts of `REGISTRY_THREADS` (see the top of this file).
fn thread_counts() -> Vec<usize> {
    let nproc = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts: Vec<usize> = match std::env::var("REGISTRY_THREADS") {
        Ok(v) if v.trim() == "all" => (1..=nproc).collect(),
        Ok(v) => v
            .split(',')
            .map(|t| {
                t.trim().parse().unwrap_or_else(|_| {
                    panic!(
                        "REGISTRY_THREADS: {t:?} is not a thread count (a list like 1,2,8, or all)"
                    )
                })
            })
            .collect(),
        Err(_) => vec![1, 2, nproc],
    };
    counts.sort_unstable();
    counts.dedup();
    for &t in &counts {
        assert!(
            (1..=nproc).contains(&t),
            "REGISTRY_THREADS: {t} threads, but this machine has {nproc} (1 ..= nproc)"
        );
    }
    counts
}

fn life_peer<P: Peer>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str, threads: usize) {
    let peer = P::new(CAPACITY);
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                iters,
                |_| {
                    let value = Payload::new();
                    workload::life(&peer, &value, 1);
                    value
                },
                |value, _, n| workload::life(&peer, &value, n),
            )
        })
    });
}

fn life_tokio<const RNG: bool>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str, threads: usize) {
    let peer = TokioStringMap::<RNG>::new();
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                iters,
                |_| {
                    let (rt, value) = (runtime(), Payload::new());
                    rt.block_on(workload::life_async(&peer, &value, 1));
                    (rt, value)
                },
                |(rt, value), _, n| rt.block_on(workload::life_async(&peer, &value, n)),
            )
        })
    });
}

/// A fresh seed per thread and sample: the same sequence for every peer.
fn seed(sample: &AtomicU64, thread: usize) -> u64 {
    (sample.fetch_add(1, Ordering::Relaxed) << 8) | thread as u64
}

fn mix_peer<P: Peer>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str, threads: usize) {
    let peer = P::new(CAPACITY);
    let state = workload::mix_fill(&peer, threads);
    let samples = AtomicU64::new(0);
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                iters,
                |t| {
                    let ring = state.rings[t].lock();
                    let (rng, value) = (Rng::new(seed(&samples, t)), Payload::new());
                    (ring, rng, value)
                },
                |(mut ring, mut rng, value), _, n| {
                    workload::mix(&peer, &state.hot, &mut ring, &mut rng, &value, n)
                },
            )
        })
    });
}

fn mix_tokio<const RNG: bool>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str, threads: usize) {
    let peer = TokioStringMap::<RNG>::new();
    let state = runtime().block_on(workload::mix_fill_async(&peer, threads));
    let samples = AtomicU64::new(0);
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                iters,
                |t| {
                    let ring = state.rings[t].lock();
                    let (rng, value) = (Rng::new(seed(&samples, t)), Payload::new());
                    (runtime(), ring, rng, value)
                },
                |(rt, mut ring, mut rng, value), _, n| {
                    rt.block_on(workload::mix_async(
                        &peer, &state.hot, &mut ring, &mut rng, &value, n,
                    ))
                },
            )
        })
    });
}

/// Looks up an id whose session was removed (its slot not reused yet),
/// beside `STALE_LIVE` live sessions, on every thread.
fn stale_peer<P: Peer>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str, threads: usize) {
    let peer = P::new(CAPACITY);
    let value = Payload::new();
    let live: Vec<P::Key> = (0..STALE_LIVE)
        .map(|_| peer.insert(Arc::clone(&value)))
        .collect();
    let removed = peer.insert(Arc::clone(&value));
    assert!(peer.remove(&removed));
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                iters,
                |_| assert!(peer.get(&removed).is_none()),
                |(), _, n| {
                    for _ in 0..n {
                        assert!(peer.get(black_box(&removed)).is_none());
                    }
                },
            )
        })
    });
    drop(live);
}

fn stale_tokio<const RNG: bool>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    threads: usize,
) {
    let peer = TokioStringMap::<RNG>::new();
    let value = Payload::new();
    let removed = runtime().block_on(async {
        for _ in 0..STALE_LIVE {
            peer.insert(Arc::clone(&value)).await;
        }
        let removed = peer.insert(Arc::clone(&value)).await;
        assert!(peer.remove(&removed).await);
        removed
    });
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            on_threads(
                threads,
                iters,
                |_| runtime(),
                |rt, _, n| {
                    rt.block_on(async {
                        for _ in 0..n {
                            assert!(peer.get(black_box(&removed)).await.is_none());
                        }
                    })
                },
            )
        })
    });
}

/// Every workload at every thread count of `REGISTRY_THREADS`.
fn workloads(c: &mut Criterion) {
    for threads in thread_counts() {
        let mut group = c.benchmark_group(format!("life_{threads}t"));
        each_peer!(life_peer, &mut group, threads);
        life_tokio::<false>(&mut group, "tokio_rwlock_string", threads);
        life_tokio::<true>(&mut group, "tokio_rwlock_string_rng", threads);
        group.finish();

        let mut group = c.benchmark_group(format!("mix_{threads}t"));
        each_peer!(mix_peer, &mut group, threads);
        mix_tokio::<false>(&mut group, "tokio_rwlock_string", threads);
        mix_tokio::<true>(&mut group, "tokio_rwlock_string_rng", threads);
        group.finish();

        let mut group = c.benchmark_group(format!("stale_{threads}t"));
        each_peer!(stale_peer, &mut group, threads);
        stale_tokio::<false>(&mut group, "tokio_rwlock_string", threads);
        stale_tokio::<true>(&mut group, "tokio_rwlock_string_rng", threads);
        group.finish();
    }
}

/// The floors: one uncontended CAS, one `Arc` clone + drop, one secret
/// drawn exactly as `insert` draws it (same generator, same batching), and
/// one 128-bit id drawn as the `_id128` peers draw theirs
/// (`rand::rng().random::<u128>()`). A
/// session's life with this design makes a handful of uncontended
/// read-modify-writes and draws one secret: these are its parts' costs.
fn floor(c: &mut Criterion) {
    let mut group = c.benchmark_group("floor");
    let word = AtomicU64::new(0);
    group.bench_function("cas", |b| {
        b.iter_custom(|iters| {
            let mut seen = word.load(Ordering::Relaxed);
            let start = Instant::now();
            for _ in 0..iters {
                match word.compare_exchange(seen, seen + 1, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => seen += 1,
                    Err(now) => seen = now,
                }
            }
            start.elapsed()
        })
    });
    group.bench_function("secret", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(secret::draw());
            }
            start.elapsed()
        })
    });
    group.bench_function("rand_u128", |b| {
        use rand::RngExt as _;
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(rand::rng().random::<u128>());
            }
            start.elapsed()
        })
    });
    let value = Payload::new();
    group.bench_function("arc_clone_drop", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                drop(black_box(Arc::clone(&value)));
            }
            start.elapsed()
        })
    });
    group.finish();
}

/// One secret drawn as `insert` draws one (`src/secret.rs`), for
/// `floor/secret`: the secrets of `AHEAD` ids drawn at a time with one
/// `fill_bytes` of `rand`'s thread-local ChaCha generator into a
/// thread-local buffer, each wiped as it is handed out, after a look at the
/// process's fork count. The registry's own draw is not public API, so it is
/// repeated here through `rand` directly (`src/secret.rs` asks to keep the
/// two alike). Not through a refused insert, which draws a secret too: its
/// capacity check costs several times the secret (BENCHMARKS.md).
mod secret {
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicU64, Ordering};

    const AHEAD: usize = 32;

    struct Batch {
        /// Each secret's two words: 128 bits, as the registry's secrets
        /// are.
        words: [[u64; 2]; AHEAD],
        next: usize,
        forks: u64,
    }

    static FORKS: AtomicU64 = AtomicU64::new(0);

    thread_local! {
        static BATCH: RefCell<Batch> = const {
            RefCell::new(Batch { words: [[0; 2]; AHEAD], next: AHEAD, forks: 0 })
        };
    }

    #[inline]
    pub(crate) fn draw() -> [u64; 2] {
        BATCH.with(|batch| {
            let mut batch = batch.borrow_mut();
            if batch.next == AHEAD || batch.forks != FORKS.load(Ordering::Relaxed) {
                refill(&mut batch);
            }
            let at = batch.next;
            batch.next += 1;
            std::mem::take(&mut batch.words[at])
        })
    }

    #[cold]
    #[inline(never)]
    fn refill(batch: &mut Batch) {
        use rand::RngExt as _;
        rand::rng().fill(batch.words.as_flattened_mut());
        batch.next = 0;
        batch.forks = FORKS.load(Ordering::Relaxed);
    }
}

/// Settings for the full run (about 5 minutes on 2 cores at the default
/// thread counts: 3 workloads × 2 counts × 17 peers, 2.5 s each);
/// criterion's `--warm-up-time`, `--measurement-time` and `--sample-size`
/// override them.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = workloads, floor
}
criterion_main!(benches);

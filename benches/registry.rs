//! `sessionreg` against its peers, same workloads, same payload, same run.
//!
//! Groups (ids are stable: `run.sh` reads them): `life_1t`, `life_2t`,
//! `mix_2t`, `stale`, `floor`. `moka` (a cache with time-to-idle) sits
//! right after `sessionreg_idle`, the other peer that tracks idleness. See `support/workload.rs` for what each
//! workload does and `support/peers.rs` for how each peer is driven.
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
    Dash, Moka, MutexSlab, Papaya, Peer, RwLockHashMap, Scc, SessionReg, SessionRegIdle,
    ShardedSlab, TokioStringMap,
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

/// Runs `$body!(Type, "id")` for every synchronous peer, in table order.
macro_rules! each_peer {
    ($f:ident, $group:expr $(, $arg:expr)*) => {
        $f::<SessionReg>($group, "sessionreg" $(, $arg)*);
        $f::<SessionRegIdle>($group, "sessionreg_idle" $(, $arg)*);
        $f::<Moka>($group, "moka" $(, $arg)*);
        $f::<ShardedSlab>($group, "sharded_slab" $(, $arg)*);
        $f::<Dash>($group, "dashmap" $(, $arg)*);
        $f::<Scc>($group, "scc" $(, $arg)*);
        $f::<Papaya>($group, "papaya" $(, $arg)*);
        $f::<MutexSlab>($group, "mutex_slab" $(, $arg)*);
        $f::<RwLockHashMap>($group, "rwlock_hashmap" $(, $arg)*);
    };
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

fn life_tokio(group: &mut BenchmarkGroup<'_, WallTime>, threads: usize) {
    let peer = TokioStringMap::new();
    group.bench_function("tokio_rwlock_string", |b| {
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

fn life(c: &mut Criterion, name: &str, threads: usize) {
    let mut group = c.benchmark_group(name);
    each_peer!(life_peer, &mut group, threads);
    life_tokio(&mut group, threads);
    group.finish();
}

fn life_1t(c: &mut Criterion) {
    life(c, "life_1t", 1);
}

fn life_2t(c: &mut Criterion) {
    life(c, "life_2t", 2);
}

/// A fresh seed per thread and sample: the same sequence for every peer.
fn seed(sample: &AtomicU64, thread: usize) -> u64 {
    (sample.fetch_add(1, Ordering::Relaxed) << 8) | thread as u64
}

fn mix_peer<P: Peer>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str) {
    const THREADS: usize = 2;
    let peer = P::new(CAPACITY);
    let state = workload::mix_fill(&peer, THREADS);
    let samples = AtomicU64::new(0);
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            on_threads(
                THREADS,
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

fn mix_tokio(group: &mut BenchmarkGroup<'_, WallTime>) {
    const THREADS: usize = 2;
    let peer = TokioStringMap::new();
    let state = runtime().block_on(workload::mix_fill_async(&peer, THREADS));
    let samples = AtomicU64::new(0);
    group.bench_function("tokio_rwlock_string", |b| {
        b.iter_custom(|iters| {
            on_threads(
                THREADS,
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

fn mix_2t(c: &mut Criterion) {
    let mut group = c.benchmark_group("mix_2t");
    each_peer!(mix_peer, &mut group);
    mix_tokio(&mut group);
    group.finish();
}

/// Looks up an id whose session was removed (its slot not reused yet),
/// beside `STALE_LIVE` live sessions, on one thread.
fn stale_peer<P: Peer>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str) {
    let peer = P::new(CAPACITY);
    let value = Payload::new();
    let live: Vec<P::Key> = (0..STALE_LIVE)
        .map(|_| peer.insert(Arc::clone(&value)))
        .collect();
    let removed = peer.insert(Arc::clone(&value));
    assert!(peer.remove(&removed));
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                assert!(peer.get(black_box(&removed)).is_none());
            }
            start.elapsed()
        })
    });
    drop(live);
}

fn stale_tokio(group: &mut BenchmarkGroup<'_, WallTime>) {
    let rt = runtime();
    let peer = TokioStringMap::new();
    let value = Payload::new();
    let removed = rt.block_on(async {
        for _ in 0..STALE_LIVE {
            peer.insert(Arc::clone(&value)).await;
        }
        let removed = peer.insert(Arc::clone(&value)).await;
        assert!(peer.remove(&removed).await);
        removed
    });
    group.bench_function("tokio_rwlock_string", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    assert!(peer.get(black_box(&removed)).await.is_none());
                }
                start.elapsed()
            })
        })
    });
}

fn stale(c: &mut Criterion) {
    let mut group = c.benchmark_group("stale");
    each_peer!(stale_peer, &mut group);
    stale_tokio(&mut group);
    group.finish();
}

/// The floors: one uncontended CAS, one `Arc` clone + drop, and one secret
/// drawn exactly as `insert` draws it (same generator, same batching). A
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
/// capacity check costs several times the secret (measured at issue 18:
/// 26.7 ns against 4.9).
mod secret {
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicU64, Ordering};

    const AHEAD: usize = 32;

    struct Batch {
        /// Each secret's two words: 128 bits, as the registry's secrets
        /// are since issue 20.
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

/// Settings for the full run (about 6 minutes on 2 cores); criterion's
/// `--warm-up-time`, `--measurement-time` and `--sample-size` override them.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = life_1t, life_2t, mix_2t, stale, floor
}
criterion_main!(benches);

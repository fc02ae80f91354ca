//! The workloads, and the harness that starts threads together.
//!
//! Every workload is written twice, line for line: once over the [`Peer`]
//! trait, and once `async` for the `tokio::sync::RwLock` map. The async one
//! runs the whole timed loop inside a single `block_on` of a current-thread
//! runtime per thread, built before the barrier, so what is measured is the
//! lock's own `.await` path (the way a handler inside a server task pays it),
//! not the cost of entering a runtime per operation.

use super::payload::Payload;
use super::peers::{Peer, TokioStringMap, Value};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Live sessions in the mixed workload.
pub const MIX_LIVE: usize = 10_000;
/// Of those, the ones each thread churns (terminate its oldest, insert one):
/// 500, or fewer on many threads, so that at least half stay long-lived.
pub fn mix_ring(threads: usize) -> usize {
    500.min(MIX_LIVE / (2 * threads))
}
/// Percent of operations in the mix that churn; the rest are lookups.
pub const MIX_CHURN_PERCENT: u64 = 5;

/// Runs `iters` operations split over `threads` threads started together on
/// a barrier and returns the wall time from the first start to the last
/// finish, so time per iteration is wall time ÷ total operations.
///
/// `setup(thread)` runs on each thread before the barrier (runtimes,
/// thread-locals, a warm-up operation); `run(context, thread, n)` is timed.
pub fn on_threads<C>(
    threads: usize,
    iters: u64,
    setup: impl Fn(usize) -> C + Sync,
    run: impl Fn(C, usize, u64) + Sync,
) -> Duration {
    let barrier = Barrier::new(threads);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, setup, run) = (&barrier, &setup, &run);
                let n = iters / threads as u64 + u64::from((t as u64) < iters % threads as u64);
                s.spawn(move || {
                    let context = setup(t);
                    barrier.wait();
                    let start = Instant::now();
                    run(context, t, n);
                    (start, Instant::now())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let start = spans.iter().map(|s| s.0).min().unwrap();
    let end = spans.iter().map(|s| s.1).max().unwrap();
    end - start
}

/// xorshift64*: the same cheap generator for every peer.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    #[inline]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `0..len` (multiply-shift, no division).
    #[inline]
    pub fn below(&mut self, len: usize) -> usize {
        (((self.next() >> 32) * len as u64) >> 32) as usize
    }
}

// ---- one session's life: mint, insert, get (clone out), remove ----

#[inline]
pub fn life<P: Peer>(peer: &P, value: &Value, n: u64) {
    for _ in 0..n {
        let key = peer.insert(Arc::clone(value));
        let handle = peer.get(&key).expect("just inserted");
        drop(black_box(handle));
        assert!(peer.remove(black_box(&key)));
    }
}

pub async fn life_async<const RNG: bool>(peer: &TokioStringMap<RNG>, value: &Value, n: u64) {
    for _ in 0..n {
        let key = peer.insert(Arc::clone(value)).await;
        let handle = peer.get(&key).await.expect("just inserted");
        drop(black_box(handle));
        assert!(peer.remove(black_box(&key)).await);
    }
}

/// A current-thread runtime for one bench thread.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
}

// ---- 95% lookups of random live ids / 5% churn, 10k live ----
//
// The live set is `MIX_LIVE - threads * mix_ring(threads)` long-lived sessions that
// every thread looks up at random (created by the main thread before the
// run, so in a slab they sit wherever the creating thread put them, not in
// the looking-up thread's shard), plus a ring of `mix_ring(threads)` sessions per
// thread that only that thread churns: a churn terminates the ring's oldest
// session and inserts a new one. Lookups all hit. The rings persist across
// samples, so the live count stays at `MIX_LIVE`.

pub struct Mix<K> {
    pub hot: Vec<K>,
    pub rings: Vec<Mutex<VecDeque<K>>>,
}

/// Each long-lived session gets a payload of its own, so a lookup that
/// clones an `Arc` out touches that session's count, not one count shared by
/// every session (which would make the `Arc`-valued peers fight over one
/// cache line that `sessionreg`'s handles never touch).
pub fn mix_fill<P: Peer>(peer: &P, threads: usize) -> Mix<P::Key> {
    let ring = mix_ring(threads);
    let hot = (0..MIX_LIVE - threads * ring)
        .map(|_| peer.insert(Payload::new()))
        .collect();
    let rings = (0..threads)
        .map(|_| Mutex::new((0..ring).map(|_| peer.insert(Payload::new())).collect()))
        .collect();
    peer.settle();
    Mix { hot, rings }
}

#[inline]
pub fn mix<P: Peer>(
    peer: &P,
    hot: &[P::Key],
    ring: &mut VecDeque<P::Key>,
    rng: &mut Rng,
    value: &Value,
    n: u64,
) {
    for _ in 0..n {
        let r = rng.next();
        if r % 100 < MIX_CHURN_PERCENT {
            let old = ring.pop_front().expect("the ring is full");
            assert!(peer.remove(&old));
            ring.push_back(peer.insert(Arc::clone(value)));
        } else {
            let key = &hot[rng.below(hot.len())];
            drop(black_box(peer.get(key).expect("hot sessions stay live")));
        }
    }
}

pub async fn mix_fill_async<const RNG: bool>(
    peer: &TokioStringMap<RNG>,
    threads: usize,
) -> Mix<String> {
    let ring_len = mix_ring(threads);
    let mut hot = Vec::new();
    for _ in 0..MIX_LIVE - threads * ring_len {
        hot.push(peer.insert(Payload::new()).await);
    }
    let mut rings = Vec::new();
    for _ in 0..threads {
        let mut ring = VecDeque::new();
        for _ in 0..ring_len {
            ring.push_back(peer.insert(Payload::new()).await);
        }
        rings.push(Mutex::new(ring));
    }
    Mix { hot, rings }
}

pub async fn mix_async<const RNG: bool>(
    peer: &TokioStringMap<RNG>,
    hot: &[String],
    ring: &mut VecDeque<String>,
    rng: &mut Rng,
    value: &Value,
    n: u64,
) {
    for _ in 0..n {
        let r = rng.next();
        if r % 100 < MIX_CHURN_PERCENT {
            let old = ring.pop_front().expect("the ring is full");
            assert!(peer.remove(&old).await);
            ring.push_back(peer.insert(Arc::clone(value)).await);
        } else {
            let key = &hot[rng.below(hot.len())];
            drop(black_box(
                peer.get(key).await.expect("hot sessions stay live"),
            ));
        }
    }
}

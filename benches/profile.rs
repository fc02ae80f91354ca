//! A fixed number of one workload's operations on one peer, untimed: the
//! program to run under `valgrind --tool=callgrind` (deterministic
//! instruction counts, where the timed benches on a shared 2-core machine are
//! noisy), or `perf`.
//!
//! `cargo bench --bench profile -- <life|get|stale> <peer> <n>`; peers are
//! the function ids of `registry.rs`. `run.sh callgrind` runs each at two
//! sizes and reports the difference ÷ the extra operations: instructions per
//! operation, free of setup. Its last stdout line, `allocations: N`, counts
//! every heap allocation the program made (the counting allocator,
//! `support/counting.rs`), so the same difference gives allocations per
//! operation.

#[path = "support/counting.rs"]
#[allow(dead_code)] // only the allocation count is read here
mod counting;
#[path = "support/payload.rs"]
mod payload;
#[path = "support/peers.rs"]
mod peers;
#[path = "support/workload.rs"]
#[allow(dead_code)] // the multi-thread harness and the mix are not used here
mod workload;

use payload::Payload;
use peers::{
    Counter, Dash, Moka, MutexSlab, Papaya, Peer, Random, RwLockHashMap, Scc, SessionReg,
    SessionRegIdle, ShardedSlab, TokioStringMap,
};
use std::hint::black_box;
use std::sync::Arc;
use workload::Rng;

/// Live sessions beside the looked-up ones, as in `registry.rs`'s `stale`.
const LIVE: usize = 1_000;

fn run<P: Peer>(what: &str, n: u64) {
    let peer = P::new(1 << 16);
    let value = Payload::new();
    let live: Vec<P::Key> = (0..LIVE).map(|_| peer.insert(Arc::clone(&value))).collect();
    peer.settle();
    match what {
        "life" => workload::life(&peer, &value, n),
        "get" => {
            let mut rng = Rng::new(1);
            for _ in 0..n {
                drop(black_box(peer.get(&live[rng.below(LIVE)])));
            }
        }
        "stale" => {
            let removed = peer.insert(Arc::clone(&value));
            assert!(peer.remove(&removed));
            for _ in 0..n {
                assert!(peer.get(black_box(&removed)).is_none());
            }
        }
        other => panic!("unknown workload {other}"),
    }
}

fn run_tokio<const RNG: bool>(what: &str, n: u64) {
    let rt = workload::runtime();
    let peer = TokioStringMap::<RNG>::new();
    let value = Payload::new();
    rt.block_on(async {
        let mut live = Vec::new();
        for _ in 0..LIVE {
            live.push(peer.insert(Arc::clone(&value)).await);
        }
        match what {
            "life" => workload::life_async(&peer, &value, n).await,
            "get" => {
                let mut rng = Rng::new(1);
                for _ in 0..n {
                    drop(black_box(peer.get(&live[rng.below(LIVE)]).await));
                }
            }
            "stale" => {
                let removed = peer.insert(Arc::clone(&value)).await;
                assert!(peer.remove(&removed).await);
                for _ in 0..n {
                    assert!(peer.get(black_box(&removed)).await.is_none());
                }
            }
            other => panic!("unknown workload {other}"),
        }
    });
}

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [what, peer, n] = &args[..] else {
        panic!("usage: profile <life|get|stale> <peer> <n>");
    };
    let n: u64 = n.parse().expect("a number of operations");
    match peer.as_str() {
        "sessionreg" => run::<SessionReg>(what, n),
        "sessionreg_idle" => run::<SessionRegIdle>(what, n),
        "moka" => run::<Moka>(what, n),
        "sharded_slab" => run::<ShardedSlab>(what, n),
        "sharded_slab_id128" => run::<ShardedSlab<Random>>(what, n),
        "dashmap" => run::<Dash<Counter>>(what, n),
        "dashmap_id128" => run::<Dash<Random>>(what, n),
        "scc" => run::<Scc<Counter>>(what, n),
        "scc_id128" => run::<Scc<Random>>(what, n),
        "papaya" => run::<Papaya<Counter>>(what, n),
        "papaya_id128" => run::<Papaya<Random>>(what, n),
        "mutex_slab" => run::<MutexSlab>(what, n),
        "mutex_slab_id128" => run::<MutexSlab<Random>>(what, n),
        "rwlock_hashmap" => run::<RwLockHashMap<Counter>>(what, n),
        "rwlock_hashmap_id128" => run::<RwLockHashMap<Random>>(what, n),
        "tokio_rwlock_string" => run_tokio::<false>(what, n),
        "tokio_rwlock_string_rng" => run_tokio::<true>(what, n),
        other => panic!("unknown peer {other}"),
    }
    println!("allocations: {}", counting::allocations());
}

//! Heap bytes per live session at 100k live sessions, for `sessionreg` and
//! each peer, counted by a global allocator that tracks every byte requested.
//!
//! What is counted: everything the container allocates to hold 100k sessions
//! (slab pages, hash tables, buckets, the string keys a string-keyed map owns,
//! shard and counter arrays) from just before it is built. What is not: the
//! payload. Every session stores a clone of one shared `Arc<Payload>`, so the
//! payload allocation (the same `ArcInner<Payload>` for every peer, printed
//! below the table) is outside every figure alike; the 8-byte `Arc` pointer
//! inside the container is counted. Keys handed back to the caller are
//! dropped at once: a server sends them to the client, it does not keep them.
//! Sizes are the sizes requested from the allocator (`Layout::size`), not
//! what the allocator rounds them up to.
//!
//! Run: `cargo bench --bench memory`

#[path = "support/counting.rs"]
mod counting;
#[path = "support/payload.rs"]
mod payload;
#[path = "support/peers.rs"]
mod peers;

use counting::{mark, Counting};
use payload::Payload;
use peers::{
    Counter, Dash, Moka, MutexSlab, Papaya, Peer, Random, RwLockHashMap, Scc, SessionReg,
    SessionRegIdle, ShardedSlab, TokioStringMap, Value,
};
use std::sync::Arc;

const SESSIONS: usize = 100_000;
/// Room for `SESSIONS`; the registry allocates pages only as it fills.
const CAPACITY: usize = 1 << 17;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

struct Row {
    name: &'static str,
    bytes: usize,
    peak: usize,
    allocs: usize,
}

fn since(name: &'static str, (bytes, allocs): (usize, usize)) -> Row {
    Row {
        name,
        bytes: counting::live_bytes() - bytes,
        peak: counting::peak_bytes() - bytes,
        allocs: counting::live_allocs() - allocs,
    }
}

fn measure<P: Peer>(name: &'static str, value: &Value) -> Row {
    let start = mark();
    let peer = P::new(CAPACITY);
    let mut last = None;
    for _ in 0..SESSIONS {
        last = Some(peer.insert(Arc::clone(value)));
    }
    // What the owner runs by the time sessions are used (a sweep, for
    // sessionreg_idle): it must not cost memory either.
    peer.settle();
    let row = since(name, start);
    // The map holds what it should: a last look, outside the count.
    let last = last.expect("inserted");
    assert!(peer.get(&last).is_some());
    assert!(peer.remove(&last));
    assert!(peer.get(&last).is_none());
    drop(peer);
    row
}

fn measure_tokio<const RNG: bool>(name: &'static str, value: &Value) -> Row {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let start = mark();
        let peer = TokioStringMap::<RNG>::new();
        let mut last = String::new();
        for _ in 0..SESSIONS {
            // The copy handed back is dropped by the next assignment.
            last = peer.insert(Arc::clone(value)).await;
        }
        // Minus the one key still held here.
        let mut row = since(name, start);
        row.bytes -= last.capacity();
        row.allocs -= 1;
        assert!(peer.get(&last).await.is_some());
        assert!(peer.remove(&last).await);
        row
    })
}

fn main() {
    // Warm thread-locals (CSPRNG, thread ids, epoch guards) outside the count.
    let value = Payload::new();
    for _ in 0..2 {
        measure::<SessionReg>("warm-up", &value);
        measure::<ShardedSlab>("warm-up", &value);
        measure::<Papaya<Counter>>("warm-up", &value);
        measure::<Scc<Counter>>("warm-up", &value);
        measure::<Papaya<Random>>("warm-up", &value);
    }
    let rows = vec![
        measure::<SessionReg>("sessionreg", &value),
        // The idle clock is in every slot either way: the same bytes.
        measure::<SessionRegIdle>("sessionreg_idle", &value),
        measure::<Moka>("moka", &value),
        measure::<ShardedSlab>("sharded_slab", &value),
        measure::<ShardedSlab<Random>>("sharded_slab_id128", &value),
        measure::<Dash<Counter>>("dashmap", &value),
        measure::<Dash<Random>>("dashmap_id128", &value),
        measure::<Scc<Counter>>("scc", &value),
        measure::<Scc<Random>>("scc_id128", &value),
        measure::<Papaya<Counter>>("papaya", &value),
        measure::<Papaya<Random>>("papaya_id128", &value),
        measure::<MutexSlab>("mutex_slab", &value),
        measure::<MutexSlab<Random>>("mutex_slab_id128", &value),
        measure::<RwLockHashMap<Counter>>("rwlock_hashmap", &value),
        measure::<RwLockHashMap<Random>>("rwlock_hashmap_id128", &value),
        measure_tokio::<false>("tokio_rwlock_string", &value),
        measure_tokio::<true>("tokio_rwlock_string_rng", &value),
    ];
    let per = |bytes: usize| bytes as f64 / SESSIONS as f64;
    let smallest = rows.iter().map(|r| r.bytes).min().expect("rows");
    let of = |name: &str| rows.iter().find(|r| r.name == name).expect("row").bytes as f64;
    println!("heap bytes per live session at {SESSIONS} live sessions (payload excluded)\n");
    println!("| peer | bytes/session | × smallest | × sessionreg | peak bytes/session | allocations/session |");
    println!("|---|---:|---:|---:|---:|---:|");
    for row in &rows {
        println!(
            "| {} | {:.1} | {:.2} | {:.2} | {:.1} | {:.3} |",
            row.name,
            per(row.bytes),
            row.bytes as f64 / smallest as f64,
            row.bytes as f64 / of("sessionreg"),
            per(row.peak),
            row.allocs as f64 / SESSIONS as f64,
        );
    }
    println!();
    println!(
        "payload, outside every figure: one ArcInner<Payload> = {} bytes per session if each had its own",
        std::mem::size_of::<Payload>() + 2 * std::mem::size_of::<usize>()
    );
    // The peers that mint an unguessable id, as sessionreg does.
    let unguessable = rows
        .iter()
        .filter(|r| r.name == "moka" || r.name.ends_with("_id128") || r.name.starts_with("tokio_"))
        .min_by_key(|r| r.bytes)
        .expect("rows");
    println!(
        "sessionreg ÷ the smallest peer that mints an unguessable id ({}): {:.2}×",
        unguessable.name,
        of("sessionreg") / unguessable.bytes as f64
    );
}

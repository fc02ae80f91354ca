//! A fixed number of one task workload's operations on one peer, untimed:
//! the program `benches/run.sh callgrind` runs under `valgrind
//! --tool=callgrind` for instructions per task operation (deterministic),
//! with the counting allocator (`benches/support/counting.rs`) for
//! allocations per operation.
//!
//! `cargo bench -p tasks-bench --bench tasks_profile -- <life|get> <peer> <ops> [<running tasks>]`,
//! peers `sessionreg`, `sessionreg_spawn` (lives only), `sessionreg_parsed`
//! (gets only), `moka`, `rmcp`, and the floors under a get, `floor` and
//! `floor_window` (gets only; `src/lib.rs`'s `SlotFloor`); running tasks
//! default 1,000. The peers and
//! their workloads are the timed bench's (`src/lib.rs`), cleanups
//! included (every tenth of n lives, as in the timed bench). Its last
//! stdout line, `allocations: N`, counts every allocation the program
//! made; run at two sizes, the difference ÷ the extra operations is per
//! operation, free of the prefill.

#[path = "../../support/counting.rs"]
#[allow(dead_code)] // only the allocation count is read here
mod counting;

use tasks_bench::{timed, Moka, Parsed, Peer, Rmcp, SlotFloor, Spawned, Store};

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

fn run(peer: &mut impl Peer, what: &str, ops: u64) {
    match what {
        "life" => drop(timed(peer, ops, true)),
        "get" => drop(timed(peer, ops, false)),
        other => panic!("unknown workload {other} (life or get)"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let (what, peer, ops) = match &args[..] {
        [what, peer, ops, ..] => (what.as_str(), peer.as_str(), ops),
        _ => panic!("usage: tasks_profile <life|get> <peer> <ops> [<running tasks>]"),
    };
    let ops: u64 = ops.parse().expect("a number of operations");
    let n: usize = args
        .get(3)
        .map_or(1_000, |n| n.parse().expect("a number of running tasks"));
    match peer {
        "sessionreg" => run(&mut Store::prefill(n), what, ops),
        "sessionreg_spawn" => run(&mut Spawned(&mut Store::prefill(n)), what, ops),
        "sessionreg_parsed" => run(&mut Parsed(&mut Store::prefill(n)), what, ops),
        "moka" => run(&mut Moka::prefill(n), what, ops),
        "rmcp" => run(&mut Rmcp::prefill(n), what, ops),
        // The floors under a get (`tasks_floor/slot_read`, `slot_read_window`).
        "floor" if what == "get" => SlotFloor::new(n).reads(ops),
        #[cfg(target_arch = "x86_64")]
        "floor_window" if what == "get" => SlotFloor::new(n).reads_windowed(ops),
        other => panic!("unknown peer {other}"),
    }
    println!("allocations: {}", counting::allocations());
}

//! The paths of a session's life that `benches/profile.rs`'s peers have
//! no counterpart for, on the registry alone, untimed: the program
//! `benches/atomics.py` runs under callgrind to count the atomic
//! read-modify-writes each path executes (and `benches/callgrind.py`'s
//! `per_op` can count its instructions). A binary of its own, so that
//! adding it changes no inlining in `profile`'s, whose peers' counts move
//! with the code around them.
//!
//! `cargo bench --bench paths_profile -- <delete|request|in_flight> sessionreg <n>`
//! (the peer argument is there for `atomics.py`, which passes one).

#[path = "support/counting.rs"]
#[allow(dead_code)] // only the allocation count is read here
mod counting;
#[path = "support/payload.rs"]
mod payload;

use payload::Payload;
use sessionreg::{Reason, Registry};
use std::hint::black_box;
use std::sync::Arc;

/// Live sessions beside the operated-on ones, as in `profile.rs`.
const LIVE: usize = 1_000;

/// Paths of a session's life the peers have no counterpart for, on the
/// registry alone for `benches/atomics.py`:
/// `delete`, as the HTTP layer's `DELETE` ends a session (looked up, ended
/// through the handle, which is then dropped, its last one out);
/// `request`, a request admitted on a live session as the HTTP layer
/// admits one (looked up, begun, the lookup's handle dropped, ended);
/// `in_flight`, a session created by its first request, the request's
/// end, then a terminate by id.
fn run(what: &str, n: u64) {
    let registry = Registry::builder()
        .capacity(1 << 16)
        .build()
        .expect("valid configuration");
    let value = Payload::new();
    let live: Vec<_> = (0..LIVE)
        .map(|_| registry.insert(Arc::clone(&value)).expect("below capacity"))
        .collect();
    match what {
        "delete" => {
            for _ in 0..n {
                let id = registry.insert(Arc::clone(&value)).expect("below capacity");
                let session = registry.lookup_if(black_box(&id), |_| true).expect("live");
                assert!(registry
                    .terminate_session(&session, Reason::Deleted)
                    .is_won());
                drop(black_box(session));
            }
        }
        "request" => {
            // Every live session in turn, a stride apart (not the
            // neighbouring slot each time).
            for i in 0..n as usize {
                let session = registry.get(&live[i * 7 % LIVE]).expect("live");
                let request = session.begin_at_most(64).expect("open");
                drop(session);
                drop(black_box(request));
            }
        }
        "in_flight" => {
            for _ in 0..n {
                let request = registry
                    .insert_in_flight(Arc::clone(&value))
                    .expect("below capacity");
                let id = request.id();
                drop(black_box(request));
                assert!(registry.terminate(black_box(&id), Reason::Deleted).is_won());
            }
        }
        other => panic!("unknown workload {other}"),
    }
}

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [what, _peer, n] = &args[..] else {
        panic!("usage: paths_profile <delete|request|in_flight> sessionreg <n>");
    };
    run(what, n.parse().expect("a number of operations"));
    println!("allocations: {}", counting::allocations());
}

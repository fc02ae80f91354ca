//! Sealing and opening one 2026-07-28 `requestState`: the
//! layer's own sealer (`src/http/modern/sealing.rs`, reached through the
//! hidden hook `sessionreg::http::modern::__bench_sealing`, feature
//! `bench-hooks`), one thread.
//!
//! Group `sealing`, each function at two sizes of the application's state,
//! 64 bytes and 1 KiB (`/64`, `/1024`):
//!
//! * `seal`: one state sealed (the binding computed beforehand);
//! * `open`: one sealed state opened and verified for its binding;
//! * `seal_open`: one of each, a multi-round-trip request's two ends: the
//!   figure the goal (under 1 µs) is read from;
//! * `seal_open_bound`: the same, plus the binding computed twice, once per
//!   round, as the layer computes it for every `tools/call` (SHA-256 of the
//!   method and the params that are the request's own): what a request
//!   pays in all, and what the Python SDK's seal and open each include;
//! * `seal_open_single_use`: `seal_open` for a single-use state, which also
//!   inserts an entry into the record of unused states when sealing and
//!   ends it when opening;
//! * `binding`: the binding alone.
//!
//! No principal (an unauthenticated endpoint: its digest is zeros), a
//! ten-minute lifetime (the Python SDK's default; the layer's is
//! `DEFAULT_REQUEST_STATE_TTL`). `benches/sealing.py` times the Python
//! SDK's seal and open of the same state beside it; `benches/run.sh
//! sealing` runs both in alternating rounds.
//!
//! `cargo bench --bench sealing --features bench-hooks` (the hook is
//! compiled only with that feature; it is not part of the API).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Value};
use sessionreg::http::modern::__bench_sealing::BenchSealer;
use sessionreg::http::modern::RequestStateKeys;
use std::hint::black_box;
use std::time::Duration;

/// The sizes of the application's state, in bytes.
const SIZES: [usize; 2] = [64, 1024];

/// A retry's params: what the binding digests (without `_meta`,
/// `inputResponses` and `requestState`, which it skips).
fn params() -> Value {
    json!({
        "name": "echo",
        "arguments": { "text": "hi" },
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    })
}

fn sealer() -> BenchSealer {
    BenchSealer::new(
        RequestStateKeys::new(1, [7; 32]),
        Duration::from_secs(600),
        1 << 16,
    )
}

fn sealing(c: &mut Criterion) {
    let mut group = c.benchmark_group("sealing");
    let params = params();
    let s = sealer();
    let binding = BenchSealer::binding(None, "tools/call", &params);
    for size in SIZES {
        let state = vec![b'x'; size];
        let token = s.seal(&binding, &state, false).expect("sealed");
        assert_eq!(s.open(&token, &binding).expect("opens"), state);
        group.bench_function(BenchmarkId::new("seal", size), |b| {
            b.iter(|| s.seal(black_box(&binding), black_box(&state), false))
        });
        group.bench_function(BenchmarkId::new("open", size), |b| {
            b.iter(|| s.open(black_box(&token), black_box(&binding)))
        });
        group.bench_function(BenchmarkId::new("seal_open", size), |b| {
            b.iter(|| {
                let token = s.seal(black_box(&binding), black_box(&state), false);
                s.open(&token.expect("sealed"), black_box(&binding))
                    .expect("opens")
            })
        });
        group.bench_function(BenchmarkId::new("seal_open_bound", size), |b| {
            b.iter(|| {
                let first = BenchSealer::binding(None, "tools/call", black_box(&params));
                let token = s.seal(&first, black_box(&state), false);
                let retry = BenchSealer::binding(None, "tools/call", black_box(&params));
                s.open(&token.expect("sealed"), &retry).expect("opens")
            })
        });
        group.bench_function(BenchmarkId::new("seal_open_single_use", size), |b| {
            b.iter(|| {
                let token = s.seal(black_box(&binding), black_box(&state), true);
                s.open(&token.expect("room in the record"), black_box(&binding))
                    .expect("opens once")
            })
        });
    }
    group.bench_function("binding", |b| {
        b.iter(|| BenchSealer::binding(None, "tools/call", black_box(&params)))
    });
    group.finish();
}

/// Short settings: the whole group in well under a minute, so that
/// `run.sh sealing` can alternate it with the Python SDK's timing.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = sealing
}
criterion_main!(benches);

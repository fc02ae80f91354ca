//! Nanoseconds per call of a few candidate ways to mint a secret and to read
//! the coarse clock, each in a tight loop on one thread.

use rand_core::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

const N: u64 = 50_000_000;

fn time(name: &str, mut f: impl FnMut() -> u64) {
    let start = Instant::now();
    let mut x = 0u64;
    for _ in 0..N {
        x ^= black_box(f());
    }
    black_box(x);
    println!("{name:44} {:.2} ns", start.elapsed().as_nanos() as f64 / N as f64);
}

/// ns per 64-bit word of keystream, filling 1 MiB at a time.
fn keystream(name: &str, mut fill: impl FnMut(&mut [u8])) {
    let mut buf = vec![0u8; 1 << 20];
    let rounds = 200;
    let start = Instant::now();
    for _ in 0..rounds {
        fill(&mut buf);
    }
    black_box(&buf);
    let per_byte = start.elapsed().as_nanos() as f64 / (rounds * buf.len()) as f64;
    println!("{name:44} {:.2} ns per 64-bit word", per_byte * 8.0);
}

fn main() {
    let mut c8 = chacha20::ChaCha8Rng::from_rng(&mut rand::rng());
    let mut c12 = chacha20::ChaCha12Rng::from_rng(&mut rand::rng());
    keystream("keystream, ChaCha8", |b| c8.fill_bytes(b));
    keystream("keystream, ChaCha12", |b| c12.fill_bytes(b));
    keystream("keystream, rand's ThreadRng (ChaCha12)", |b| {
        rand::rng().fill_bytes(b)
    });

    let epoch = coarsetime::Instant::now_without_cache_update();
    time("clock: coarsetime now_without_cache_update", || {
        coarsetime::Instant::now_without_cache_update()
            .duration_since(epoch)
            .as_millis()
    });
    time("clock: bare clock_gettime(MONOTONIC_COARSE)", || {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid timespec to write into.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
    });
}

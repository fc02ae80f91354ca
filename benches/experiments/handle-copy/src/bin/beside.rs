//! `beside <threads> <n> [both|s|m|shift|slots|heap]`: the library's `plain`
//! life (the registry bench's), in chunks of `n` alternating with the
//! mutex-guarded slab's life, on `threads` threads one after another (`s` or
//! `m`: only one of them); or, on one thread, the best of three runs of
//! 300,000 `plain` lives: `shift`, at 64 positions of the stack; `slots`, in
//! 13 slots; `heap`, after 24 sizes of a block held before the registry is
//! built.

use handle_copy::{best_of_three, mutex_life, plain, time};
use parking_lot::Mutex;
use sessionreg::{Reason, Registry};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

type Reg = Registry<Arc<u64>>;

fn registry() -> Reg {
    Registry::builder().capacity(1 << 16).build().unwrap()
}

/// Runs `run` `depth` frames of 80 bytes further down the stack, handing it
/// the stack's position.
#[inline(never)]
fn shifted(depth: usize, run: &mut dyn FnMut(usize)) {
    let pad = [0u8; 48];
    black_box(&pad);
    if depth == 0 {
        let here = 0u8;
        run(&here as *const u8 as usize);
    } else {
        shifted(depth - 1, run);
    }
    black_box(&pad);
}

/// The life at 64 positions of the stack.
fn shift() {
    let (reg, value) = (&registry(), &Arc::new(7u64));
    for depth in 0..64 {
        std::thread::scope(|s| {
            s.spawn(move || {
                shifted(depth, &mut |sp| {
                    plain(reg, value, 10_000);
                    let best = best_of_three(plain, reg, value);
                    println!("depth {depth:2} sp mod 4096 {:4}: {best:5.1}", sp % 4096);
                });
            });
        });
    }
}

/// The life in 13 slots: `k` sessions kept live first, so the life reuses
/// the slot after them (48 bytes further each).
fn slots() {
    for k in [0usize, 1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 85] {
        let (reg, value) = (&registry(), &Arc::new(7u64));
        std::thread::scope(|s| {
            s.spawn(move || {
                let kept: Vec<_> = (0..k)
                    .map(|_| reg.insert(Arc::clone(value)).unwrap())
                    .collect();
                plain(reg, value, 10_000);
                let id = reg.insert(Arc::clone(value)).unwrap();
                let at = &*reg.get(&id).unwrap() as *const Arc<u64> as usize;
                assert!(reg.terminate(&id, Reason::Deleted).is_won());
                let best = best_of_three(plain, reg, value);
                println!(
                    "kept {k:2}: value at mod 4096 {:4}: {best:5.1} ns",
                    at % 4096
                );
                drop(kept);
            });
        });
    }
}

/// The life after a block of `pad` bytes held before the registry is built.
fn heap() {
    for pad in (0..24).map(|i| 16 + i * 176) {
        let held = black_box(vec![0u8; pad]);
        let (reg, value) = (&registry(), &Arc::new(7u64));
        std::thread::scope(|s| {
            s.spawn(move || {
                plain(reg, value, 10_000);
                let best = best_of_three(plain, reg, value);
                println!("pad {pad:5}: {best:5.1} ns");
            });
        });
        drop(held);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = args.next().map_or(2, |a| a.parse().expect("threads"));
    let n: u64 = args.next().map_or(1_000_000, |a| a.parse().expect("n"));
    let mode = args.next().unwrap_or_else(|| "both".into());
    match mode.as_str() {
        "shift" => return shift(),
        "slots" => return slots(),
        "heap" => return heap(),
        "both" | "s" | "m" => {}
        other => panic!("unknown mode {other}: both, s, m, shift, slots or heap"),
    }
    let (reg, value) = (&registry(), &Arc::new(7u64));
    let m = &Mutex::new(slab::Slab::with_capacity(1 << 16));
    let mode = mode.as_str();
    for t in 0..threads {
        std::thread::scope(|s| {
            s.spawn(move || {
                plain(reg, value, 10_000);
                mutex_life(m, value, 10_000);
                let mut ours = format!("thread {t:2} sessionreg:");
                let mut theirs = String::from("   mutex_slab_id128:");
                for _ in 0..8 {
                    if mode != "m" {
                        ours += &format!(" {:5.1}", time(plain, reg, value, n));
                    }
                    if mode != "s" {
                        let start = Instant::now();
                        mutex_life(m, value, n);
                        let ns = start.elapsed().as_nanos() as f64 / n as f64;
                        theirs += &format!(" {ns:5.1}");
                    }
                }
                println!("{ours}{theirs}");
            });
        });
    }
}

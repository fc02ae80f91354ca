//! `beside <threads> <n> [s|m|both|shift|slots|heap]`: the life of `alone`, in
//! chunks alternating with a mutex-guarded slab's life with a random 128-bit
//! key (`s` or `m`: only one of them); `shift`: the life at 64 positions of
//! the stack; `slots`: in 13 slots; `heap`: after 24 sizes of a block held
//! before the registry is built (see Cargo.toml).

use parking_lot::Mutex;
use rand::RngExt;
use sessionreg::{Reason, Registry};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

fn life(reg: &Registry<Arc<u64>>, value: &Arc<u64>, n: u64) {
    for _ in 0..n {
        let id = reg.insert(Arc::clone(value)).expect("room");
        let handle = reg.get(&id).expect("live");
        black_box(&handle);
        drop(handle);
        assert!(reg.terminate(&id, Reason::Deleted).is_won());
    }
}

fn mlife(m: &Mutex<slab::Slab<(u128, Arc<u64>)>>, value: &Arc<u64>, n: u64) {
    for _ in 0..n {
        let secret: u128 = rand::rng().random();
        let key = (m.lock().insert((secret, Arc::clone(value))), secret);
        let got = {
            let g = m.lock();
            g.get(key.0)
                .filter(|e| e.0 == key.1)
                .map(|e| Arc::clone(&e.1))
        };
        drop(black_box(got.expect("live")));
        let mut g = m.lock();
        assert!(g.get(key.0).is_some_and(|e| e.0 == key.1));
        g.remove(key.0);
    }
}

/// The fastest of three runs of 300,000 lives, in ns a life.
fn best_of_three(reg: &Registry<Arc<u64>>, value: &Arc<u64>) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        life(reg, value, 300_000);
        best = best.min(start.elapsed().as_nanos() as f64 / 300_000.0);
    }
    best
}

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

fn main() {
    if std::env::args().nth(3).as_deref() == Some("heap") {
        // The registry's own memory moved: a block of `pad` bytes held
        // before it is built.
        for pad in (0..24).map(|i| 16 + i * 176) {
            let held = black_box(vec![0u8; pad]);
            let reg: Registry<Arc<u64>> = Registry::builder().capacity(1 << 16).build().unwrap();
            let value = Arc::new(7u64);
            let (reg, value) = (&reg, &value);
            std::thread::scope(|s| {
                s.spawn(move || {
                    life(reg, value, 10_000);
                    let best = best_of_three(reg, value);
                    println!(
                        "pad {pad:5}: registry at mod 4096 {:4}: {best:5.1} ns",
                        reg as *const _ as usize % 4096
                    );
                });
            });
            drop(held);
        }
        return;
    }
    if std::env::args().nth(3).as_deref() == Some("slots") {
        // The loop's slot moved: `k` sessions kept live first, so the life
        // reuses the slot after them (48 bytes further each).
        for k in [0usize, 1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 85] {
            let reg: Registry<Arc<u64>> = Registry::builder().capacity(1 << 16).build().unwrap();
            let value = Arc::new(7u64);
            let (reg, value) = (&reg, &value);
            std::thread::scope(|s| {
                s.spawn(move || {
                    let kept: Vec<_> = (0..k)
                        .map(|_| reg.insert(Arc::clone(value)).unwrap())
                        .collect();
                    life(reg, value, 10_000);
                    let id = reg.insert(Arc::clone(value)).unwrap();
                    let at = &*reg.get(&id).unwrap() as *const Arc<u64> as usize;
                    assert!(reg.terminate(&id, Reason::Deleted).is_won());
                    let best = best_of_three(reg, value);
                    println!(
                        "kept {k:2}: value at mod 4096 {:4}: {best:5.1} ns",
                        at % 4096
                    );
                    drop(kept);
                });
            });
        }
        return;
    }
    if std::env::args().nth(3).as_deref() == Some("shift") {
        let reg: Registry<Arc<u64>> = Registry::builder().capacity(1 << 16).build().unwrap();
        let value = Arc::new(7u64);
        for depth in 0..64 {
            let (reg, value) = (&reg, &value);
            std::thread::scope(|s| {
                s.spawn(move || {
                    shifted(depth, &mut |sp| {
                        life(reg, value, 10_000);
                        let best = best_of_three(reg, value);
                        println!("depth {depth:2} sp mod 4096 {:4}: {best:5.1}", sp % 4096);
                    });
                });
            });
        }
        return;
    }
    let threads: usize = std::env::args().nth(1).map_or(30, |a| a.parse().unwrap());
    let n: u64 = std::env::args()
        .nth(2)
        .map_or(2_000_000, |a| a.parse().unwrap());
    let reg: Registry<Arc<u64>> = Registry::builder().capacity(1 << 16).build().unwrap();
    let m = Mutex::new(slab::Slab::with_capacity(1 << 16));
    let value = Arc::new(7u64);
    let only = std::env::args().nth(3).unwrap_or_default();
    for t in 0..threads {
        let only = only.clone();
        let (reg, value, m) = (&reg, &value, &m);
        std::thread::scope(|s| {
            s.spawn(move || {
                life(reg, value, 10_000);
                mlife(m, value, 10_000);
                let mut a = format!("thread {t:2} sessionreg:");
                let mut b = String::from("   mutex_slab_id128:");
                for _ in 0..8 {
                    let start = Instant::now();
                    if only != "m" {
                        life(reg, value, n);
                    }
                    a += &format!(" {:5.1}", start.elapsed().as_nanos() as f64 / n as f64);
                    let start = Instant::now();
                    if only != "s" {
                        mlife(m, value, n);
                    }
                    b += &format!(" {:5.1}", start.elapsed().as_nanos() as f64 / n as f64);
                }
                println!("{a}{b}");
            });
        });
    }
}

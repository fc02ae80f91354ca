//! `alone <threads> <n>`: one session's life (insert, get, drop the handle,
//! terminate) `n` times in each of eight chunks, on `threads` threads one after
//! another, printing ns per life for each chunk. The same loop as `beside`'s,
//! in a program with nothing else in it (see Cargo.toml).

use sessionreg::{Reason, Registry};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

fn life(reg: &Registry<Arc<u64>>, value: &Arc<u64>, n: u64) -> usize {
    let mut addr = 0;
    for _ in 0..n {
        let id = reg.insert(Arc::clone(value)).expect("room");
        let handle = reg.get(&id).expect("live");
        addr = &*handle as *const Arc<u64> as usize;
        drop(black_box(handle));
        assert!(reg.terminate(&id, Reason::Deleted).is_won());
    }
    addr
}

fn main() {
    let threads: usize = std::env::args().nth(1).map_or(30, |a| a.parse().unwrap());
    let n: u64 = std::env::args()
        .nth(2)
        .map_or(2_000_000, |a| a.parse().unwrap());
    let reg: Registry<Arc<u64>> = Registry::builder().capacity(1 << 16).build().unwrap();
    let value = Arc::new(7u64);
    for t in 0..threads {
        let (reg, value) = (&reg, &value);
        std::thread::scope(|s| {
            s.spawn(move || {
                life(reg, value, 10_000);
                let mut line = format!("thread {t:2}:");
                for _ in 0..8 {
                    let start = Instant::now();
                    black_box(life(reg, value, n));
                    line += &format!(" {:5.1}", start.elapsed().as_nanos() as f64 / n as f64);
                }
                println!("{line}");
            });
        });
    }
}

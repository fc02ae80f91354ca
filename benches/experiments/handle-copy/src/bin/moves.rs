//! `moves [rounds] [n]`: the three life loops of the library in one program,
//! on one thread, `rounds` rounds (4) of `n` lives (1,000,000) each, in ns a
//! life.

use handle_copy::{by_ref, plain, time, with_address, Life};
use sessionreg::Registry;
use std::sync::Arc;

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().map_or(4, |a| a.parse().expect("rounds"));
    let n: u64 = args.next().map_or(1_000_000, |a| a.parse().expect("n"));
    let reg: Registry<Arc<u64>> = Registry::builder().capacity(1 << 16).build().unwrap();
    let value = Arc::new(7u64);
    let (reg, value) = (&reg, &value);
    let loops: [(&str, Life); 3] = [
        ("with_address", with_address),
        ("plain", plain),
        ("by_ref", by_ref),
    ];
    std::thread::scope(|s| {
        s.spawn(move || {
            for round in 0..rounds {
                let mut line = format!("round {round}:");
                for (name, life) in loops {
                    life(reg, value, 10_000);
                    line += &format!("  {name} {:5.1}", time(life, reg, value, n));
                }
                println!("{line}");
            }
        });
    });
}

//! One session's life (insert, get, drop the handle, terminate) as three
//! loops that differ only in how they hand the handle to `black_box`, each a
//! function of its own, and the same life for a mutex-guarded slab with a
//! random 128-bit key (the registry bench's `mutex_slab_id128`).

use parking_lot::Mutex;
use rand::RngExt;
use sessionreg::{Reason, Registry};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

/// A life loop: `n` lives in `reg`, each session's value a clone of `value`.
pub type Life = fn(&Registry<Arc<u64>>, &Arc<u64>, u64);

/// The value's address read through the handle, then
/// `drop(black_box(handle))`.
#[inline(never)]
pub fn with_address(reg: &Registry<Arc<u64>>, value: &Arc<u64>, n: u64) {
    let mut address = 0;
    for _ in 0..n {
        let id = reg.insert(Arc::clone(value)).expect("room");
        let handle = reg.get(&id).expect("live");
        address = &*handle as *const Arc<u64> as usize;
        drop(black_box(handle));
        assert!(reg.terminate(&id, Reason::Deleted).is_won());
    }
    black_box(address);
}

/// `drop(black_box(handle))`, as the registry bench's life does.
#[inline(never)]
pub fn plain(reg: &Registry<Arc<u64>>, value: &Arc<u64>, n: u64) {
    for _ in 0..n {
        let id = reg.insert(Arc::clone(value)).expect("room");
        let handle = reg.get(&id).expect("live");
        drop(black_box(handle));
        assert!(reg.terminate(&id, Reason::Deleted).is_won());
    }
}

/// `black_box(&handle)`, then `drop(handle)`.
#[inline(never)]
pub fn by_ref(reg: &Registry<Arc<u64>>, value: &Arc<u64>, n: u64) {
    for _ in 0..n {
        let id = reg.insert(Arc::clone(value)).expect("room");
        let handle = reg.get(&id).expect("live");
        black_box(&handle);
        drop(handle);
        assert!(reg.terminate(&id, Reason::Deleted).is_won());
    }
}

/// A mutex-guarded slab's life with a random 128-bit key, `n` times.
#[inline(never)]
pub fn mutex_life(m: &Mutex<slab::Slab<(u128, Arc<u64>)>>, value: &Arc<u64>, n: u64) {
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

/// ns a life of `n` lives of `life`.
pub fn time(life: Life, reg: &Registry<Arc<u64>>, value: &Arc<u64>, n: u64) -> f64 {
    let start = Instant::now();
    life(reg, value, n);
    start.elapsed().as_nanos() as f64 / n as f64
}

/// The fastest of three runs of 300,000 lives of `life`, in ns a life.
pub fn best_of_three(life: Life, reg: &Registry<Arc<u64>>, value: &Arc<u64>) -> f64 {
    (0..3)
        .map(|_| time(life, reg, value, 300_000))
        .fold(f64::MAX, f64::min)
}

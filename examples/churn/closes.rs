//! What the close callbacks saw, counted and printed the same way in both
//! modes.

use sessionreg::Reason;
use std::sync::atomic::{AtomicU64, Ordering};

/// Close callbacks, per reason and in all.
#[derive(Default)]
pub struct Closes {
    by_reason: [AtomicU64; Reason::ALL.len()],
    calls: AtomicU64,
}

impl Closes {
    /// Counts one close callback for `reason`.
    pub fn record(&self, reason: Reason) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let index = Reason::ALL
            .iter()
            .position(|r| *r == reason)
            .expect("a known reason");
        self.by_reason[index].fetch_add(1, Ordering::Relaxed);
    }

    /// Close callbacks that ran.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// The per-reason counts, summed: equal to [`calls`](Self::calls)
    /// unless a callback was miscounted.
    pub fn by_reason_total(&self) -> u64 {
        self.by_reason
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// One line per reason a session ends for ([`Reason::SESSION`]), one
    /// for any other reason seen (a listen stream's, which no session of
    /// this demo should get), then the number of callbacks.
    pub fn print(&self) {
        for (reason, count) in Reason::ALL.iter().zip(&self.by_reason) {
            let count = count.load(Ordering::Relaxed);
            if Reason::SESSION.contains(reason) || count > 0 {
                println!("closed {:<10} {}", reason.as_str(), count);
            }
        }
        println!("close callbacks  {}", self.calls());
    }
}

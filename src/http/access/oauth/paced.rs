//! One attempt at a time, and at most one start per interval: the bound on
//! what this server asks of its authorization server however many requests
//! need it (a refresh of the key set, a discovery of the metadata), and
//! however long it does not answer.
//!
//! A caller first waits for the attempt in progress, if any (it may bring
//! what the caller needs: the caller looks again before starting its own),
//! then starts one only if the interval since the last start has passed;
//! otherwise it goes without. A flood of requests that all need the
//! authorization server costs it one attempt per interval.

use std::sync::Mutex;
use std::time::Duration;

/// The bound of one kind of attempt.
pub(crate) struct Paced {
    /// Held for the length of an attempt.
    one: tokio::sync::Mutex<()>,
    /// When the last attempt started.
    last: Mutex<Option<coarsetime::Instant>>,
    interval: coarsetime::Duration,
}

/// The caller's turn: no other attempt of its kind runs while it is held.
pub(crate) struct Turn<'a> {
    paced: &'a Paced,
    _one: tokio::sync::MutexGuard<'a, ()>,
}

impl Paced {
    pub(crate) fn new(interval: Duration) -> Paced {
        Paced {
            one: tokio::sync::Mutex::new(()),
            last: Mutex::new(None),
            interval: interval.into(),
        }
    }

    /// Waits for the attempt in progress (if any) to end.
    pub(crate) async fn turn(&self) -> Turn<'_> {
        Turn {
            paced: self,
            _one: self.one.lock().await,
        }
    }

    /// Whether an attempt may start now (nothing waited for or stamped):
    /// for a caller that would only start one in the background.
    pub(crate) fn may_start(&self) -> bool {
        let last = *self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.is_none_or(|at| at.elapsed() >= self.interval)
    }
}

impl Turn<'_> {
    /// Starts an attempt if the interval since the last start has passed
    /// (then its start is now); `false`: too soon, go without.
    #[must_use]
    pub(crate) fn start(&self) -> bool {
        let mut last = self.paced.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = coarsetime::Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < self.paced.interval) {
            return false;
        }
        *last = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_start_per_interval() {
        let paced = Paced::new(Duration::from_secs(3600));
        assert!(paced.may_start());
        {
            let turn = paced.turn().await;
            assert!(turn.start());
            assert!(!turn.start(), "once per interval, even in one turn");
        }
        assert!(!paced.may_start());
        assert!(!paced.turn().await.start());
        let free = Paced::new(Duration::ZERO);
        assert!(free.turn().await.start());
        assert!(free.turn().await.start());
    }
}

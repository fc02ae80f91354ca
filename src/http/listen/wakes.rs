//! How a publication wakes the streams it delivered to ([`Wakes`]).
//!
//! Made on one of the runtime's threads (a handler, a task), a wake is
//! cheap: the woken stream's task goes to that thread's own run queue. Made
//! on a thread outside the runtime (an application's background thread),
//! every wake would go through the runtime's shared queue, one lock each,
//! and wake a parked worker whenever one is. So outside the runtime the
//! wakers are gathered, [`BATCH`] at a time, and each batch is handed to
//! the runtime the listeners were opened on as one task, which wakes them
//! from a worker: one trip through the shared queue per batch, not per
//! stream.
//!
//! Deferring a wake loses nothing: the item is queued (or the signal
//! raised) before the waker is taken, and a stream that looks before the
//! wake finds it; one that registered a new waker meanwhile found it too.
//! A batch whose runtime has shut down (the task is dropped unrun) wakes
//! its streams as it is dropped.

use std::task::Waker;
use tokio::runtime::Handle;

/// Wakers handed to the runtime together.
const BATCH: usize = 256;

/// The wakes of one publication.
pub(crate) struct Wakes<'h> {
    /// The runtime to hand batches to; `None`: wake at once (this thread is
    /// one of a runtime's, or no listener recorded one).
    remote: Option<&'h Handle>,
    batch: Vec<Waker>,
}

impl<'h> Wakes<'h> {
    /// The wakes of a publication made on this thread, for listeners opened
    /// on `runtime` (recorded at their first open).
    pub(crate) fn new(runtime: Option<&'h Handle>) -> Wakes<'h> {
        let remote = runtime.filter(|_| Handle::try_current().is_err());
        Wakes {
            remote,
            batch: Vec::new(),
        }
    }

    /// Whether wakers are gathered (else the caller wakes at once).
    #[inline]
    pub(crate) fn gathers(&self) -> bool {
        self.remote.is_some()
    }

    /// Gathers `waker`; a full batch goes to the runtime.
    pub(crate) fn push(&mut self, waker: Waker) {
        if self.batch.capacity() == 0 {
            self.batch.reserve_exact(BATCH);
        }
        self.batch.push(waker);
        if self.batch.len() == BATCH {
            self.send();
        }
    }

    /// Hands the gathered wakers to the runtime, as one task.
    fn send(&mut self) {
        let Some(runtime) = self.remote else {
            return;
        };
        let batch = std::mem::take(&mut self.batch);
        if batch.is_empty() {
            return;
        }
        let batch = Batch(batch);
        drop(runtime.spawn(async move { drop(batch) }));
    }
}

/// Wakers handed to a runtime: woken when the batch is dropped, by the
/// task on the runtime's worker as it runs, or, when the runtime has shut
/// down and drops the task unrun, by whichever thread drops it (a
/// manager's listeners may have been opened on a runtime that has gone).
struct Batch(Vec<Waker>);

impl Drop for Batch {
    fn drop(&mut self) {
        for waker in self.0.drain(..) {
            waker.wake();
        }
    }
}

impl Drop for Wakes<'_> {
    /// The last batch.
    fn drop(&mut self) {
        self.send();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;
    use std::time::{Duration, Instant};

    struct Counted(Arc<AtomicUsize>);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Made outside the runtime, every waker gathered is woken, the last
    /// partial batch too; made inside it, none is gathered.
    #[test]
    fn outside_the_runtime_every_wake_reaches_it_in_batches() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let woken = Arc::new(AtomicUsize::new(0));
        let n = BATCH + BATCH / 2;
        {
            let mut wakes = Wakes::new(Some(runtime.handle()));
            assert!(wakes.gathers(), "this thread is not the runtime's");
            for _ in 0..n {
                wakes.push(Waker::from(Arc::new(Counted(Arc::clone(&woken)))));
            }
        }
        // A safety bound on a condition, not a measure.
        let deadline = Instant::now() + Duration::from_secs(30);
        while woken.load(Ordering::SeqCst) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(woken.load(Ordering::SeqCst), n);
        let inside = runtime.block_on(async { Wakes::new(Some(&Handle::current())).gathers() });
        assert!(!inside, "on the runtime's threads a wake is made at once");
        assert!(!Wakes::new(None).gathers(), "no runtime recorded: at once");
    }

    /// The runtime the wakes are handed to has shut down (a manager's
    /// listeners opened on two runtimes, the first one gone): the batch's
    /// task never runs, and its wakers are woken as it is dropped.
    #[test]
    fn a_batch_handed_to_a_runtime_that_has_shut_down_still_wakes_every_stream() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let handle = runtime.handle().clone();
        drop(runtime);
        let woken = Arc::new(AtomicUsize::new(0));
        let n = BATCH + 3;
        {
            let mut wakes = Wakes::new(Some(&handle));
            assert!(wakes.gathers());
            for _ in 0..n {
                wakes.push(Waker::from(Arc::new(Counted(Arc::clone(&woken)))));
            }
        }
        assert_eq!(woken.load(Ordering::SeqCst), n);
    }
}

//! Admission of work: the cap on requests in flight per session (429 past
//! it) and the cap on handler tasks in the whole manager (503 past it), and
//! the count of handler tasks that shutdown waits for.
//!
//! Neither cap costs a shared read-modify-write per request. The session's
//! count is in its own entry, written only by that session's requests. The
//! manager's count is of handler *tasks*: a handler that answers on its
//! first poll (most do) never becomes one and never writes it; a request
//! only reads it (one load) to see whether there is room. Because the
//! check and the spawn happen in one synchronous stretch of the request's
//! poll, at most one request per worker thread can pass a full count at the
//! same moment: the cap holds to within the number of worker threads.

use super::entry::Entry;
use crate::InFlight;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Counts handler tasks running, so shutdown can wait for them and the
/// manager can refuse work past its cap.
#[derive(Default)]
pub(crate) struct Tasks {
    running: AtomicUsize,
    idle: Notify,
}

/// One running handler task; dropping it counts the task out.
pub(crate) struct TaskGuard(Arc<Tasks>);

impl Tasks {
    /// Whether another handler task fits under `max`.
    pub(crate) fn has_room(&self, max: usize) -> bool {
        // Relaxed: an advisory read; the cap is documented as holding to
        // within one request per worker thread.
        self.running.load(Ordering::Relaxed) < max
    }

    /// Counts a handler task in until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> TaskGuard {
        // SeqCst pairs with `wait_idle`'s load (see there).
        self.running.fetch_add(1, Ordering::SeqCst);
        TaskGuard(Arc::clone(self))
    }

    /// Resolves once no handler task is running.
    pub(crate) async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            // Registered before the load, so a guard dropped between the
            // load and the await still wakes us.
            notified.as_mut().enable();
            if self.running.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// The session has as many requests in flight as it may.
#[derive(Debug)]
pub(crate) struct TooMany;

/// A request admitted to its session: the session's in-flight guard (so it
/// is never idle meanwhile) and its place under the session's cap, both
/// given back when this drops. Derefs to the session.
pub(crate) struct Admitted<S: Send + Sync + 'static> {
    in_flight: InFlight<Entry<S>>,
}

impl<S: Send + Sync + 'static> Admitted<S> {
    /// Counts `in_flight` against its session's cap of `max` requests.
    pub(crate) fn new(in_flight: InFlight<Entry<S>>, max: usize) -> Result<Self, TooMany> {
        // Count first, then check: two racing requests can both be refused
        // at the edge, but never both admitted past it. Relaxed: the count
        // guards nothing but itself, and the RMW makes it exact.
        let before = in_flight.requests.fetch_add(1, Ordering::Relaxed);
        if before >= max {
            in_flight.requests.fetch_sub(1, Ordering::Relaxed);
            return Err(TooMany);
        }
        Ok(Admitted { in_flight })
    }

    /// The first request of a new session, which has no other: within any
    /// cap.
    pub(crate) fn first(in_flight: InFlight<Entry<S>>) -> Self {
        in_flight.requests.fetch_add(1, Ordering::Relaxed);
        Admitted { in_flight }
    }
}

impl<S: Send + Sync + 'static> Deref for Admitted<S> {
    type Target = InFlight<Entry<S>>;

    fn deref(&self) -> &InFlight<Entry<S>> {
        &self.in_flight
    }
}

impl<S: Send + Sync + 'static> Drop for Admitted<S> {
    fn drop(&mut self) {
        self.in_flight.requests.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::counters::HttpCounters;
    use crate::http::outlet::QueueLimits;
    use crate::http::sse::Streams;
    use crate::Registry;

    #[test]
    fn the_cap_admits_up_to_max_and_frees_on_drop() {
        let registry = Registry::builder().build().unwrap();
        let limits = QueueLimits {
            messages: 1,
            bytes: 1,
            stall: None,
        };
        let streams = Streams::new(0, 0, limits, Arc::new(HttpCounters::new()));
        let id = registry.insert(Entry::new((), streams, None)).unwrap();
        let session = registry.get(&id).unwrap();
        let first = Admitted::new(session.begin().unwrap(), 2).unwrap();
        let second = Admitted::new(session.begin().unwrap(), 2).unwrap();
        assert!(Admitted::new(session.begin().unwrap(), 2).is_err());
        drop(first);
        let third = Admitted::new(session.begin().unwrap(), 2).unwrap();
        drop((second, third));
        assert_eq!(session.requests.load(Ordering::Relaxed), 0);
        // Refused requests hold no in-flight guard.
        assert_eq!(session.in_flight(), 0);
    }

    #[tokio::test]
    async fn wait_idle_waits_for_the_last_task() {
        let tasks = Arc::new(Tasks::default());
        assert!(tasks.has_room(1));
        let guard = tasks.enter();
        assert!(!tasks.has_room(1));
        let waiter = tokio::spawn({
            let tasks = Arc::clone(&tasks);
            async move { tasks.wait_idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(guard);
        waiter.await.unwrap();
    }
}

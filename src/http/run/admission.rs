//! Admission of work, for every method that runs any: the cap on requests
//! in flight per session (429 past it; the registry's own count, through
//! [`Session::begin_at_most`](crate::Session::begin_at_most)), the cap on
//! handler tasks in the whole manager (503 past it), the count of handler
//! tasks that shutdown waits for, and the handler gauge
//! (`sessionreg_http_handlers_in_flight`).
//!
//! Neither cap costs a shared read-modify-write per request. The session's
//! count is the registry's in-flight count of that session, which every
//! request updates anyway. The manager's count is of handler *tasks*: a
//! handler that answers on its first poll (most do) never becomes one and
//! never writes it; a request only reads it (one load) to see whether
//! there is room. Because the
//! check and the spawn happen in one synchronous stretch of the request's
//! poll, at most one request per worker thread can pass a full count at the
//! same moment: the cap holds to within the number of worker threads.

use crate::http::counters::HttpCounters;
use crate::http::wire::reject::Reject;
use crate::{BeginError, InFlight, Session};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// Counts a request in on its session, under the session's cap: refused
/// if the session has as many in flight as it may (429), or has ended (or
/// is being expired) since it was looked up (404).
pub(crate) fn begin<S>(session: &Session<S>, max: usize) -> Result<InFlight<S>, Reject> {
    // The check and the count are one atomic step in the registry.
    match session.begin_at_most(max as u64) {
        Ok(request) => Ok(request),
        Err(BeginError::Full) => Err(Reject::TooManyRequests),
        Err(_) => Err(Reject::SessionNotFound),
    }
}

/// Counts one handler in `sessionreg_http_handlers_in_flight` while alive.
pub(crate) struct HandlerCount<'a>(&'a HttpCounters);

impl<'a> HandlerCount<'a> {
    pub(crate) fn new(counters: &'a HttpCounters) -> Self {
        counters.handler_started();
        HandlerCount(counters)
    }
}

impl Drop for HandlerCount<'_> {
    fn drop(&mut self) {
        self.0.handler_finished();
    }
}

/// Counts handler tasks running, so shutdown can wait for them and the
/// manager can refuse work past its cap.
#[derive(Default)]
pub(crate) struct HandlerTasks {
    running: AtomicUsize,
    idle: Notify,
}

/// One running handler task; dropping it counts the task out.
pub(crate) struct HandlerGuard(Arc<HandlerTasks>);

impl HandlerTasks {
    /// Whether another handler task fits under `max`; 503 if not.
    pub(crate) fn admit(&self, max: usize) -> Result<(), Reject> {
        // Relaxed: an advisory read; the cap is documented as holding to
        // within one request per worker thread.
        if self.running.load(Ordering::Relaxed) < max {
            Ok(())
        } else {
            Err(Reject::Overloaded)
        }
    }

    /// Counts a handler task in until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> HandlerGuard {
        // SeqCst pairs with `wait_idle`'s load (see there).
        self.running.fetch_add(1, Ordering::SeqCst);
        HandlerGuard(Arc::clone(self))
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

impl Drop for HandlerGuard {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wait_idle_waits_for_the_last_task() {
        let tasks = Arc::new(HandlerTasks::default());
        assert_eq!(tasks.admit(1), Ok(()));
        let guard = tasks.enter();
        assert_eq!(tasks.admit(1), Err(Reject::Overloaded));
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

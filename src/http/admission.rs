//! Admission of work: the cap on handler tasks in the whole manager (503
//! past it), and the count of handler tasks that shutdown waits for. (The
//! cap on requests in flight per session, 429 past it, is the registry's
//! own count: [`Session::begin_at_most`](crate::Session::begin_at_most).)
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

#[cfg(test)]
mod tests {
    use super::*;

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

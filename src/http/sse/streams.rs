//! One session's streams: the standalone `GET` stream and the logs that
//! make streams resumable (`resume.rs`), behind the one lock that also
//! orders each stream's event ids.

use super::outlet::{Outlet, QueueLimits, Sent};
use super::resume::{EventId, LogBounds, Logs, OpenError, STANDALONE};
use crate::http::counters::HttpCounters;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The per-session stream state, kept in the session's registry entry:
/// every stream's log and live connection (see `resume.rs`), behind one
/// lock that also orders each stream's event ids.
#[derive(Debug)]
pub(crate) struct Streams {
    next_stream: AtomicU64,
    logs: Mutex<Logs>,
}

impl Streams {
    /// Streams whose logs are bounded by `bounds` (none when its `events`
    /// is 0), and whose connections by `limits`.
    pub(crate) fn new(
        bounds: LogBounds,
        limits: QueueLimits,
        counters: Arc<HttpCounters>,
    ) -> Streams {
        Streams {
            next_stream: AtomicU64::new(STANDALONE + 1),
            logs: Mutex::new(Logs::new(bounds, limits, counters)),
        }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Logs> {
        // The logs stay consistent even if a holder panicked.
        self.logs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A number for a new `POST` reply stream, unique in the session.
    pub(crate) fn next_stream(&self) -> u64 {
        // Relaxed: only uniqueness matters, which the RMW gives.
        self.next_stream.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a server-to-client message on the standalone stream, without
    /// waiting; logs it for resumption when the log is enabled. Whether an
    /// open stream took it: one whose queue is full drops it, counted. The
    /// id is drawn under the lock, so concurrent senders' ids follow the
    /// order the messages are queued in.
    pub(crate) fn push(&self, message: &Value) -> bool {
        let mut logs = self.lock();
        let (frame, sink) = logs.record(STANDALONE, message);
        sink.is_some_and(|outlet| outlet.try_push(frame) == Sent::Queued)
    }

    /// Opens the standalone stream, or resumes the stream a `Last-Event-ID`
    /// names (see `resume.rs`); `priming` asks for a priming event with
    /// this `retry`.
    pub(crate) fn open_get(
        &self,
        last_event_id: Option<EventId>,
        priming: Option<Option<Duration>>,
    ) -> Result<Arc<Outlet>, OpenError> {
        self.lock().open_get(last_event_id, priming)
    }

    /// Ends every stream of the session (called by the terminate winner):
    /// each delivers what it has queued, then ends.
    pub(crate) fn close(&self) {
        let sinks = self.lock().close();
        for sink in sinks {
            sink.finish();
        }
    }
}

//! Server-sent event streams: the per-session stream state (the standalone
//! `GET` stream and the logs that make streams resumable, see `resume.rs`),
//! and the body type that carries any SSE stream to the client (its queue,
//! bounds and stall detection are in `outlet.rs`).

use super::counters::HttpCounters;
use super::outlet::{Outlet, Pushed, QueueLimits};
use super::resume::{EventId, LogBounds, Logs, OpenError, STANDALONE};
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use serde_json::Value;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Interval, MissedTickBehavior};

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

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
        sink.is_some_and(|outlet| outlet.try_push(frame) == Pushed::Queued)
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

/// The body of an SSE response: the frames its queue delivers, with a
/// keep-alive comment whenever the stream has been quiet for the keep-alive
/// interval. It ends when the stream is finished and drained, or ended.
#[derive(Debug)]
pub struct SseBody {
    outlet: Arc<Outlet>,
    keep_alive: Option<Interval>,
    /// For `sessionreg_http_streams_open`.
    counters: Arc<HttpCounters>,
}

impl SseBody {
    pub(crate) fn new(
        outlet: Arc<Outlet>,
        keep_alive: Option<Duration>,
        counters: Arc<HttpCounters>,
    ) -> SseBody {
        // A period too long to reach sends none.
        let keep_alive = keep_alive.and_then(|period| {
            let first = tokio::time::Instant::now().checked_add(period)?;
            let mut interval = tokio::time::interval_at(first, period);
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            Some(interval)
        });
        counters.stream_opened();
        SseBody {
            outlet,
            keep_alive,
            counters,
        }
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        // The client is gone or the stream is over: let go of what it held
        // (the session's in-flight guard) and count what it never got.
        self.outlet.body_dropped();
        self.counters.stream_closed();
    }
}

impl HttpBody for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.outlet.poll_next(cx) {
            Poll::Ready(Some(bytes)) => {
                if let Some(interval) = &mut self.keep_alive {
                    interval.reset();
                }
                Poll::Ready(Some(Ok(Frame::data(bytes))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match &mut self.keep_alive {
                Some(interval) => match interval.poll_tick(cx) {
                    Poll::Ready(_) => {
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEP_ALIVE)))))
                    }
                    Poll::Pending => Poll::Pending,
                },
                None => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        false
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

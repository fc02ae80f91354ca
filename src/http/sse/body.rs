//! The body of every SSE response: the frames an [`Outlet`] delivers, and a
//! keep-alive comment whenever the stream has been quiet for the keep-alive
//! period.

use super::outlet::Outlet;
use crate::http::counters::HttpCounters;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Interval, MissedTickBehavior};

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

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

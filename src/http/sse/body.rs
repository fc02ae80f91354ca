//! The body of every SSE response: the frames an [`Outlet`] delivers, and a
//! keep-alive comment whenever the stream has been quiet for the keep-alive
//! period. A legacy session's standalone `GET` stream also holds the term
//! of the credential it was opened with, and ends when the credential
//! expires or is withdrawn (counted by reason in
//! `sessionreg_http_streams_ended_total`): the stream ends, not the
//! session, which belongs to the principal and not to one of its tokens.

use super::beat::{Beat, Quiet};
use super::frame::KEEP_ALIVE;
use super::outlet::Outlet;
use crate::http::access::validity::Term;
use crate::http::counters::HttpCounters;
use crate::Reason;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// The body of an SSE response: the frames its queue delivers, with a
/// keep-alive comment whenever the stream has been quiet for the keep-alive
/// interval. It ends when the stream is finished and drained, or ended, or
/// when the credential it was opened with runs out.
pub struct SseBody {
    outlet: Arc<Outlet>,
    /// The keep-alive period and the credential's deadline, on one timer.
    beat: Beat,
    /// The credential's hold on the stream (good for ever: a reply
    /// stream's).
    term: Term,
    /// Set once the body has said its last.
    done: bool,
    /// For `sessionreg_http_streams_open`.
    counters: Arc<HttpCounters>,
}

impl std::fmt::Debug for SseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseBody")
            .field("outlet", &self.outlet)
            .finish_non_exhaustive()
    }
}

impl SseBody {
    pub(crate) fn new(
        outlet: Arc<Outlet>,
        keep_alive: Option<Duration>,
        term: Term,
        counters: Arc<HttpCounters>,
    ) -> SseBody {
        counters.stream_opened();
        SseBody {
            outlet,
            beat: Beat::new(keep_alive, term.deadline()),
            term,
            done: false,
            counters,
        }
    }

    /// Ends the stream for its credential (`reason`): what is queued, and
    /// the `taken` frames not sent, are dropped and counted; the end is
    /// counted by reason.
    fn cut(
        &mut self,
        reason: Reason,
        taken: u64,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.done = true;
        self.outlet.cut(taken);
        self.counters.stream_ended(reason);
        tracing::debug!(reason = reason.as_str(), "SSE stream ended");
        Poll::Ready(None)
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
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if this.term.is_withdrawn() {
            return this.cut(Reason::CredentialWithdrawn, 0);
        }
        match this.outlet.poll_next(cx) {
            Poll::Ready(Some(bytes)) => {
                if this.beat.sent() {
                    return this.cut(Reason::CredentialExpired, 1);
                }
                Poll::Ready(Some(Ok(Frame::data(bytes))))
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.beat.poll_quiet(&mut this.term, cx) {
                Poll::Ready(Quiet::KeepAlive) => {
                    Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEP_ALIVE)))))
                }
                Poll::Ready(Quiet::Expired) => this.cut(Reason::CredentialExpired, 0),
                Poll::Ready(Quiet::Withdrawn) => this.cut(Reason::CredentialWithdrawn, 0),
                Poll::Pending => Poll::Pending,
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

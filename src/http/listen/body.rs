//! The body of a listen stream ([`ListenBody`]): the acknowledgement first,
//! then every publication its listener's queue delivers, each stamped with
//! the subscription id (the listen request's JSON-RPC id), keep-alive
//! comments while it is quiet, and, when the server ends the listener (a
//! shutdown, a drain, a queue that filled, the fleet's bus gone), the
//! listen request's result: the spec's graceful close. Dropping it (the
//! client went away) ends the listener.
//!
//! Each frame is written here, on the listener's own connection, from the
//! publication the publisher shared with every listener: the publisher
//! pays one queue push (a list change: one flag) per listener, not a
//! serialization.

use super::change::Change;
use super::inbox::{Next, Outbox};
use super::Listeners;
use crate::http::counters::HttpCounters;
use crate::http::meta::META_SUBSCRIPTION_ID;
use crate::{Reason, Session};
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Interval, MissedTickBehavior};

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// The body of one listen stream.
pub(crate) struct ListenBody {
    /// The acknowledgement, until it is sent.
    ack: Option<Bytes>,
    outbox: Outbox,
    /// The listen request's id, as JSON text: the subscription id.
    id: Box<str>,
    keep_alive: Option<Interval>,
    /// Set once the stream has said its last.
    done: bool,
    /// The listener, ended (`Disconnected`) when the body goes first.
    listener: Session<super::Listener>,
    listeners: Arc<Listeners>,
    counters: Arc<HttpCounters>,
}

impl ListenBody {
    pub(crate) fn new(
        ack: Bytes,
        outbox: Outbox,
        id: Box<str>,
        keep_alive: Option<Duration>,
        listener: Session<super::Listener>,
        listeners: Arc<Listeners>,
        counters: Arc<HttpCounters>,
    ) -> ListenBody {
        // A period too long to reach sends none.
        let keep_alive = keep_alive.and_then(|period| {
            let first = tokio::time::Instant::now().checked_add(period)?;
            let mut interval = tokio::time::interval_at(first, period);
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            Some(interval)
        });
        counters.stream_opened();
        ListenBody {
            ack: Some(ack),
            outbox,
            id,
            keep_alive,
            done: false,
            listener,
            listeners,
            counters,
        }
    }

    /// One notification, stamped with this stream's subscription id.
    fn notification(&self, method: &str, params_tail: &str) -> Bytes {
        Bytes::from(format!(
            "data: {{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"params\":{{\"_meta\":{{\"{META_SUBSCRIPTION_ID}\":{}}}{params_tail}}}}}\n\n",
            self.id
        ))
    }

    /// The listen request's result: the stream ended gracefully.
    fn result(&self) -> Bytes {
        Bytes::from(format!(
            "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"resultType\":\"complete\",\"_meta\":{{\"{META_SUBSCRIPTION_ID}\":{id}}}}}}}\n\n",
            id = self.id
        ))
    }
}

/// Whether a listener that ended for `reason` gets the graceful close (the
/// result): the server ended it. A client that went away gets nothing.
fn graceful(reason: Reason) -> bool {
    !matches!(reason, Reason::Disconnected)
}

impl HttpBody for ListenBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if let Some(ack) = this.ack.take() {
            return Poll::Ready(Some(Ok(Frame::data(ack))));
        }
        if this.done {
            return Poll::Ready(None);
        }
        match this.outbox.poll_next(cx) {
            Poll::Ready(Next::Publication(publication)) => {
                if let Some(interval) = &mut this.keep_alive {
                    interval.reset();
                }
                let frame = this.notification(
                    publication.publication.change.method(),
                    &publication.params_tail,
                );
                Poll::Ready(Some(Ok(Frame::data(frame))))
            }
            Poll::Ready(Next::ListsChanged(changed)) => {
                if let Some(interval) = &mut this.keep_alive {
                    interval.reset();
                }
                // One frame for them all: each its own SSE event.
                let mut events = Vec::new();
                for signal in changed.iter() {
                    let method = Change::of_signal(signal).method();
                    events.extend_from_slice(&this.notification(method, ""));
                }
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(events)))))
            }
            Poll::Ready(Next::Ended(reason)) => {
                this.done = true;
                if graceful(reason) {
                    Poll::Ready(Some(Ok(Frame::data(this.result()))))
                } else {
                    Poll::Ready(None)
                }
            }
            Poll::Pending => match &mut this.keep_alive {
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

impl Drop for ListenBody {
    fn drop(&mut self) {
        // The client went away, or the stream said its last: either way the
        // listener ends here if nothing ended it before (then this loses the
        // terminate, as it should).
        let _ = self
            .listeners
            .registry
            .terminate_session(&self.listener, Reason::Disconnected);
        self.counters.stream_closed();
    }
}

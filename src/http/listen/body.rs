//! The body of a listen stream ([`ListenBody`]): the acknowledgement first,
//! then every publication its listener's queue delivers, each stamped with
//! the subscription id (the listen request's JSON-RPC id), keep-alive
//! comments while it is quiet, and, when the server ends the listener (a
//! shutdown, a drain, a queue that filled, the fleet's bus gone), the
//! listen request's result: the spec's graceful close. Dropping it (the
//! client went away) ends the listener. It holds the term of the
//! credential it was opened with: when that expires or is withdrawn, the
//! body ends the listener (`CredentialExpired`, `CredentialWithdrawn`),
//! through the same terminate, and the stream closes gracefully; nothing
//! is sent past the term (the check comes before each frame, on the clock
//! reading the keep-alive takes anyway).
//!
//! Each frame is written here, on the listener's own connection, from the
//! publication the publisher shared with every listener: the publisher
//! pays one queue push (a list change: one flag) per listener, not a
//! serialization.

use super::change::Change;
use super::inbox::{Next, Reader};
use super::kind::ListKind;
use super::Listeners;
use crate::http::access::validity::Term;
use crate::http::counters::HttpCounters;
use crate::http::sse::beat::{Beat, Quiet};
use crate::http::sse::frame::{self, KEEP_ALIVE};
use crate::http::wire::meta::META_SUBSCRIPTION_ID;
use crate::{Reason, Session};
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// The body of one listen stream.
pub(crate) struct ListenBody {
    /// The acknowledgement, until it is sent.
    ack: Option<Bytes>,
    reader: Reader,
    /// The listen request's id, as JSON text: the subscription id.
    id: Box<str>,
    /// The listen request's span, as a `traceparent`, when it is exported:
    /// every notification carries it in its `_meta`, as a streamed
    /// answer's notifications carry their request's.
    trace: Option<Box<str>>,
    /// The keep-alive period and the credential's deadline, on one timer.
    beat: Beat,
    /// The credential's hold on the stream.
    term: Term,
    /// Set once the body has ended the listener for its credential: it
    /// waits for the end the terminate winner delivers.
    ending: bool,
    /// Set once the stream has said its last.
    done: bool,
    /// The listener, ended (`Disconnected`) when the body goes first.
    listener: Session<super::Listener>,
    listeners: Arc<Listeners>,
    counters: Arc<HttpCounters>,
}

impl ListenBody {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        ack: Bytes,
        reader: Reader,
        id: Box<str>,
        trace: Option<Box<str>>,
        keep_alive: Option<Duration>,
        term: Term,
        listener: Session<super::Listener>,
        listeners: Arc<Listeners>,
        counters: Arc<HttpCounters>,
    ) -> ListenBody {
        counters.stream_opened();
        ListenBody {
            ack: Some(ack),
            reader,
            id,
            trace,
            beat: Beat::new(keep_alive, term.deadline()),
            term,
            ending: false,
            done: false,
            listener,
            listeners,
            counters,
        }
    }

    /// One notification, stamped with this stream's subscription id (and
    /// its listen request's `traceparent`, when there is one).
    fn notification(&self, method: &str, params_tail: &str) -> Bytes {
        let trace = StreamTrace(self.trace.as_deref());
        frame::data(
            method.len() + self.id.len() + params_tail.len() + trace.len() + 80,
            format_args!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"{method}\",\"params\":{{\"_meta\":{{\"{META_SUBSCRIPTION_ID}\":{}{trace}}}{params_tail}}}}}",
                self.id
            ),
        )
    }

    /// The listen request's result: the stream ended gracefully.
    fn result(&self) -> Bytes {
        frame::data(
            2 * self.id.len() + 110,
            format_args!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"resultType\":\"complete\",\"_meta\":{{\"{META_SUBSCRIPTION_ID}\":{id}}}}}}}",
                id = self.id
            ),
        )
    }

    /// Ends the listener for its credential (`reason`), through its one
    /// terminate: the winner closes its queue, and the body then finds the
    /// end (with the reason that won) and says the result. Once.
    fn end(&mut self, reason: Reason) {
        self.ending = true;
        let _ = self
            .listeners
            .registry
            .terminate_session(&self.listener, reason);
    }
}

/// A `_meta` member `"traceparent":"..."` after the subscription id's, or
/// nothing.
struct StreamTrace<'a>(Option<&'a str>);

impl StreamTrace<'_> {
    /// Its length, written.
    fn len(&self) -> usize {
        self.0.map_or(0, |t| t.len() + 17)
    }
}

impl std::fmt::Display for StreamTrace<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            // A traceparent is hex digits and dashes: nothing to escape.
            Some(traceparent) => write!(f, ",\"traceparent\":\"{traceparent}\""),
            None => Ok(()),
        }
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
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if !this.ending && this.term.is_withdrawn() {
                this.end(Reason::CredentialWithdrawn);
            }
            let frame = match this.reader.poll_next(cx) {
                Poll::Ready(Next::Publication(publication)) => this.notification(
                    publication.publication.change.method(),
                    &publication.params_tail,
                ),
                Poll::Ready(Next::ListsChanged(changed)) => {
                    // One frame for them all: each its own SSE event.
                    let mut events = Vec::new();
                    for signal in changed.iter() {
                        let method = Change::of_list(ListKind::of_signal(signal)).method();
                        events.extend_from_slice(&this.notification(method, ""));
                    }
                    Bytes::from(events)
                }
                Poll::Ready(Next::Ended(reason)) => {
                    this.done = true;
                    return if graceful(reason) {
                        Poll::Ready(Some(Ok(Frame::data(this.result()))))
                    } else {
                        Poll::Ready(None)
                    };
                }
                Poll::Pending if this.ending => return Poll::Pending,
                Poll::Pending => match this.beat.poll_quiet(&mut this.term, cx) {
                    Poll::Ready(Quiet::KeepAlive) => {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEP_ALIVE)))));
                    }
                    Poll::Ready(Quiet::Expired) => {
                        this.end(Reason::CredentialExpired);
                        continue;
                    }
                    Poll::Ready(Quiet::Withdrawn) => {
                        this.end(Reason::CredentialWithdrawn);
                        continue;
                    }
                    Poll::Pending => return Poll::Pending,
                },
            };
            if this.ending {
                // Nothing is sent past the term: the end comes next.
                continue;
            }
            if this.beat.sent() {
                // Past the credential's deadline: this frame is not sent.
                this.end(Reason::CredentialExpired);
                continue;
            }
            return Poll::Ready(Some(Ok(Frame::data(frame))));
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

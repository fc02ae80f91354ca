//! The SSE streams the manager hands rmcp, each holding its request in
//! flight for exactly as long as it is open.

use crate::entry::Entry;
use futures_core::Stream;
use rmcp::transport::streamable_http_server::session::{EventStream, ServerSseMessage};
use sessionreg::InFlight;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc::Receiver;

/// A stream of messages for one request (the answers to one request, the
/// standalone GET stream, or events replayed after a `Last-Event-ID`) that
/// keeps its session from going idle while it is open: it holds an
/// [`InFlight`] guard, dropped as soon as the stream ends or rmcp drops it
/// (the client went away).
pub(crate) struct InFlightStream {
    messages: Option<Messages>,
    request: Option<InFlight<Entry>>,
}

/// Where the messages come from.
enum Messages {
    /// The session's worker.
    Worker(Receiver<ServerSseMessage>),
    /// The event store's replay.
    Stored(EventStream),
}

impl InFlightStream {
    /// Messages from the session's worker.
    pub(crate) fn new(messages: Receiver<ServerSseMessage>, request: InFlight<Entry>) -> Self {
        InFlightStream {
            messages: Some(Messages::Worker(messages)),
            request: Some(request),
        }
    }

    /// Events the event store replays.
    pub(crate) fn stored(events: EventStream, request: InFlight<Entry>) -> Self {
        InFlightStream {
            messages: Some(Messages::Stored(events)),
            request: Some(request),
        }
    }

    /// A stream that has already ended (its answer is a note for the
    /// [`StatusLayer`](crate::StatusLayer), which replaces it).
    pub(crate) fn ended() -> Self {
        InFlightStream {
            messages: None,
            request: None,
        }
    }
}

impl Stream for InFlightStream {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = match self.messages.as_mut() {
            None => return Poll::Ready(None),
            Some(Messages::Worker(messages)) => messages.poll_recv(cx),
            Some(Messages::Stored(events)) => events.as_mut().poll_next(cx),
        };
        if let Poll::Ready(None) = next {
            // The worker closed it, or the replay is over: the request is
            // over, whenever rmcp gets round to dropping the stream.
            self.messages = None;
            self.request = None;
        }
        next
    }
}

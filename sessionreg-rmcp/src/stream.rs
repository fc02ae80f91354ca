//! The SSE streams the manager hands rmcp, each holding its request in
//! flight for exactly as long as it is open.

use crate::entry::Entry;
use futures_core::Stream;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use sessionreg::InFlight;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc::Receiver;

/// A stream of messages from a session's worker (the answers to one
/// request, or the standalone GET stream) that keeps its session from going
/// idle while it is open: it holds an [`InFlight`] guard, dropped as soon as
/// the worker closes the stream or rmcp drops it (the client went away).
pub(crate) struct InFlightStream {
    messages: Option<Receiver<ServerSseMessage>>,
    request: Option<InFlight<Entry>>,
}

impl InFlightStream {
    pub(crate) fn new(messages: Receiver<ServerSseMessage>, request: InFlight<Entry>) -> Self {
        InFlightStream {
            messages: Some(messages),
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
        let Some(messages) = self.messages.as_mut() else {
            return Poll::Ready(None);
        };
        let next = messages.poll_recv(cx);
        if let Poll::Ready(None) = next {
            // The worker closed it: the request is over, whenever rmcp gets
            // round to dropping the stream.
            self.messages = None;
            self.request = None;
        }
        next
    }
}

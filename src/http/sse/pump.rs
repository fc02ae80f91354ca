//! Carrying a handler's streamed reply ([`Reply::Stream`]) to its client:
//! [`Out`], the sender a reply stream's messages go through (straight to
//! one connection, or through a session's log of the stream, to whichever
//! connection carries it now), and [`Out::pump`], which moves the
//! handler's messages into it until the stream ends or nobody can receive
//! it any more.
//!
//! [`Reply::Stream`]: crate::http::Reply::Stream

use super::frame;
use super::outlet::Outlet;
use super::resume::EventId;
use super::streams::Streams;
use crate::http::wire::caught::panic_message;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Where a reply stream's messages go.
pub(crate) struct Out<'a> {
    to: To<'a>,
    /// Set once the stream has been finished (by the pump, a stop, or the
    /// drop of a task dropped unfinished).
    finished: bool,
}

enum To<'a> {
    /// Straight to the one connection; the stream ends when it goes (or
    /// stalls: a client that takes nothing for the stall timeout).
    Direct {
        outlet: Arc<Outlet>,
        number: u64,
        seq: u64,
    },
    /// Through the session's log of stream `number`, to whichever
    /// connection carries it now (none while the client reconnects).
    Logged { streams: &'a Streams, number: u64 },
}

impl<'a> Out<'a> {
    /// Straight to `outlet`, with event ids of stream `number`.
    pub(crate) fn direct(outlet: Arc<Outlet>, number: u64) -> Out<'a> {
        Out {
            to: To::Direct {
                outlet,
                number,
                seq: 0,
            },
            finished: false,
        }
    }

    /// Through the log of stream `number` of `streams`.
    pub(crate) fn logged(streams: &'a Streams, number: u64) -> Out<'a> {
        Out {
            to: To::Logged { streams, number },
            finished: false,
        }
    }

    /// Whether the stream is logged, so a client can resume it: it is then
    /// pumped even when nobody is connected.
    pub(crate) fn is_logged(&self) -> bool {
        matches!(self.to, To::Logged { .. })
    }

    /// Resolves when nobody can receive the stream any more (ending it if
    /// it stalls while the handler is quiet).
    async fn gone(&self) {
        match &self.to {
            To::Direct { outlet, .. } => outlet.watch().await,
            To::Logged { .. } => std::future::pending().await,
        }
    }

    /// Sends one message, waiting for room in the connection's queue
    /// (bounded in messages and bytes); `false` if the stream should stop.
    async fn send(&mut self, message: &Value) -> bool {
        match &mut self.to {
            To::Direct {
                outlet,
                number,
                seq,
            } => {
                *seq += 1;
                let id = EventId {
                    stream: *number,
                    seq: *seq,
                };
                outlet.send(frame::event(id, message)).await.is_ok()
            }
            To::Logged { streams, number } => {
                let (frame, sink) = streams.lock().record(*number, message);
                if let Some(outlet) = sink {
                    // A connection that goes (or stalls) meanwhile loses
                    // nothing: the frame is logged for the resume.
                    let _ = outlet.send(frame).await;
                }
                true
            }
        }
    }

    /// Sends one last message without waiting (dropped if there is no
    /// room; kept in the log of a logged stream).
    pub(crate) fn try_send(&mut self, message: &Value) {
        match &mut self.to {
            To::Direct {
                outlet,
                number,
                seq,
            } => {
                *seq += 1;
                let id = EventId {
                    stream: *number,
                    seq: *seq,
                };
                let _ = outlet.try_push(frame::event(id, message));
            }
            To::Logged { streams, number } => {
                let (frame, sink) = streams.lock().record(*number, message);
                if let Some(outlet) = sink {
                    let _ = outlet.try_push(frame);
                }
            }
        }
    }

    /// Ends the stream: its connection delivers what is queued, then ends
    /// (a logged stream's log is kept for a late resume). Once only.
    pub(crate) fn finish(&mut self) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        match &self.to {
            To::Direct { outlet, .. } => outlet.finish(),
            To::Logged { streams, number } => streams.lock().finish(*number),
        }
    }

    /// Streams a handler's reply until it ends or nobody can receive it any
    /// more, each message through `outgoing` (which may hold one back).
    /// `Err` when the handler's stream panicked: what it said. (The session's end, a
    /// cancel and the handler timeout stop it from outside, by dropping
    /// it.)
    pub(crate) async fn pump(
        &mut self,
        mut stream: BoxStream<'static, Value>,
        outgoing: impl Fn(Value) -> Option<Value>,
    ) -> Result<(), String> {
        loop {
            let next = AssertUnwindSafe(stream.next()).catch_unwind();
            let item = tokio::select! {
                _ = self.gone() => return Ok(()),
                item = next => item,
            };
            match item {
                Ok(Some(message)) => {
                    let Some(message) = outgoing(message) else {
                        continue;
                    };
                    if !self.send(&message).await {
                        return Ok(());
                    }
                }
                Ok(None) => return Ok(()),
                Err(panic) => {
                    return Err(format!("reply stream panicked: {}", panic_message(&*panic)))
                }
            }
        }
    }
}

impl Drop for Out<'_> {
    fn drop(&mut self) {
        // A task dropped unfinished (its runtime going away, a 2026-07-28
        // client gone) leaves no stream open behind it.
        self.finish();
    }
}

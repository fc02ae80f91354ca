//! Server-sent event streams: the standalone `GET` stream of a session, with
//! its optional bounded event log for `Last-Event-ID` resumption, and the
//! body type that carries any SSE stream to the client.
//!
//! Event ids come from one counter per session, so they are unique within
//! the session across all of its streams.

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::{Interval, MissedTickBehavior};

/// Frames that may wait in a stream's channel for a slow client. A server
/// message that finds the channel full is dropped from the live stream (it
/// stays in the event log, if there is one, for a resume).
pub(crate) const CHANNEL_CAPACITY: usize = 64;

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// One SSE event carrying a JSON-RPC message.
pub(crate) fn event(id: u64, message: &Value) -> Bytes {
    let data = serde_json::to_string(message).unwrap_or_default();
    Bytes::from(format!("id: {id}\ndata: {data}\n\n"))
}

/// The per-session stream state, kept in the session's registry entry.
#[derive(Debug)]
pub(crate) struct Streams {
    next_event: AtomicU64,
    state: Mutex<State>,
    log_capacity: usize,
    closed: watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct State {
    /// The sending end of the open standalone stream, if any. It is the only
    /// sender: taking it out ends the stream cleanly.
    standalone: Option<mpsc::Sender<Bytes>>,
    log: VecDeque<(u64, Bytes)>,
}

/// A second standalone stream was asked for while one is open.
#[derive(Debug)]
pub(crate) struct Conflict;

impl Streams {
    pub(crate) fn new(log_capacity: usize) -> Streams {
        Streams {
            next_event: AtomicU64::new(1),
            state: Mutex::new(State::default()),
            log_capacity,
            closed: watch::Sender::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next event id of this session.
    pub(crate) fn next_event_id(&self) -> u64 {
        // Relaxed: only uniqueness matters, which the RMW gives.
        self.next_event.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a server-to-client message on the standalone stream; logs it
    /// for resumption when the log is enabled. Whether a stream took it.
    pub(crate) fn push(&self, message: &Value) -> bool {
        let id = self.next_event_id();
        let frame = event(id, message);
        let mut state = self.lock();
        if self.log_capacity > 0 {
            if state.log.len() == self.log_capacity {
                state.log.pop_front();
            }
            state.log.push_back((id, frame.clone()));
        }
        match &state.standalone {
            Some(tx) => tx.try_send(frame).is_ok(),
            None => false,
        }
    }

    /// Opens the standalone stream. Without `last_event_id` a second stream
    /// while one is open is a [`Conflict`]; with it, the client is resuming
    /// a stream it lost, which replaces the old one (ending it) and first
    /// replays the logged events after that id.
    pub(crate) fn open_standalone(
        &self,
        last_event_id: Option<u64>,
    ) -> Result<mpsc::Receiver<Bytes>, Conflict> {
        let mut state = self.lock();
        if *self.closed.borrow() {
            // Terminated: an already-ended stream.
            let (_, rx) = mpsc::channel(1);
            return Ok(rx);
        }
        let open = state.standalone.as_ref().is_some_and(|tx| !tx.is_closed());
        if open && last_event_id.is_none() {
            return Err(Conflict);
        }
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY + self.log_capacity);
        if let Some(last) = last_event_id {
            for (_, frame) in state.log.iter().filter(|(id, _)| *id > last) {
                let _ = tx.try_send(frame.clone());
            }
        }
        state.standalone = Some(tx);
        Ok(rx)
    }

    /// Ends every stream of the session (called by the terminate winner).
    pub(crate) fn close(&self) {
        self.closed.send_replace(true);
        let sender = self.lock().standalone.take();
        drop(sender);
    }

    /// Resolves once the session has ended.
    pub(crate) fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.closed.subscribe();
        async move {
            // An error means the entry is gone, which also means ended.
            let _ = rx.wait_for(|closed| *closed).await;
        }
    }
}

/// The body of an SSE response: the frames a channel delivers, with a
/// keep-alive comment whenever the stream has been quiet for the keep-alive
/// interval. It ends when every sender is gone.
#[derive(Debug)]
pub struct SseBody {
    rx: mpsc::Receiver<Bytes>,
    keep_alive: Option<Interval>,
    /// Dropped with the body: for the standalone stream, the session's
    /// [`InFlight`](crate::InFlight) guard, so the session counts as busy
    /// exactly as long as the client holds the stream open.
    _hold: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl SseBody {
    pub(crate) fn new(
        rx: mpsc::Receiver<Bytes>,
        keep_alive: Option<Duration>,
        hold: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> SseBody {
        let keep_alive = keep_alive.map(|period| {
            let mut interval =
                tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            interval
        });
        SseBody {
            rx,
            keep_alive,
            _hold: hold,
        }
    }
}

impl HttpBody for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.rx.poll_recv(cx) {
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

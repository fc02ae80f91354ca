//! One connection served by [`serve`](crate::http::serve): hyper (HTTP/1.1 or
//! HTTP/2, whichever the client speaks: `protocol.rs`) with the connection
//! bounds, and the
//! watch that closes a connection which never starts a request, or sits
//! with none in flight.
//!
//! * hyper's own timers: the HTTP/1 header read timeout (which also runs
//!   while a keep-alive connection waits for its next request), HTTP/2
//!   keep-alive pings and the cap on concurrent streams.
//! * [`StallIo`](super::stall_io::StallIo) under hyper: a write that makes
//!   no progress for the stall timeout closes the connection.
//! * The watch here: a connection must start its first request within the
//!   header read timeout (hyper's timer cannot run while the protocol is
//!   still being detected, nor for HTTP/2), and one with no request in
//!   flight for the idle timeout (an open SSE stream is in flight) is shut
//!   down gracefully. A connection that does not finish within a grace
//!   period after a graceful shutdown began is dropped.
//!
//! The watch costs a request two uncontended atomic updates on its
//! connection's own counters and no clock read: a timer per connection
//! wakes once per period and compares the request count with the last
//! one it saw, so an idle connection is closed between one and two idle
//! timeouts after its last request ended.

use super::connections::Connections;
use super::protocol::Protocols;
use super::stall_io::StallIo;
use crate::http::counters::HttpCounters;
use crate::http::wire::body::SendBody;
use crate::http::wire::keyed_rate_limit::ClientAddr;
use http::{Request, Response};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{watch, OwnedSemaphorePermit};
use tokio::time::Instant;

/// How long a connection may take to close once a graceful shutdown of it
/// began (for being idle, or never starting a request) before it is
/// dropped, when no header read timeout says otherwise.
const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// What `serve` asks of its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServeMode {
    Serving,
    /// Shut down gracefully: finish what is in flight, take nothing new.
    Draining,
    /// The deadline passed: drop the connection now.
    Stopped,
}

/// The timeouts the watch applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watch {
    pub(crate) first_request: Option<Duration>,
    pub(crate) idle: Option<Duration>,
    pub(crate) stall: Option<Duration>,
}

impl Watch {
    /// The watch of `connections`, with the manager's `stall` timeout.
    pub(crate) fn new(connections: &Connections, stall: Option<Duration>) -> Watch {
        Watch {
            first_request: connections.header_read_timeout,
            idle: connections.idle_timeout,
            stall,
        }
    }

    fn grace(&self) -> Duration {
        self.first_request.unwrap_or(DEFAULT_GRACE)
    }
}

/// Requests on one connection: in flight, and ever started.
#[derive(Default)]
struct Requests {
    in_flight: AtomicUsize,
    started: AtomicU64,
}

/// One request in flight on its connection, until its response body is
/// done (or dropped).
struct Active(Arc<Requests>);

impl Active {
    fn new(activity: &Arc<Requests>) -> Active {
        // Relaxed: the watch reads these as hints on a timer; nothing is
        // ordered by them.
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        activity.started.fetch_add(1, Ordering::Relaxed);
        Active(Arc::clone(activity))
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The application's service, counting each request on its connection
/// (and putting the connection's address in it, when asked to).
struct Tracked<S> {
    inner: S,
    activity: Arc<Requests>,
    /// The peer's address, put in each request (a keyed rate limit may
    /// read it); `None`: not asked for.
    peer: Option<ClientAddr>,
}

impl<S, B> hyper::service::Service<Request<Incoming>> for Tracked<S>
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>>,
{
    type Response = Response<TrackedBody<B>>;
    type Error = S::Error;
    type Future = TrackedFuture<S::Future>;

    fn call(&self, mut request: Request<Incoming>) -> Self::Future {
        if let Some(peer) = self.peer {
            request.extensions_mut().insert(peer);
        }
        TrackedFuture {
            guard: Some(Active::new(&self.activity)),
            inner: self.inner.call(request),
        }
    }
}

pin_project! {
    /// The response future of [`Tracked`]: hands the request's guard on to
    /// the response body.
    struct TrackedFuture<F> {
        #[pin]
        inner: F,
        guard: Option<Active>,
    }
}

impl<F, B, E> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<TrackedBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = std::task::ready!(this.inner.poll(cx))?;
        let guard = this.guard.take();
        Poll::Ready(Ok(response.map(|inner| TrackedBody {
            inner,
            _guard: guard,
        })))
    }
}

pin_project! {
    /// A response body that keeps its request counted in flight on the
    /// connection until it is done.
    pub(crate) struct TrackedBody<B> {
        #[pin]
        inner: B,
        _guard: Option<Active>,
    }
}

impl<B: HttpBody> HttpBody for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What the watch's timer checks when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Due {
    /// Has a request started since `seen` requests had?
    Watching { seen: u64 },
    /// The graceful shutdown took too long.
    Grace,
}

/// What the watch does when its timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Due again after the duration.
    Again(Due, Duration),
    /// Unused: shut the connection down gracefully.
    Close,
    /// It did not close in its grace period: drop it.
    Drop,
    /// Nothing more to watch.
    Stop,
}

impl Watch {
    /// The first check, and when; `None` when nothing is watched.
    fn first(&self) -> Option<(Due, Duration)> {
        let period = match (self.first_request, self.idle) {
            (Some(first), Some(idle)) => first.min(idle),
            (first, idle) => first.or(idle)?,
        };
        Some((Due::Watching { seen: 0 }, period))
    }

    /// The verdict of a check, on a connection `age` old that has started
    /// `started` requests and has `in_flight` of them not yet done.
    fn verdict(&self, check: Due, age: Duration, started: u64, in_flight: usize) -> Action {
        let Due::Watching { seen } = check else {
            return Action::Drop;
        };
        if started == 0 {
            if let Some(limit) = self.first_request {
                if age >= limit {
                    return Action::Close;
                }
                let left = limit - age;
                let after = self.idle.map_or(left, |idle| idle.min(left));
                return Action::Again(check, after);
            }
        }
        match self.idle {
            None => Action::Stop,
            Some(_) if started == seen && in_flight == 0 => Action::Close,
            Some(idle) => Action::Again(Due::Watching { seen: started }, idle),
        }
    }
}

/// Serves one accepted connection until it ends, is found idle, or `serve`
/// stops it. `permit` (the connection's place under the cap) is given back
/// at the end, and the connection gauge with it.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn drive<S, B>(
    stream: TcpStream,
    service: S,
    protocols: Arc<Protocols>,
    watch: Watch,
    mut phase: watch::Receiver<ServeMode>,
    counters: Arc<HttpCounters>,
    permit: OwnedSemaphorePermit,
    peer: Option<ClientAddr>,
) where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: SendBody,
{
    counters.connection_opened();
    let _open = OpenConnection(counters, permit);
    let activity = Arc::new(Requests::default());
    let io = StallIo::new(stream, watch.stall);
    let tracked = Tracked {
        inner: service,
        activity: Arc::clone(&activity),
        peer,
    };
    let connection = protocols.serve(io, tracked);
    tokio::pin!(connection);
    let mut closing = false;
    let accepted = Instant::now();
    let first = watch.first();
    let mut check = first.map_or(Due::Grace, |(check, _)| check);
    let timer = tokio::time::sleep(first.map_or(Duration::MAX / 4, |(_, after)| after));
    tokio::pin!(timer);
    let mut armed = first.is_some();
    loop {
        tokio::select! {
            ended = connection.as_mut() => {
                if let Err(error) = ended {
                    tracing::debug!(%error, "connection ended with an error");
                }
                return;
            }
            changed = phase.changed() => {
                // A dropped sender: `serve` itself was dropped; stop too.
                let now = if changed.is_ok() { *phase.borrow_and_update() } else { ServeMode::Stopped };
                match now {
                    ServeMode::Serving => {}
                    ServeMode::Draining => {
                        if !closing {
                            connection.as_mut().graceful_shutdown();
                            closing = true;
                        }
                        // `serve`'s deadline bounds the drain, not ours.
                        armed = false;
                    }
                    ServeMode::Stopped => return,
                }
            }
            () = &mut timer, if armed => {
                let verdict = watch.verdict(
                    check,
                    accepted.elapsed(),
                    activity.started.load(Ordering::Relaxed),
                    activity.in_flight.load(Ordering::Relaxed),
                );
                match verdict {
                    Action::Again(again, after) => {
                        check = again;
                        match Instant::now().checked_add(after) {
                            Some(at) => timer.as_mut().reset(at),
                            // Too far to reach: nothing more to watch for.
                            None => armed = false,
                        }
                    }
                    Action::Close => {
                        tracing::debug!("closing a connection that is not being used");
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                        check = Due::Grace;
                        match Instant::now().checked_add(watch.grace()) {
                            Some(at) => timer.as_mut().reset(at),
                            None => armed = false,
                        }
                    }
                    Action::Drop => {
                        tracing::debug!("dropping a connection that would not close");
                        return;
                    }
                    Action::Stop => armed = false,
                }
            }
        }
    }
}

/// Counts a connection open until the driver returns, and holds its place
/// under the cap.
struct OpenConnection(Arc<HttpCounters>, #[allow(dead_code)] OwnedSemaphorePermit);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connection_closed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn watch(first: Option<u64>, idle: Option<u64>) -> Watch {
        Watch {
            first_request: first.map(|ms| MS * ms as u32),
            idle: idle.map(|ms| MS * ms as u32),
            stall: None,
        }
    }

    #[test]
    fn a_connection_that_never_starts_a_request_is_closed_at_the_header_timeout() {
        let w = watch(Some(10_000), Some(300));
        let (check, after) = w.first().unwrap();
        // Checked every idle period until the header timeout.
        assert_eq!(after, MS * 300);
        assert_eq!(
            w.verdict(check, MS * 300, 0, 0),
            Action::Again(check, MS * 300)
        );
        assert_eq!(
            w.verdict(check, MS * 9_900, 0, 0),
            Action::Again(check, MS * 100)
        );
        assert_eq!(w.verdict(check, MS * 10_000, 0, 0), Action::Close);
        // Without an idle timeout: one check, at the header timeout.
        let w = watch(Some(10_000), None);
        assert_eq!(w.first().unwrap().1, MS * 10_000);
        assert_eq!(w.verdict(check, MS * 10_000, 0, 0), Action::Close);
        assert_eq!(w.verdict(check, MS * 10_000, 1, 0), Action::Stop);
    }

    #[test]
    fn a_connection_is_closed_after_an_idle_period_with_nothing_new() {
        let w = watch(Some(10_000), Some(300));
        let start = Due::Watching { seen: 0 };
        // A request started before the check: watched as idle from now.
        let seen_one = Due::Watching { seen: 1 };
        assert_eq!(
            w.verdict(start, MS * 300, 1, 0),
            Action::Again(seen_one, MS * 300)
        );
        // Still in flight (a stream): never idle.
        assert_eq!(
            w.verdict(seen_one, MS * 600, 1, 1),
            Action::Again(seen_one, MS * 300)
        );
        // Another request came and went: not idle either.
        let seen_two = Due::Watching { seen: 2 };
        assert_eq!(
            w.verdict(seen_one, MS * 900, 2, 0),
            Action::Again(seen_two, MS * 300)
        );
        // Nothing new, nothing in flight for a whole period: closed.
        assert_eq!(w.verdict(seen_two, MS * 1200, 2, 0), Action::Close);
        // Then the grace period: dropped.
        assert_eq!(w.verdict(Due::Grace, MS * 1500, 2, 0), Action::Drop);
        // Without any timeout, nothing is watched.
        assert_eq!(watch(None, None).first(), None);
        // Idle only: a connection with no request at all is idle too.
        let w = watch(None, Some(300));
        assert_eq!(w.verdict(start, MS * 300, 0, 0), Action::Close);
    }
}

//! The bounds that keep a server safe on the open network, their
//! production defaults, and the [`Builder`] methods that set them (the
//! table of them all, and which hold outside `serve`, is in the layer's
//! docs, `mod.rs`).

use super::app::App;
use super::builder::Builder;
use std::time::Duration;

/// How long a client may take to send a request's headers (and, on an idle
/// keep-alive connection, to start its next request) unless configured.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a whole request body unless
/// configured.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a connection may stay open with no request in flight unless
/// configured.
pub const DEFAULT_CONNECTION_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections [`serve`](super::serve) holds open at most unless
/// configured.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// The HTTP/2 keep-alive ping period (and how long an answer may take)
/// unless configured.
pub const DEFAULT_HTTP2_KEEP_ALIVE: Duration = Duration::from_secs(20);
/// Concurrent HTTP/2 streams per connection unless configured.
pub const DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS: u32 = 100;
/// Requests in flight per session unless configured; the next gets 429.
pub const DEFAULT_MAX_REQUESTS_PER_SESSION: usize = 100;
/// Handlers in flight in the whole manager unless configured; the next
/// request gets 503.
pub const DEFAULT_MAX_HANDLERS: usize = 10_000;
/// Messages that may wait in one SSE stream's queue unless configured.
pub const DEFAULT_STREAM_QUEUE_MESSAGES: usize = 64;
/// Bytes that may wait in one SSE stream's queue unless configured (a
/// single larger message still goes through an empty queue).
pub const DEFAULT_STREAM_QUEUE_BYTES: usize = 256 * 1024;
/// How long a write may make no progress before its stream (and, in
/// `serve`, its connection) is ended, unless configured.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes a session's event logs keep at most, all its streams together,
/// unless configured.
pub const DEFAULT_EVENT_LOG_BYTES: usize = 256 * 1024;
/// Bytes every session's event logs keep at most, together, unless
/// configured.
pub const DEFAULT_EVENT_LOG_TOTAL_BYTES: usize = 128 * 1024 * 1024;
/// How long a request's work (its handler, then its streamed reply) may run
/// unless configured.
pub const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(300);

/// A bound at least this long is no bound: nothing waits that long, and a
/// deadline that far would overflow when added to the time now (hyper's
/// timers do that add). Every timeout setter treats it as `None`.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// `timeout`, or `None` for one too long to ever be reached.
pub(crate) fn reachable(timeout: Option<Duration>) -> Option<Duration> {
    timeout.filter(|t| *t < FOREVER)
}

/// Every bound of a manager; [`Builder`] sets them.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) header_read_timeout: Option<Duration>,
    pub(crate) body_read_timeout: Option<Duration>,
    pub(crate) connection_idle_timeout: Option<Duration>,
    pub(crate) max_connections: usize,
    pub(crate) http2_keep_alive: Option<Duration>,
    pub(crate) http2_max_concurrent_streams: u32,
    pub(crate) max_requests_per_session: usize,
    pub(crate) max_handlers: usize,
    pub(crate) stream_queue_messages: usize,
    pub(crate) stream_queue_bytes: usize,
    pub(crate) stall_timeout: Option<Duration>,
    pub(crate) event_log_bytes: usize,
    pub(crate) event_log_total_bytes: usize,
    pub(crate) handler_timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_read_timeout: Some(DEFAULT_HEADER_READ_TIMEOUT),
            body_read_timeout: Some(DEFAULT_BODY_READ_TIMEOUT),
            connection_idle_timeout: Some(DEFAULT_CONNECTION_IDLE_TIMEOUT),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            http2_keep_alive: Some(DEFAULT_HTTP2_KEEP_ALIVE),
            http2_max_concurrent_streams: DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS,
            max_requests_per_session: DEFAULT_MAX_REQUESTS_PER_SESSION,
            max_handlers: DEFAULT_MAX_HANDLERS,
            stream_queue_messages: DEFAULT_STREAM_QUEUE_MESSAGES,
            stream_queue_bytes: DEFAULT_STREAM_QUEUE_BYTES,
            stall_timeout: Some(DEFAULT_STALL_TIMEOUT),
            event_log_bytes: DEFAULT_EVENT_LOG_BYTES,
            event_log_total_bytes: DEFAULT_EVENT_LOG_TOTAL_BYTES,
            handler_timeout: Some(DEFAULT_HANDLER_TIMEOUT),
        }
    }
}

impl<A: App> Builder<A> {
    /// How long a client may take to send a request's headers; `None`
    /// never times out (default [`DEFAULT_HEADER_READ_TIMEOUT`]). Applied
    /// by [`serve`](super::serve): on HTTP/1 through hyper's timer, which
    /// also runs while a keep-alive connection waits for its next request;
    /// a connection that has not started its first request in this time
    /// (whatever its protocol) is closed.
    pub fn header_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits.header_read_timeout = reachable(timeout);
        self
    }

    /// How long a client may take to send a whole `POST` body; `None` never
    /// times out (default [`DEFAULT_BODY_READ_TIMEOUT`]). A slower body gets
    /// 408 and its connection is closed. Applies wherever the manager is
    /// mounted.
    pub fn body_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits.body_read_timeout = reachable(timeout);
        self
    }

    /// How long a connection may stay open with no request in flight (an
    /// open SSE stream is a request in flight) before [`serve`](super::serve)
    /// shuts it down gracefully; `None` keeps it (default
    /// [`DEFAULT_CONNECTION_IDLE_TIMEOUT`]). HTTP/1 connections idle between
    /// requests are closed sooner, by the header read timeout.
    pub fn connection_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits.connection_idle_timeout = reachable(timeout);
        self
    }

    /// Connections [`serve`](super::serve) holds open at most (default
    /// [`DEFAULT_MAX_CONNECTIONS`]; at least 1). At the cap it stops
    /// accepting until one closes: new clients wait in the kernel's accept
    /// backlog, nothing is spun on and nothing crashes.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.limits.max_connections = connections.max(1);
        self
    }

    /// The HTTP/2 keep-alive ping period, which is also how long the peer
    /// has to answer before the connection is closed; `None` sends no pings
    /// (default [`DEFAULT_HTTP2_KEEP_ALIVE`]). Applied by
    /// [`serve`](super::serve).
    pub fn http2_keep_alive(mut self, period: Option<Duration>) -> Self {
        self.limits.http2_keep_alive = reachable(period);
        self
    }

    /// Concurrent streams per HTTP/2 connection (default
    /// [`DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS`]; at least 1). Applied by
    /// [`serve`](super::serve).
    pub fn http2_max_concurrent_streams(mut self, streams: u32) -> Self {
        self.limits.http2_max_concurrent_streams = streams.max(1);
        self
    }

    /// Requests a session may have in flight at once: a handler running, its
    /// SSE reply streaming, or the session's open `GET` stream (each keeps
    /// the session busy in the registry, and the cap is the registry's own
    /// count of those) (default [`DEFAULT_MAX_REQUESTS_PER_SESSION`]; at
    /// least 1). The next one gets 429 with `Retry-After`; the session is
    /// not affected.
    pub fn max_requests_per_session(mut self, requests: usize) -> Self {
        self.limits.max_requests_per_session = requests.max(1);
        self
    }

    /// Handlers in flight in the whole manager, all sessions together
    /// (default [`DEFAULT_MAX_HANDLERS`]; at least 1). At the cap a request
    /// gets 503 with `Retry-After`. The cap counts handlers still running
    /// after their first poll (those that answer at once never reach it);
    /// it can be passed by at most one request per runtime worker thread.
    pub fn max_handlers(mut self, handlers: usize) -> Self {
        self.limits.max_handlers = handlers.max(1);
        self
    }

    /// The queue of each SSE stream: at most `messages` messages and
    /// `bytes` bytes wait for a slow client (defaults
    /// [`DEFAULT_STREAM_QUEUE_MESSAGES`], [`DEFAULT_STREAM_QUEUE_BYTES`];
    /// each at least 1). One message larger than `bytes` still goes through
    /// an empty queue. A server message to the standalone stream that does
    /// not fit is dropped and counted
    /// (`sessionreg_http_notifications_dropped_total`;
    /// [`Context::notify`](super::Context::notify) returns `false`); a
    /// streamed `POST` reply waits for room instead.
    pub fn stream_queue(mut self, messages: usize, bytes: usize) -> Self {
        self.limits.stream_queue_messages = messages.max(1);
        self.limits.stream_queue_bytes = bytes.max(1);
        self
    }

    /// How long a write may make no progress: an SSE stream whose client
    /// has taken nothing for this long while a message waits is ended (its
    /// session is then idle, and can expire), and [`serve`](super::serve)
    /// closes a connection whose socket has accepted no byte for this long
    /// while a write waits; `None` waits forever (default
    /// [`DEFAULT_STALL_TIMEOUT`]).
    pub fn stall_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits.stall_timeout = reachable(timeout);
        self
    }

    /// The most bytes one session's event logs keep, all its streams
    /// together (default [`DEFAULT_EVENT_LOG_BYTES`]): past it the oldest
    /// events go first, those of finished streams before those of the
    /// stream being logged, and those before other streams'. The log is on
    /// only with [`event_log`](Builder::event_log), and a stream is logged
    /// only once a client has had it (the standalone stream from the first
    /// `GET`).
    pub fn event_log_bytes(mut self, bytes: usize) -> Self {
        self.limits.event_log_bytes = bytes;
        self
    }

    /// The most bytes every session's event logs keep together (default
    /// [`DEFAULT_EVENT_LOG_TOTAL_BYTES`]): past it a session lets its own
    /// oldest events go to log a new one, or, with none, does not log it
    /// (it is still delivered to a connected client). The gauge
    /// `sessionreg_http_event_log_bytes` shows how much they hold.
    pub fn event_log_total_bytes(mut self, bytes: usize) -> Self {
        self.limits.event_log_total_bytes = bytes;
        self
    }

    /// How long a request's work may run: its handler, then its streamed
    /// reply; `None` lets it run for as long as its session lives (default
    /// [`DEFAULT_HANDLER_TIMEOUT`]). Past it the work is dropped, the
    /// request gets a JSON-RPC error (-32603, `data.timeoutMs`; at the end
    /// of a reply stream already started), and its places under
    /// [`max_handlers`](Builder::max_handlers) and
    /// [`max_requests_per_session`](Builder::max_requests_per_session) are
    /// free. The session serves on.
    pub fn handler_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.limits.handler_timeout = reachable(timeout);
        self
    }
}

//! Every bound and default of a [`SessionManager`](super::SessionManager):
//! what [`Builder`](super::Builder) sets, validated once when it builds.
//! Data only: each bound is enforced where its refusal is answered (the
//! module named beside it).
//!
//! Their defaults and what happens at each are in the one bounds table of
//! the layer's docs ([`crate::http`], "Bounds"); where each is enforced:
//!
//! | bound | enforced in |
//! |---|---|
//! | body size, body read time | `request_body.rs` (413, 408) |
//! | requests in flight per session | `legacy/` through the registry's `begin_at_most` (429) |
//! | handlers in flight | `admission.rs` (503) |
//! | a request's work | `dispatch.rs` (-32603) |
//! | a `requestState`'s life; single-use ones recorded | `mrtr/sealing.rs` (-32602; 503 when full) |
//! | tasks held; an ended task's retention | `tasks/` (503 when full; freed by the reaper) |
//! | stream queue, stalled writes | `sse/outlet.rs`, `server/stall_io.rs` |
//! | event logs | `sse/resume.rs` |
//! | header read, idle connection, connections, HTTP/2 | `server/` (only where [`serve`](super::serve) runs) |

use std::time::Duration;

/// Request bodies larger than this are refused with 413 unless configured.
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
/// How long a client may take to send a whole request body unless
/// configured.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Requests in flight per session unless configured; the next gets 429.
pub const DEFAULT_MAX_REQUESTS_PER_SESSION: usize = 100;
/// Handlers in flight in the whole manager unless configured; the next
/// request gets 503.
pub const DEFAULT_MAX_HANDLERS: usize = 10_000;
/// How long a request's work (its handler, then its streamed reply) may run
/// unless configured.
pub const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(300);
/// The `Retry-After` of 503 and 429 answers unless configured.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// How long a client may take to send a request's headers (and, on an idle
/// keep-alive connection, to start its next request) unless configured.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
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
/// How long a write may make no progress before its stream (and, in
/// `serve`, its connection) is ended, unless configured.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How often an SSE stream gets a keep-alive comment unless configured.
pub const DEFAULT_SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The reconnection delay priming events tell clients unless configured.
pub const DEFAULT_SSE_RETRY: Duration = Duration::from_secs(1);
/// Messages that may wait in one SSE stream's queue unless configured.
pub const DEFAULT_STREAM_QUEUE_MESSAGES: usize = 64;
/// Bytes that may wait in one SSE stream's queue unless configured (a
/// single larger message still goes through an empty queue).
pub const DEFAULT_STREAM_QUEUE_BYTES: usize = 256 * 1024;
/// Bytes a session's event logs keep at most, all its streams together,
/// unless configured.
pub const DEFAULT_EVENT_LOG_SESSION_BYTES: usize = 256 * 1024;
/// Bytes every session's event logs keep at most, together, unless
/// configured.
pub const DEFAULT_EVENT_LOG_TOTAL_BYTES: usize = 128 * 1024 * 1024;

/// How long a sealed `requestState` opens, unless configured.
pub const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(600);
/// Single-use `requestState`s recorded at most (not used yet) unless
/// configured.
pub const DEFAULT_SINGLE_USE_STATES: usize = 100_000;

/// Listen streams (`subscriptions/listen`) open at once unless configured.
pub const DEFAULT_LISTEN_CAPACITY: usize = 10_000;
/// Listen streams one principal may hold open unless configured.
pub const DEFAULT_LISTEN_SHARE: usize = 100;
/// Publications one listen stream may have waiting unless configured; a
/// stream whose queue fills is ended (its client re-listens).
pub const DEFAULT_LISTEN_QUEUE: usize = 64;
/// Resource URIs one listen filter is honoured for unless configured.
pub const DEFAULT_LISTEN_URIS: usize = 256;

/// Tasks held at most (running, or ended and retained) unless configured.
pub const DEFAULT_TASK_CAPACITY: usize = 10_000;
/// How long an ended task stays readable unless configured (its `ttlMs`).
pub const DEFAULT_TASK_RETENTION: Duration = crate::tasks::DEFAULT_RETENTION;

/// A bound at least this long is no bound: nothing waits that long, and a
/// deadline that far would overflow when added to the time now (hyper's
/// timers do that add).
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// `timeout`, or `None` for one too long to ever be reached.
fn reachable(timeout: Option<Duration>) -> Option<Duration> {
    timeout.filter(|t| *t < FOREVER)
}

/// Every bound and setting of a manager.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) max_body_bytes: usize,
    pub(crate) body_read_timeout: Option<Duration>,
    pub(crate) max_requests_per_session: usize,
    pub(crate) max_handlers: usize,
    pub(crate) handler_timeout: Option<Duration>,
    pub(crate) retry_after: Duration,
    pub(crate) header_read_timeout: Option<Duration>,
    pub(crate) connection_idle_timeout: Option<Duration>,
    pub(crate) max_connections: usize,
    pub(crate) http2_keep_alive: Option<Duration>,
    pub(crate) http2_max_concurrent_streams: u32,
    pub(crate) stall_timeout: Option<Duration>,
    pub(crate) sse_keep_alive: Option<Duration>,
    pub(crate) sse_retry: Option<Duration>,
    pub(crate) standalone_stream: bool,
    pub(crate) stream_queue_messages: usize,
    pub(crate) stream_queue_bytes: usize,
    /// Events kept per stream; 0: no event log.
    pub(crate) event_log_events: usize,
    pub(crate) event_log_session_bytes: usize,
    pub(crate) event_log_total_bytes: usize,
    /// Whether 2026-07-28 requests are served.
    pub(crate) modern: bool,
    pub(crate) request_state_ttl: Duration,
    pub(crate) single_use_states: usize,
    /// Whether the tasks extension is served.
    pub(crate) tasks: bool,
    pub(crate) task_capacity: usize,
    pub(crate) task_retention: Duration,
    /// Whether a task's TTL ends its work (settles it `expired`).
    pub(crate) task_ttl_ends_work: bool,
    /// Listen streams open at once.
    pub(crate) listen_capacity: usize,
    /// Listen streams per principal; `None`: no share.
    pub(crate) listen_share: Option<usize>,
    pub(crate) listen_queue: usize,
    pub(crate) listen_uris: usize,
    /// How often the reaper sweeps, when there is an idle timeout; `None`:
    /// a quarter of the timeout, within 10 ms..1 s.
    pub(crate) reap_interval: Option<Duration>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_body_bytes: DEFAULT_MAX_BODY,
            body_read_timeout: Some(DEFAULT_BODY_READ_TIMEOUT),
            max_requests_per_session: DEFAULT_MAX_REQUESTS_PER_SESSION,
            max_handlers: DEFAULT_MAX_HANDLERS,
            handler_timeout: Some(DEFAULT_HANDLER_TIMEOUT),
            retry_after: DEFAULT_RETRY_AFTER,
            header_read_timeout: Some(DEFAULT_HEADER_READ_TIMEOUT),
            connection_idle_timeout: Some(DEFAULT_CONNECTION_IDLE_TIMEOUT),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            http2_keep_alive: Some(DEFAULT_HTTP2_KEEP_ALIVE),
            http2_max_concurrent_streams: DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS,
            stall_timeout: Some(DEFAULT_STALL_TIMEOUT),
            sse_keep_alive: Some(DEFAULT_SSE_KEEP_ALIVE),
            sse_retry: Some(DEFAULT_SSE_RETRY),
            standalone_stream: true,
            stream_queue_messages: DEFAULT_STREAM_QUEUE_MESSAGES,
            stream_queue_bytes: DEFAULT_STREAM_QUEUE_BYTES,
            event_log_events: 0,
            event_log_session_bytes: DEFAULT_EVENT_LOG_SESSION_BYTES,
            event_log_total_bytes: DEFAULT_EVENT_LOG_TOTAL_BYTES,
            modern: true,
            request_state_ttl: DEFAULT_REQUEST_STATE_TTL,
            single_use_states: DEFAULT_SINGLE_USE_STATES,
            tasks: false,
            task_capacity: DEFAULT_TASK_CAPACITY,
            task_retention: DEFAULT_TASK_RETENTION,
            task_ttl_ends_work: false,
            listen_capacity: DEFAULT_LISTEN_CAPACITY,
            listen_share: Some(DEFAULT_LISTEN_SHARE),
            listen_queue: DEFAULT_LISTEN_QUEUE,
            listen_uris: DEFAULT_LISTEN_URIS,
            reap_interval: None,
        }
    }
}

impl Config {
    /// The configuration as the manager runs it, validated once: counts of
    /// at least 1, a timeout too long to reach as none (before hyper adds
    /// it to the time now), and the reaper's period for `idle_timeout`
    /// (none without one).
    pub(crate) fn validated(mut self, idle_timeout: Option<Duration>) -> Config {
        for timeout in [
            &mut self.body_read_timeout,
            &mut self.handler_timeout,
            &mut self.header_read_timeout,
            &mut self.connection_idle_timeout,
            &mut self.http2_keep_alive,
            &mut self.stall_timeout,
            &mut self.sse_keep_alive,
        ] {
            *timeout = reachable(*timeout);
        }
        for count in [
            &mut self.max_requests_per_session,
            &mut self.max_handlers,
            &mut self.max_connections,
            &mut self.stream_queue_messages,
            &mut self.stream_queue_bytes,
        ] {
            *count = (*count).max(1);
        }
        self.http2_max_concurrent_streams = self.http2_max_concurrent_streams.max(1);
        self.reap_interval = idle_timeout.map(|t| {
            self.reap_interval
                .unwrap_or_else(|| (t / 4).clamp(Duration::from_millis(10), Duration::from_secs(1)))
        });
        self
    }

    /// The `Retry-After` of refusals that ask for a retry: whole seconds,
    /// at least 1.
    pub(crate) fn retry_after_secs(&self) -> u64 {
        self.retry_after.as_secs().max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validated_once() {
        let config = Config {
            max_handlers: 0,
            stall_timeout: Some(Duration::MAX),
            handler_timeout: Some(Duration::from_secs(5)),
            retry_after: Duration::from_millis(10),
            ..Config::default()
        }
        .validated(Some(Duration::from_secs(60)));
        assert_eq!(config.max_handlers, 1);
        assert_eq!(config.stall_timeout, None);
        assert_eq!(config.handler_timeout, Some(Duration::from_secs(5)));
        assert_eq!(config.reap_interval, Some(Duration::from_secs(1)));
        assert_eq!(config.retry_after_secs(), 1);
        assert_eq!(Config::default().validated(None).reap_interval, None);
        let short = Config::default().validated(Some(Duration::from_millis(8)));
        assert_eq!(short.reap_interval, Some(Duration::from_millis(10)));
    }
}

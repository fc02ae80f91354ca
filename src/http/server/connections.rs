//! The bounds [`serve`](super::serve) puts on the connections it accepts
//! ([`Connections`]): they belong to the accept loop and to hyper's
//! connection builder, so they are set where `serve` reads them, not on the
//! manager (which is also mounted on stacks that are not `serve`'s).

use crate::http::wire::config::MAX_DURATION;
use crate::http::wire::config_error::{bound, count, ConfigError};
use std::time::Duration;

/// The connection bounds of [`serve_with`](super::serve_with) (and, at
/// their defaults, of [`serve`](super::serve)): each with a production
/// default; a timeout that may be off takes an `Option` (`None`: none).
/// Checked when serving starts ([`Connections::validate`]): a value out of
/// its range is a [`ConfigError`] naming the setting.
///
/// ```
/// use std::time::Duration;
/// use sessionreg::http::Connections;
///
/// let connections = Connections::default()
///     .max_connections(50_000)
///     .header_read_timeout(Some(Duration::from_secs(5)));
/// connections.validate().unwrap();
/// assert!(Connections::default().max_connections(0).validate().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    pub(crate) header_read_timeout: Option<Duration>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) max_connections: usize,
    pub(crate) http2_keep_alive: Option<Duration>,
    pub(crate) http2_max_concurrent_streams: u32,
}

impl Default for Connections {
    fn default() -> Connections {
        Connections {
            header_read_timeout: Some(Connections::DEFAULT_HEADER_READ_TIMEOUT),
            idle_timeout: Some(Connections::DEFAULT_IDLE_TIMEOUT),
            max_connections: Connections::DEFAULT_MAX_CONNECTIONS,
            http2_keep_alive: Some(Connections::DEFAULT_HTTP2_KEEP_ALIVE),
            http2_max_concurrent_streams: Connections::DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS,
        }
    }
}

impl Connections {
    /// How long a client may take to send a request's headers (and, on an
    /// idle keep-alive connection, to start its next request) by default.
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
    /// How long a connection may stay open with no request in flight by
    /// default.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
    /// Connections held open at most by default.
    pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
    /// The HTTP/2 keep-alive ping period (and how long an answer may take)
    /// by default.
    pub const DEFAULT_HTTP2_KEEP_ALIVE: Duration = Duration::from_secs(20);
    /// Concurrent HTTP/2 streams per connection by default.
    pub const DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS: u32 = 100;

    /// How long a client may take to send a request's headers; `None`
    /// never times out. On HTTP/1 through hyper's timer, which also runs
    /// while a keep-alive connection waits for its next request; a
    /// connection that has not started its first request in this time
    /// (whatever its protocol) is closed.
    pub fn header_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// How long a connection may stay open with no request in flight (an
    /// open SSE stream is a request in flight) before it is shut down
    /// gracefully; `None` keeps it. HTTP/1 connections idle between
    /// requests are closed sooner, by the header read timeout.
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Connections held open at most (at least 1). At the cap `serve`
    /// stops accepting until one closes: new clients wait in the kernel's
    /// accept backlog, nothing is spun on and nothing crashes.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// The HTTP/2 keep-alive ping period, which is also how long the peer
    /// has to answer before the connection is closed; `None` sends no
    /// pings.
    pub fn http2_keep_alive(mut self, period: Option<Duration>) -> Self {
        self.http2_keep_alive = period;
        self
    }

    /// Concurrent streams per HTTP/2 connection (at least 1).
    pub fn http2_max_concurrent_streams(mut self, streams: u32) -> Self {
        self.http2_max_concurrent_streams = streams;
        self
    }

    /// Checks every setting against its range: a [`ConfigError`] names the
    /// first out of it (zero where zero means nothing, a duration past the
    /// layer's longest bound).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let max = MAX_DURATION;
        bound("header_read_timeout", self.header_read_timeout, false, max)?;
        bound("idle_timeout", self.idle_timeout, false, max)?;
        count(
            "max_connections",
            self.max_connections,
            1,
            u32::MAX as usize,
        )?;
        bound("http2_keep_alive", self.http2_keep_alive, false, max)?;
        count(
            "http2_max_concurrent_streams",
            self.http2_max_concurrent_streams as usize,
            1,
            u32::MAX as usize,
        )?;
        Ok(())
    }
}

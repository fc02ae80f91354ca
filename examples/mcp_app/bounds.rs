//! The flags of the bounds against hostile clients (see
//! `sessionreg::http::Builder`): one per bound, each defaulting to the
//! library's default. For timeouts, 0 means none. The connection bounds
//! (header read, idle connection, open connections, HTTP/2) are
//! `sessionreg::http::Connections`, which `serve_with` applies, so
//! `mcp_server` does; mounted in axum, the others hold.

use clap::Args;
use sessionreg::http::{self as mcp, App, Builder};
use std::time::Duration;

const fn ms(duration: Duration) -> u64 {
    duration.as_millis() as u64
}

/// A timeout flag: 0 means none.
fn timeout(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// The bound flags.
#[derive(Args, Debug, Clone)]
pub struct Bounds {
    /// Time to send a request's headers (and to start the next request on
    /// an idle HTTP/1 connection), in milliseconds.
    #[arg(long, default_value_t = ms(mcp::Connections::DEFAULT_HEADER_READ_TIMEOUT))]
    pub header_read_timeout_ms: u64,
    /// Time to send a whole POST body, in milliseconds (then 408).
    #[arg(long, default_value_t = ms(mcp::Defaults::BODY_READ_TIMEOUT))]
    pub body_read_timeout_ms: u64,
    /// A connection with no request in flight this long is closed, in
    /// milliseconds.
    #[arg(long, default_value_t = ms(mcp::Connections::DEFAULT_IDLE_TIMEOUT))]
    pub connection_idle_timeout_ms: u64,
    /// Open connections at most; past it the server stops accepting.
    #[arg(long, default_value_t = mcp::Connections::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// HTTP/2 keep-alive ping period (and answer timeout), in milliseconds.
    #[arg(long, default_value_t = ms(mcp::Connections::DEFAULT_HTTP2_KEEP_ALIVE))]
    pub http2_keep_alive_ms: u64,
    /// Concurrent streams per HTTP/2 connection.
    #[arg(long, default_value_t = mcp::Connections::DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS)]
    pub http2_max_streams: u32,
    /// Requests in flight per session; the next gets 429.
    #[arg(long, default_value_t = mcp::Defaults::MAX_REQUESTS_PER_SESSION)]
    pub max_requests_per_session: usize,
    /// Handlers in flight in the whole server; the next request gets 503.
    #[arg(long, default_value_t = mcp::Defaults::MAX_HANDLERS)]
    pub max_handlers: usize,
    /// Largest request body, in bytes (then 413).
    #[arg(long, default_value_t = mcp::Defaults::MAX_BODY)]
    pub max_body_bytes: usize,
    /// Messages waiting in one SSE stream's queue, at most.
    #[arg(long, default_value_t = mcp::Defaults::STREAM_QUEUE_MESSAGES)]
    pub stream_queue_messages: usize,
    /// Bytes waiting in one SSE stream's queue, at most.
    #[arg(long, default_value_t = mcp::Defaults::STREAM_QUEUE_BYTES)]
    pub stream_queue_bytes: usize,
    /// A write that makes no progress this long ends its stream (and, in
    /// mcp_server, its connection), in milliseconds.
    #[arg(long, default_value_t = ms(mcp::Defaults::STALL_TIMEOUT))]
    pub stall_timeout_ms: u64,
    /// Bytes kept by one session's event logs, all its streams together,
    /// at most.
    #[arg(long, default_value_t = mcp::Defaults::EVENT_LOG_SESSION_BYTES)]
    pub event_log_bytes: usize,
    /// Bytes kept by every session's event logs together, at most.
    #[arg(long, default_value_t = mcp::Defaults::EVENT_LOG_TOTAL_BYTES)]
    pub event_log_total_bytes: usize,
    /// How long a request's handler (and its streamed reply) may run, in
    /// milliseconds (then a JSON-RPC error, and its slot is free).
    #[arg(long, default_value_t = ms(mcp::Defaults::HANDLER_TIMEOUT))]
    pub handler_timeout_ms: u64,
    /// Requests each principal may send, as COUNT/s, COUNT/m or COUNT/h
    /// (e.g. 20/s; default: no limit): past it, 429 with Retry-After and
    /// RateLimit headers. One node's limit.
    #[arg(long, value_name = "RATE")]
    pub rate_limit: Option<mcp::Rate>,
    /// The most requests a principal may send at once within --rate-limit
    /// (default: one window's worth, the rate's count).
    #[arg(long, value_name = "REQUESTS", requires = "rate_limit")]
    pub rate_burst: Option<u32>,
    /// A tool's own limit, per principal, as TOOL=RATE (repeatable; e.g.
    /// basket_add=5/s): past it, that tool's calls get 429 naming it.
    #[arg(long = "tool-rate-limit", value_name = "TOOL=RATE", value_parser = tool_rate)]
    pub tool_rate_limits: Vec<(String, mcp::Rate)>,
}

/// `--tool-rate-limit TOOL=RATE`.
fn tool_rate(flag: &str) -> Result<(String, mcp::Rate), String> {
    let (tool, rate) = flag
        .split_once('=')
        .filter(|(tool, _)| !tool.is_empty())
        .ok_or_else(|| format!("{flag:?} is not TOOL=RATE"))?;
    let rate = rate.parse().map_err(|e| format!("{e}"))?;
    Ok((tool.to_string(), rate))
}

impl Bounds {
    /// The builder with every bound set from the flags.
    pub fn apply<A: App>(&self, builder: Builder<A>) -> Builder<A> {
        let builder = builder
            .body_read_timeout(timeout(self.body_read_timeout_ms))
            .max_requests_per_session(self.max_requests_per_session)
            .max_handlers(self.max_handlers)
            .max_body_bytes(self.max_body_bytes)
            .stream_queue(self.stream_queue_messages, self.stream_queue_bytes)
            .stall_timeout(timeout(self.stall_timeout_ms))
            .event_log_session_bytes(self.event_log_bytes)
            .event_log_total_bytes(self.event_log_total_bytes)
            .handler_timeout(timeout(self.handler_timeout_ms))
            .rate_limit(self.rate_limit)
            .rate_burst(self.rate_burst);
        self.tool_rate_limits
            .iter()
            .fold(builder, |builder, (tool, rate)| {
                builder.tool_rate_limit(tool, *rate)
            })
    }

    /// The connection bounds from the flags (`serve_with` applies them),
    /// checked: a value out of range is the error naming it.
    pub fn connections(&self) -> Result<mcp::Connections, mcp::ConfigError> {
        let connections = mcp::Connections::default()
            .header_read_timeout(timeout(self.header_read_timeout_ms))
            .idle_timeout(timeout(self.connection_idle_timeout_ms))
            .max_connections(self.max_connections)
            .http2_keep_alive(timeout(self.http2_keep_alive_ms))
            .http2_max_concurrent_streams(self.http2_max_streams);
        connections.validate()?;
        Ok(connections)
    }
}

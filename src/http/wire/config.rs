//! Every bound and default of a [`SessionManager`](crate::http::SessionManager):
//! what [`Builder`](crate::http::Builder) sets, validated once when it builds
//! (a value out of range is a [`ConfigError`] naming the setting; nothing is
//! quietly changed). Data only: each bound is enforced where its refusal is
//! answered (the module named beside it).
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
//! | a `requestState`'s life; single-use ones recorded, in all and per principal | `input/sealing.rs`, `input/single_use.rs` (-32602; 429 past a share, 503 when full) |
//! | requests per principal per window; the cells that count them | `access/rates/` (429; past the cells' bound, a shared cell) |
//! | tasks held, in all and per principal; an ended task's retention; a wait for input | `tasks/` (429 past a share, 503 when full; freed by the reaper; the task fails) |
//! | stream queue, stalled writes | `sse/outlet.rs`, `server/stall_io.rs` |
//! | event logs | `sse/resume.rs` |
//! | header read, idle connection, connections, HTTP/2 | `server/` (only where [`serve`](crate::http::serve) runs) |

use crate::http::wire::config_error::{bound, count, duration, ConfigError};
use crate::http::wire::keyed_rate_limit::KeyedRateLimit;
use crate::MAX_CAPACITY;
use std::time::Duration;

/// Request bodies larger than this are refused with 413 unless configured.
pub(crate) const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
/// How long a client may take to send a whole request body unless
/// configured.
pub(crate) const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Requests in flight per session unless configured; the next gets 429.
pub(crate) const DEFAULT_MAX_REQUESTS_PER_SESSION: usize = 100;
/// Handlers in flight in the whole manager unless configured; the next
/// request gets 503.
pub(crate) const DEFAULT_MAX_HANDLERS: usize = 10_000;
/// How long a request's work (its handler, then its streamed reply) may run
/// unless configured.
pub(crate) const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(300);
/// The `Retry-After` of 503 and 429 answers unless configured.
pub(crate) const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// How long a write may make no progress before its stream (and, in
/// `serve`, its connection) is ended, unless configured.
pub(crate) const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How often an SSE stream gets a keep-alive comment unless configured.
pub(crate) const DEFAULT_SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The reconnection delay priming events tell clients unless configured.
pub(crate) const DEFAULT_SSE_RETRY: Duration = Duration::from_secs(1);
/// Messages that may wait in one SSE stream's queue unless configured.
pub(crate) const DEFAULT_STREAM_QUEUE_MESSAGES: usize = 64;
/// Bytes that may wait in one SSE stream's queue unless configured (a
/// single larger message still goes through an empty queue).
pub(crate) const DEFAULT_STREAM_QUEUE_BYTES: usize = 256 * 1024;
/// Bytes a session's event logs keep at most, all its streams together,
/// unless configured.
pub(crate) const DEFAULT_EVENT_LOG_SESSION_BYTES: usize = 256 * 1024;
/// Bytes every session's event logs keep at most, together, unless
/// configured.
pub(crate) const DEFAULT_EVENT_LOG_TOTAL_BYTES: usize = 128 * 1024 * 1024;

/// How long a sealed `requestState` opens, unless configured.
pub(crate) const DEFAULT_REQUEST_STATE_TTL: Duration = Duration::from_secs(600);
/// Single-use `requestState`s recorded at most (not used yet) unless
/// configured.
pub(crate) const DEFAULT_SINGLE_USE_STATES: usize = 100_000;

/// Series of `mcp_server_operation_duration_seconds` named by a tool or
/// prompt a request names, unless configured: past them a new name counts
/// under `_OTHER`.
pub(crate) const DEFAULT_OPERATION_SERIES: usize = 1_000;
/// The most series of it anyone may configure (each is a few hundred
/// bytes: the bound keeps a million names from one client out).
pub(crate) const MAX_OPERATION_SERIES: usize = 100_000;

/// Listen streams (`subscriptions/listen`) open at once unless configured.
pub(crate) const DEFAULT_LISTEN_CAPACITY: usize = 10_000;
/// Resource updates one listen stream may have waiting unless configured; a
/// stream whose queue fills is ended (its client re-listens).
pub(crate) const DEFAULT_LISTEN_QUEUE: usize = 64;
/// Resource URIs one listen filter is honoured for unless configured.
pub(crate) const DEFAULT_LISTEN_URIS: usize = 256;
/// The longest resource URI a listen filter (or a `resources/subscribe`)
/// may name unless configured: 2 KiB, what browsers and proxies have long
/// taken as the practical limit of a URL; MCP's resource URIs are far
/// shorter.
pub(crate) const DEFAULT_LISTEN_URI_BYTES: usize = 2 * 1024;
/// Bytes of the URIs one filter (or one session's subscriptions) is
/// honoured for together unless configured: 64 KiB, 256 URIs of 256 bytes.
pub(crate) const DEFAULT_LISTEN_FILTER_BYTES: usize = 64 * 1024;
/// Bytes of resource URIs kept in all, every filter and every session's
/// subscriptions together, unless configured: 64 MiB.
pub(crate) const DEFAULT_LISTEN_BYTES: usize = 64 * 1024 * 1024;
/// The most bytes of a listen request's id (its JSON text), which its
/// stream keeps and stamps on every frame: past it the listen is refused
/// (`-32600`). Ids are numbers or short strings (a UUID is 38 bytes).
pub(crate) const LISTEN_ID_BYTES: usize = 256;
/// What the topic index keeps of one resource URI beside its text, charged
/// with it against the URI byte bounds (about 450 bytes for a URI of one
/// member, 80 for each further one; rounded up).
pub(crate) const LISTEN_URI_OVERHEAD: usize = 512;

/// Principals with a rate-limit cell of their own unless configured (past
/// it, newcomers share one cell until idle ones are pruned).
pub(crate) const DEFAULT_RATE_LIMITED_PRINCIPALS: usize = 100_000;
/// The largest burst a rate limit takes.
pub(crate) const MAX_RATE_BURST: u32 = 1_000_000;

/// Tasks held at most (running, or ended and retained) unless configured.
pub(crate) const DEFAULT_TASK_CAPACITY: usize = 10_000;
/// How long an ended task stays readable unless configured (its `ttlMs`).
pub(crate) const DEFAULT_TASK_RETENTION: Duration = crate::tasks::DEFAULT_RETENTION;
/// How long a task's work waits for the client's input
/// ([`TaskContext::input`](crate::http::tasks::TaskContext::input)) unless
/// configured; then the task fails.
pub(crate) const DEFAULT_TASK_INPUT_TIMEOUT: Duration = Duration::from_secs(300);

/// Unless configured, a principal's share of a shared store (tasks,
/// single-use `requestState`s) is the store's capacity divided by this,
/// rounded up: 1,000 of the default 10,000 tasks, 10,000 of the default
/// 100,000 single-use states. A tenth: ten principals at their share fill a
/// store, so the rest need at least ten abusers to notice anything, while
/// one heavy principal keeps 1,000 tasks at once (about 1.6 new ones a
/// second, sustained, with the default 10-minute retention). A server with
/// fewer, heavier principals raises it ([`Builder::task_share`](crate::http::Builder::task_share)).
pub(crate) const DEFAULT_SHARE_DIVISOR: usize = 10;

/// The longest duration any setting takes. A bound that may be off takes an
/// `Option` (`None`: none); a longer one is refused, not read as none.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The most requests in flight a session may be allowed (far below the
/// eight million at which the registry's in-flight count would abort).
pub(crate) const MAX_REQUESTS_PER_SESSION: usize = 1_000_000;

/// A principal's share of a store of `capacity` unless configured.
pub(crate) fn default_share(capacity: usize) -> usize {
    capacity.div_ceil(DEFAULT_SHARE_DIVISOR)
}

/// The defaults of a [`SessionManager`](crate::http::SessionManager)'s bounds
/// (what its [`Builder`](crate::http::Builder) starts from), and the largest
/// values the builder takes: associated constants, grouped out of the
/// layer's root. The bounds table of [`crate::http`] says what each does.
///
/// ```
/// use sessionreg::http::Defaults;
///
/// assert_eq!(Defaults::MAX_BODY, 4 * 1024 * 1024);
/// assert!(Defaults::HANDLER_TIMEOUT < Defaults::DURATION_LIMIT);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Defaults;

impl Defaults {
    /// Request bodies larger than this are refused with 413 unless configured.
    pub const MAX_BODY: usize = DEFAULT_MAX_BODY;
    /// How long a client may take to send a whole request body unless
    /// configured.
    pub const BODY_READ_TIMEOUT: Duration = DEFAULT_BODY_READ_TIMEOUT;
    /// Requests in flight per session unless configured; the next gets 429.
    pub const MAX_REQUESTS_PER_SESSION: usize = DEFAULT_MAX_REQUESTS_PER_SESSION;
    /// Handlers in flight in the whole manager unless configured; the next
    /// request gets 503.
    pub const MAX_HANDLERS: usize = DEFAULT_MAX_HANDLERS;
    /// How long a request's work (its handler, then its streamed reply) may run
    /// unless configured.
    pub const HANDLER_TIMEOUT: Duration = DEFAULT_HANDLER_TIMEOUT;
    /// The `Retry-After` of 503 and 429 answers unless configured.
    pub const RETRY_AFTER: Duration = DEFAULT_RETRY_AFTER;
    /// How long a write may make no progress before its stream (and, in
    /// `serve`, its connection) is ended, unless configured.
    pub const STALL_TIMEOUT: Duration = DEFAULT_STALL_TIMEOUT;
    /// How often an SSE stream gets a keep-alive comment unless configured.
    pub const SSE_KEEP_ALIVE: Duration = DEFAULT_SSE_KEEP_ALIVE;
    /// The reconnection delay priming events tell clients unless configured.
    pub const SSE_RETRY: Duration = DEFAULT_SSE_RETRY;
    /// Messages that may wait in one SSE stream's queue unless configured.
    pub const STREAM_QUEUE_MESSAGES: usize = DEFAULT_STREAM_QUEUE_MESSAGES;
    /// Bytes that may wait in one SSE stream's queue unless configured (a
    /// single larger message still goes through an empty queue).
    pub const STREAM_QUEUE_BYTES: usize = DEFAULT_STREAM_QUEUE_BYTES;
    /// Bytes a session's event logs keep at most, all its streams together,
    /// unless configured.
    pub const EVENT_LOG_SESSION_BYTES: usize = DEFAULT_EVENT_LOG_SESSION_BYTES;
    /// Bytes every session's event logs keep at most, together, unless
    /// configured.
    pub const EVENT_LOG_TOTAL_BYTES: usize = DEFAULT_EVENT_LOG_TOTAL_BYTES;
    /// How long a sealed `requestState` opens, unless configured.
    pub const REQUEST_STATE_TTL: Duration = DEFAULT_REQUEST_STATE_TTL;
    /// Single-use `requestState`s recorded at most (not used yet) unless
    /// configured.
    pub const SINGLE_USE_STATES: usize = DEFAULT_SINGLE_USE_STATES;
    /// Series of `mcp_server_operation_duration_seconds` a tool's or a
    /// prompt's name opens, unless configured.
    pub const OPERATION_SERIES: usize = DEFAULT_OPERATION_SERIES;
    /// Listen streams (`subscriptions/listen`) open at once unless configured.
    pub const LISTEN_CAPACITY: usize = DEFAULT_LISTEN_CAPACITY;
    /// Resource updates one listen stream may have waiting unless configured; a
    /// stream whose queue fills is ended (its client re-listens).
    pub const LISTEN_QUEUE: usize = DEFAULT_LISTEN_QUEUE;
    /// Resource URIs one listen filter is honoured for unless configured.
    pub const LISTEN_URIS: usize = DEFAULT_LISTEN_URIS;
    /// The longest resource URI a listen filter (or a
    /// `resources/subscribe`) may name unless configured.
    pub const LISTEN_URI_BYTES: usize = DEFAULT_LISTEN_URI_BYTES;
    /// Bytes of the URIs one filter (or one session's subscriptions) is
    /// honoured for together unless configured.
    pub const LISTEN_FILTER_BYTES: usize = DEFAULT_LISTEN_FILTER_BYTES;
    /// Bytes of resource URIs kept in all unless configured.
    pub const LISTEN_BYTES: usize = DEFAULT_LISTEN_BYTES;
    /// The most bytes of a listen request's id (fixed): its stream keeps
    /// it and stamps it on every frame.
    pub const LISTEN_ID_BYTES: usize = LISTEN_ID_BYTES;
    /// What each resource URI a filter or a subscription keeps is charged
    /// beside its bytes, against `listen_bytes` and `listen_bytes_share`
    /// (fixed): what the topic index keeps of it.
    pub const LISTEN_URI_OVERHEAD: usize = LISTEN_URI_OVERHEAD;
    /// Principals with a rate-limit cell of their own unless configured.
    pub const RATE_LIMITED_PRINCIPALS: usize = DEFAULT_RATE_LIMITED_PRINCIPALS;
    /// The largest burst a rate limit takes.
    pub const RATE_BURST_LIMIT: u32 = MAX_RATE_BURST;
    /// Tasks held at most (running, or ended and retained) unless configured.
    pub const TASK_CAPACITY: usize = DEFAULT_TASK_CAPACITY;
    /// How long an ended task stays readable unless configured (its `ttlMs`).
    pub const TASK_RETENTION: Duration = DEFAULT_TASK_RETENTION;
    /// How long a task's work waits for the client's input
    /// ([`TaskContext::input`](crate::http::tasks::TaskContext::input)) unless
    /// configured; then the task fails.
    pub const TASK_INPUT_TIMEOUT: Duration = DEFAULT_TASK_INPUT_TIMEOUT;
    /// Unless configured, a principal's share of a shared store (tasks,
    /// single-use `requestState`s) is the store's capacity divided by this,
    /// rounded up: 1,000 of the default 10,000 tasks, 10,000 of the default
    /// 100,000 single-use states. A tenth: ten principals at their share fill a
    /// store, so the rest need at least ten abusers to notice anything, while
    /// one heavy principal keeps 1,000 tasks at once (about 1.6 new ones a
    /// second, sustained, with the default 10-minute retention). A server with
    /// fewer, heavier principals raises it ([`Builder::task_share`](crate::http::Builder::task_share)).
    pub const SHARE_DIVISOR: usize = DEFAULT_SHARE_DIVISOR;
    /// The longest duration any setting takes. A bound that may be off takes an
    /// `Option` (`None`: none); a longer one is refused, not read as none.
    pub const DURATION_LIMIT: Duration = MAX_DURATION;
    /// The most requests in flight a session may be allowed (far below the
    /// eight million at which the registry's in-flight count would abort).
    pub const REQUESTS_PER_SESSION_LIMIT: usize = MAX_REQUESTS_PER_SESSION;
}

/// Every bound and setting of a manager. (The core's `Config` is a
/// registry's, which the layer never sees: one of the crate's two deliberate
/// pairs of names, with the two `Builder`s.)
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) max_body_bytes: usize,
    pub(crate) body_read_timeout: Option<Duration>,
    pub(crate) max_requests_per_session: usize,
    pub(crate) max_handlers: usize,
    pub(crate) handler_timeout: Option<Duration>,
    pub(crate) retry_after: Duration,
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
    /// A principal's share of the single-use record.
    pub(crate) single_use_share: ShareSetting,
    /// Whether the tasks extension is served.
    pub(crate) tasks: bool,
    pub(crate) task_capacity: usize,
    /// A principal's share of the task store.
    pub(crate) task_share: ShareSetting,
    pub(crate) task_retention: Duration,
    /// How long a task's work waits for input; `None`: no bound.
    pub(crate) task_input_timeout: Option<Duration>,
    /// Whether a task's TTL ends its work (settles it `expired`).
    pub(crate) task_ttl_ends_work: bool,
    /// Listen streams open at once.
    pub(crate) listen_capacity: usize,
    /// Listen streams per principal.
    pub(crate) listen_share: ShareSetting,
    pub(crate) listen_queue: usize,
    pub(crate) listen_uris: usize,
    pub(crate) listen_uri_bytes: usize,
    pub(crate) listen_filter_bytes: usize,
    /// Bytes of resource URIs kept in all, and per principal.
    pub(crate) listen_bytes: usize,
    pub(crate) listen_bytes_share: ShareSetting,
    /// Requests per window each principal may send; `None`: no limit.
    pub(crate) rate_limit: Option<crate::http::wire::rate::Rate>,
    /// The burst of the rate limit; `None`: one window's worth.
    pub(crate) rate_burst: Option<u32>,
    /// Principals with a rate-limit cell of their own (per limit).
    pub(crate) rate_limited_principals: usize,
    /// Each limited tool's rate, per principal.
    pub(crate) tool_rate_limits: Vec<(String, crate::http::wire::rate::Rate)>,
    /// The application's keyed limits.
    pub(crate) keyed_rate_limits: Vec<crate::http::wire::keyed_rate_limit::KeyedRateLimit>,
    /// How often the reaper sweeps, when there is an idle timeout; `None`:
    /// a quarter of the timeout, within 10 ms..1 s.
    pub(crate) reap_interval: Option<Duration>,
    /// Duration series named by a tool or a prompt.
    pub(crate) operation_series: usize,
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
            single_use_share: ShareSetting::Default,
            tasks: false,
            task_capacity: DEFAULT_TASK_CAPACITY,
            task_share: ShareSetting::Default,
            task_retention: DEFAULT_TASK_RETENTION,
            task_input_timeout: Some(DEFAULT_TASK_INPUT_TIMEOUT),
            task_ttl_ends_work: false,
            listen_capacity: DEFAULT_LISTEN_CAPACITY,
            listen_share: ShareSetting::Default,
            listen_queue: DEFAULT_LISTEN_QUEUE,
            listen_uris: DEFAULT_LISTEN_URIS,
            listen_uri_bytes: DEFAULT_LISTEN_URI_BYTES,
            listen_filter_bytes: DEFAULT_LISTEN_FILTER_BYTES,
            listen_bytes: DEFAULT_LISTEN_BYTES,
            listen_bytes_share: ShareSetting::Default,
            rate_limit: None,
            rate_burst: None,
            rate_limited_principals: DEFAULT_RATE_LIMITED_PRINCIPALS,
            tool_rate_limits: Vec::new(),
            keyed_rate_limits: Vec::new(),
            reap_interval: None,
            operation_series: DEFAULT_OPERATION_SERIES,
        }
    }
}

impl Config {
    /// The configuration as the manager runs it, validated once: every
    /// count, duration and share in its range (or a [`ConfigError`] naming
    /// the first that is not), the shares resolved (a tenth of their store
    /// unless set), and the reaper's period for `idle_timeout` (none
    /// without one).
    pub(crate) fn validated(
        mut self,
        idle_timeout: Option<Duration>,
    ) -> Result<Config, ConfigError> {
        let max = MAX_DURATION;
        let any = usize::MAX;
        count("max_body_bytes", self.max_body_bytes, 1, any)?;
        bound("body_read_timeout", self.body_read_timeout, false, max)?;
        count(
            "max_requests_per_session",
            self.max_requests_per_session,
            1,
            MAX_REQUESTS_PER_SESSION,
        )?;
        count("max_handlers", self.max_handlers, 1, any)?;
        bound("handler_timeout", self.handler_timeout, false, max)?;
        duration("retry_after", self.retry_after, false, max)?;
        bound("stall_timeout", self.stall_timeout, false, max)?;
        bound("sse_keep_alive", self.sse_keep_alive, false, max)?;
        // A retry of 0 is a reconnection at once: meaningful.
        bound("sse_retry", self.sse_retry, true, max)?;
        count("stream_queue", self.stream_queue_messages, 1, any)?;
        count("stream_queue", self.stream_queue_bytes, 1, any)?;
        count(
            "event_log_session_bytes",
            self.event_log_session_bytes,
            1,
            any,
        )?;
        count("event_log_total_bytes", self.event_log_total_bytes, 1, any)?;
        duration("request_state_ttl", self.request_state_ttl, false, max)?;
        count("single_use_states", self.single_use_states, 1, MAX_CAPACITY)?;
        self.single_use_share
            .check("single_use_share", self.single_use_states)?;
        count("task_capacity", self.task_capacity, 1, MAX_CAPACITY)?;
        self.task_share.check("task_share", self.task_capacity)?;
        duration("task_retention", self.task_retention, false, max)?;
        bound("task_input_timeout", self.task_input_timeout, false, max)?;
        count("listen_capacity", self.listen_capacity, 1, MAX_CAPACITY)?;
        self.listen_share
            .check("listen_share", self.listen_capacity)?;
        count(
            "listen_queue",
            self.listen_queue,
            1,
            crate::mailbox::MAX_CAPACITY,
        )?;
        count("listen_uris", self.listen_uris, 1, any)?;
        // One URI fits a filter, and a filter fits the bound of all.
        count("listen_bytes", self.listen_bytes, 1, any)?;
        count(
            "listen_filter_bytes",
            self.listen_filter_bytes,
            1,
            self.listen_bytes,
        )?;
        count(
            "listen_uri_bytes",
            self.listen_uri_bytes,
            1,
            self.listen_filter_bytes,
        )?;
        self.listen_bytes_share
            .check("listen_bytes_share", self.listen_bytes)?;
        if let Some(rate) = self.rate_limit {
            count("rate_limit", rate.count() as usize, 1, u32::MAX as usize)?;
        }
        if let Some(burst) = self.rate_burst {
            count("rate_burst", burst as usize, 1, MAX_RATE_BURST as usize)?;
        }
        for (_, rate) in &self.tool_rate_limits {
            count(
                "tool_rate_limit",
                rate.count() as usize,
                1,
                u32::MAX as usize,
            )?;
        }
        for (i, limit) in self.keyed_rate_limits.iter().enumerate() {
            let taken = self.keyed_rate_limits[..i]
                .iter()
                .any(|other| other.name == limit.name);
            if taken || !KeyedRateLimit::is_valid_name(&limit.name) {
                return Err(ConfigError::out_of_range(
                    "keyed_rate_limit",
                    &*limit.name,
                    "a name of 1 to 32 of a-z, 0-9, _, - and ., not principal or tool, \
                     each limit its own",
                ));
            }
            let rate = limit.rate.count() as usize;
            count("keyed_rate_limit", rate, 1, u32::MAX as usize)?;
            if let Some(burst) = limit.burst {
                count(
                    "keyed_rate_limit",
                    burst as usize,
                    1,
                    MAX_RATE_BURST as usize,
                )?;
            }
        }
        count(
            "rate_limited_principals",
            self.rate_limited_principals,
            1,
            MAX_CAPACITY,
        )?;
        bound("reap_interval", self.reap_interval, false, max)?;
        count(
            "operation_series",
            self.operation_series,
            1,
            MAX_OPERATION_SERIES,
        )?;
        bound("idle_timeout", idle_timeout, false, max)?;
        self.reap_interval = idle_timeout.map(|t| {
            self.reap_interval
                .unwrap_or_else(|| (t / 4).clamp(Duration::from_millis(10), Duration::from_secs(1)))
        });
        Ok(self)
    }

    /// The `Retry-After` of refusals that ask for a retry at the configured
    /// pace: whole seconds, rounded up.
    pub(crate) fn retry_after_secs(&self) -> u64 {
        self.retry_after.as_millis().div_ceil(1000).max(1) as u64
    }

    /// A principal's share of the task store; `None`: no share.
    pub(crate) fn task_share(&self) -> Option<usize> {
        self.task_share.limit(self.task_capacity)
    }

    /// A principal's share of the listen streams; `None`: no share.
    pub(crate) fn listen_share(&self) -> Option<usize> {
        self.listen_share.limit(self.listen_capacity)
    }

    /// A principal's share of the resource URIs' bytes; `None`: no share.
    pub(crate) fn listen_bytes_share(&self) -> Option<usize> {
        self.listen_bytes_share.limit(self.listen_bytes)
    }

    /// A principal's share of the single-use record; `None`: no share.
    pub(crate) fn single_use_share(&self) -> Option<usize> {
        self.single_use_share.limit(self.single_use_states)
    }
}

/// A principal's share of a store, as its setter sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShareSetting {
    /// [`default_share`] of the store's capacity.
    Default,
    /// No share: the store's capacity alone bounds it.
    Off,
    /// At most this many places per principal (from 1 to the capacity).
    Limit(usize),
}

impl ShareSetting {
    /// The setter's value: `None` is off.
    pub(crate) fn of(limit: Option<usize>) -> ShareSetting {
        limit.map_or(ShareSetting::Off, ShareSetting::Limit)
    }

    /// The share of a store of `capacity`; `None`: none.
    pub(crate) fn limit(self, capacity: usize) -> Option<usize> {
        match self {
            ShareSetting::Default => Some(default_share(capacity)),
            ShareSetting::Off => None,
            ShareSetting::Limit(limit) => Some(limit),
        }
    }

    fn check(self, setting: &'static str, capacity: usize) -> Result<(), ConfigError> {
        match self {
            ShareSetting::Limit(limit) => count(setting, limit, 1, capacity).map(drop),
            ShareSetting::Default | ShareSetting::Off => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validated_once_and_nothing_quietly_changed() {
        let config = Config {
            stall_timeout: None,
            handler_timeout: Some(Duration::from_secs(5)),
            retry_after: Duration::from_millis(10),
            ..Config::default()
        }
        .validated(Some(Duration::from_secs(60)))
        .unwrap();
        assert_eq!(config.stall_timeout, None);
        assert_eq!(config.handler_timeout, Some(Duration::from_secs(5)));
        assert_eq!(config.reap_interval, Some(Duration::from_secs(1)));
        assert_eq!(config.retry_after_secs(), 1);
        assert_eq!(config.task_share(), Some(1_000));
        assert_eq!(config.single_use_share(), Some(10_000));
        let none = Config::default().validated(None).unwrap();
        assert_eq!(none.reap_interval, None);
        let short = Config::default()
            .validated(Some(Duration::from_millis(8)))
            .unwrap();
        assert_eq!(short.reap_interval, Some(Duration::from_millis(10)));
        let small = Config {
            task_capacity: 3,
            ..Config::default()
        };
        assert_eq!(small.task_share(), Some(1), "a tenth, rounded up");
    }

    #[test]
    fn a_value_out_of_range_names_its_setting() {
        let refused = |config: Config| config.validated(None).unwrap_err().setting();
        let zero = |f: fn(&mut Config)| {
            let mut config = Config::default();
            f(&mut config);
            refused(config)
        };
        assert_eq!(zero(|c| c.max_handlers = 0), Some("max_handlers"));
        assert_eq!(zero(|c| c.stream_queue_bytes = 0), Some("stream_queue"));
        assert_eq!(zero(|c| c.listen_queue = 0), Some("listen_queue"));
        assert_eq!(
            zero(|c| c.stall_timeout = Some(Duration::ZERO)),
            Some("stall_timeout")
        );
        assert_eq!(
            zero(|c| c.stall_timeout = Some(Duration::MAX)),
            Some("stall_timeout")
        );
        assert_eq!(zero(|c| c.task_capacity = 0), Some("task_capacity"));
        assert_eq!(
            zero(|c| c.task_capacity = MAX_CAPACITY + 1),
            Some("task_capacity")
        );
        assert_eq!(
            zero(|c| c.task_share = ShareSetting::Limit(0)),
            Some("task_share")
        );
        assert_eq!(
            zero(|c| c.task_share = ShareSetting::Limit(DEFAULT_TASK_CAPACITY + 1)),
            Some("task_share")
        );
        assert_eq!(
            zero(|c| c.task_retention = MAX_DURATION * 2),
            Some("task_retention")
        );
        assert_eq!(
            zero(|c| c.request_state_ttl = Duration::ZERO),
            Some("request_state_ttl")
        );
        assert_eq!(zero(|c| c.single_use_states = 0), Some("single_use_states"));
        assert_eq!(
            zero(|c| c.retry_after = Duration::ZERO),
            Some("retry_after")
        );
        assert_eq!(
            zero(|c| c.reap_interval = Some(Duration::ZERO)),
            Some("reap_interval")
        );
        let long_idle = Config::default()
            .validated(Some(Duration::MAX))
            .unwrap_err();
        assert_eq!(long_idle.setting(), Some("idle_timeout"));
        // Zero where it means something is taken as it is.
        let kept = Config {
            sse_retry: Some(Duration::ZERO),
            event_log_events: 0,
            task_share: ShareSetting::Off,
            ..Config::default()
        }
        .validated(None)
        .unwrap();
        assert_eq!(kept.sse_retry, Some(Duration::ZERO));
        assert_eq!(kept.task_share(), None);
    }
}

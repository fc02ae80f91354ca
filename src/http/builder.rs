//! Configuring a [`SessionManager`]: the HTTP [`Builder`], its defaults, and
//! `build`, which makes the registry and the manager's shared state.

use super::admission::Tasks;
use super::app::App;
use super::auth::Authenticator;
use super::counters::HttpCounters;
use super::entry::{on_close, Entry};
use super::limits::Limits;
use super::manager::{Config, Inner, SessionManager};
use super::policy::{Access, Policies};
use super::resume::{LogBounds, LogBudget};
use crate::{BuildError, Reason, Registry, SessionId};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Request bodies larger than this are refused with 413 unless configured.
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
/// How often an SSE stream gets a keep-alive comment unless configured.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The reconnection delay priming events tell clients unless configured.
pub const DEFAULT_SSE_RETRY: Duration = Duration::from_secs(1);

/// Whether `Host` is restricted to loopback names (DNS-rebinding
/// protection). A present `Origin` is checked whatever this says: it must
/// be allowed ([`Builder::allow_origin`], or a loopback origin while the
/// restriction is on), or the request gets 403.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RebindingProtection {
    /// On unless the manager knows it is bound to a public
    /// (internet-routable) address (see [`SessionManager::set_bind_address`];
    /// [`serve`](super::serve) sets it). A loopback, unspecified
    /// (`0.0.0.0`), private or link-local bind keeps it on, and so does
    /// being mounted in axum or on a hand-written hyper loop: a server
    /// reached by a name lists it with [`Builder::allow_host`], or says
    /// [`Off`](RebindingProtection::Off).
    #[default]
    Auto,
    /// Always restrict to loopback hosts (plus the allow-lists).
    On,
    /// Never restrict `Host` to loopback (a host allow-list, if any, still
    /// applies; so does the `Origin` check).
    Off,
}

/// Configures a [`SessionManager`]; from [`SessionManager::builder`].
pub struct Builder<A: App> {
    app: A,
    /// The registry's settings are passed straight to its own builder.
    registry: crate::Builder<Entry<A::Session>>,
    /// Kept too: it also sets the reaper's period.
    idle_timeout: Option<Duration>,
    max_body: usize,
    keep_alive: Option<Duration>,
    event_log: usize,
    sse_retry: Option<Duration>,
    standalone_stream: bool,
    allowed_origins: Vec<String>,
    allowed_hosts: Vec<String>,
    protection: RebindingProtection,
    reap_interval: Option<Duration>,
    retry_after: Duration,
    authenticator: Option<Arc<dyn Authenticator>>,
    stateless: bool,
    /// Every bound against hostile clients (set in `limits.rs`).
    pub(super) limits: Limits,
}

impl<A: App> Builder<A> {
    /// Maximum live sessions (the registry's capacity); at it, `initialize`
    /// gets 503 with `Retry-After`.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.registry = self.registry.capacity(capacity);
        self
    }

    /// Sessions with nothing in flight for this long end with
    /// [`Reason::IdleTimeout`].
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.registry = self.registry.idle_timeout(timeout);
        self.idle_timeout = Some(timeout);
        self
    }

    /// The registry's shard count (see [`crate::Builder::shards`]).
    pub fn shards(mut self, shards: usize) -> Self {
        self.registry = self.registry.shards(shards);
        self
    }

    /// The node id put into session ids (see [`crate::Builder::node_id`]).
    pub fn node_id(mut self, node: u8) -> Self {
        self.registry = self.registry.node_id(node);
        self
    }

    /// Request bodies over `bytes` get 413 (default [`DEFAULT_MAX_BODY`]).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// The keep-alive comment period of SSE streams; `None` sends none
    /// (default [`DEFAULT_KEEP_ALIVE`]).
    pub fn keep_alive(mut self, period: Option<Duration>) -> Self {
        self.keep_alive = super::limits::reachable(period);
        self
    }

    /// Keep the last `events` messages of each SSE stream of a session (the
    /// standalone `GET` stream once it has been opened, and each `POST`
    /// reply stream of a client at 2025-11-25 or later), so a client
    /// reconnecting with `Last-Event-ID` gets what it missed on that
    /// stream; such `POST` streams are not cancelled when their connection
    /// drops, and start with a priming event (see `resume.rs`). Default 0:
    /// no log, no replay, no priming. The logs are bounded in bytes too,
    /// per session ([`event_log_bytes`](Builder::event_log_bytes)) and in
    /// all ([`event_log_total_bytes`](Builder::event_log_total_bytes)).
    pub fn event_log(mut self, events: usize) -> Self {
        self.event_log = events;
        self
    }

    /// The `retry` field (reconnection delay) of priming events; `None`
    /// sends none (default [`DEFAULT_SSE_RETRY`]).
    pub fn sse_retry(mut self, retry: Option<Duration>) -> Self {
        self.sse_retry = retry;
        self
    }

    /// Whether `GET` opens a standalone SSE stream (default) or answers 405.
    pub fn standalone_stream(mut self, enabled: bool) -> Self {
        self.standalone_stream = enabled;
        self
    }

    /// Allows an `Origin` (exact, e.g. `https://app.example`); any other
    /// origin then gets 403 (loopback ones too, when the loopback
    /// restriction is off). An allowed origin gets CORS headers. Can be
    /// replaced at run time: [`SessionManager::set_allowed_origins`].
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Allows a `Host` (`name` or `name:port`); any other host then gets 403
    /// (loopback ones too, when the loopback restriction is off). Can be
    /// replaced at run time: [`SessionManager::set_allowed_hosts`].
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// DNS-rebinding protection (default [`RebindingProtection::Auto`]).
    pub fn rebinding_protection(mut self, protection: RebindingProtection) -> Self {
        self.protection = protection;
        self
    }

    /// How often the reaper task sweeps for idle sessions (default: a
    /// quarter of the idle timeout, between 10 ms and 1 s). Without an idle
    /// timeout there is no reaper.
    pub fn reap_interval(mut self, interval: Duration) -> Self {
        self.reap_interval = Some(interval);
        self
    }

    /// The `Retry-After` of a 503 at capacity or at the handler cap, and of
    /// a 429 at a session's request cap (whole seconds, at least 1).
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = after;
        self
    }

    /// Authenticates every request (see [`Authenticator`]): a refused one
    /// gets 401 or 403, and each session is bound to the principal that
    /// opened it (another principal's request with its id gets 404).
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// Whether requests at protocol version 2026-07-28 (no sessions: each
    /// request stands alone, [`Context::state`](super::Context::state) is
    /// `None`) are served. Off by default: an application opts in when its
    /// handlers can serve a request without a session. Off, such a request
    /// gets 400 with an `UnsupportedProtocolVersionError` listing the
    /// versions served.
    pub fn stateless(mut self, enabled: bool) -> Self {
        self.stateless = enabled;
        self
    }

    /// Builds the manager and its registry.
    pub fn build(self) -> Result<SessionManager<A>, BuildError> {
        let app = Arc::new(self.app);
        let closer = Arc::clone(&app);
        let registry = self.registry.on_close(
            move |id: &SessionId, entry: &Entry<A::Session>, reason: Reason| {
                on_close(&*closer, id, entry, reason)
            },
        );
        let registry = registry.build()?;
        // No reaper without an idle timeout; otherwise the configured
        // interval, or a quarter of the timeout within 10 ms..1 s.
        let reap_interval = self.idle_timeout.map(|t| {
            self.reap_interval
                .unwrap_or_else(|| (t / 4).clamp(Duration::from_millis(10), Duration::from_secs(1)))
        });
        let policies = Policies::new(self.allowed_origins, self.allowed_hosts);
        Ok(SessionManager {
            inner: Arc::new(Inner {
                app,
                registry,
                config: Config {
                    max_body: self.max_body,
                    keep_alive: self.keep_alive,
                    event_log: self.event_log,
                    log_bounds: LogBounds {
                        events: self.event_log,
                        session_bytes: self.limits.event_log_bytes,
                        total: Arc::new(LogBudget::new(self.limits.event_log_total_bytes)),
                    },
                    sse_retry: self.sse_retry,
                    standalone_stream: self.standalone_stream,
                    stateless: self.stateless,
                    reap_interval,
                    retry_after: self.retry_after.as_secs().max(1),
                    limits: self.limits,
                },
                access: Access::new(policies, self.protection),
                authenticator: self.authenticator,
                shutting_down: AtomicBool::new(false),
                drain: Default::default(),
                tasks: Arc::new(Tasks::default()),
                counters: Arc::new(HttpCounters::new()),
                reaper: OnceLock::new(),
            }),
        })
    }
}

impl<A: App> SessionManager<A> {
    /// Starts configuring a manager for `app`.
    pub fn builder(app: A) -> Builder<A> {
        Builder {
            app,
            registry: Registry::builder(),
            idle_timeout: None,
            max_body: DEFAULT_MAX_BODY,
            keep_alive: Some(DEFAULT_KEEP_ALIVE),
            event_log: 0,
            sse_retry: Some(DEFAULT_SSE_RETRY),
            standalone_stream: true,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            protection: RebindingProtection::Auto,
            reap_interval: None,
            retry_after: Duration::from_secs(1),
            authenticator: None,
            stateless: false,
            limits: Limits::default(),
        }
    }
}

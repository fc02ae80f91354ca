//! Configuring a [`SessionManager`]: the [`Builder`], every setter, and
//! `build`, which validates the configuration once and makes the registry
//! and the endpoint's state. (`SessionManager::builder` lives here, with
//! the builder, as `Registry::builder` does in the core: the builder knows
//! the manager, never the other way round.)

use crate::http::access::auth::Authenticator;
use crate::http::access::rates::FleetRates;
use crate::http::access::{Access, AllowLists, RebindingProtection};
use crate::http::app::App;
use crate::http::counters::HttpCounters;
use crate::http::endpoint::manager::SessionManager;
use crate::http::input::sealing::RequestStateKeys;
use crate::http::input::used::UsedStates;
use crate::http::listen::{self, Listeners, Publisher, Topics};
use crate::http::observe::Durations;
use crate::http::run::hub::{Hub, Parts};
use crate::http::session::{self, entry::SessionEntry};
use crate::http::wire::config::*;
use crate::http::wire::config_error::ConfigError;
use crate::{BuildError, Reason, Registry, SessionId};
use std::sync::Arc;
use std::time::Duration;

/// Configures a [`SessionManager`]; from [`SessionManager::builder`].
///
/// Every bound has a production default (the `DEFAULT_*` constants) and a
/// setter here; the table of them all is in the layer's docs
/// ([`crate::http`]). One rule for "no bound": a bound that may be off
/// takes an `Option` (`None`: none). [`build`](Builder::build) checks every
/// value once: zero where zero means nothing, or a duration past
/// [`Defaults::DURATION_LIMIT`](crate::http::Defaults::DURATION_LIMIT), is a [`ConfigError`] naming the
/// setting and what it allows, never a panic and never quietly changed.
///
/// (The core's [`Builder`](crate::Builder) builds a [`Registry`](crate::Registry):
/// the same word for the same role one layer down, one of the crate's two
/// deliberate pairs of names.)
pub struct Builder<A: App> {
    app: A,
    /// The registry's settings are passed straight to its own builder.
    registry: crate::Builder<SessionEntry<A::Session>>,
    /// Kept too: it also sets the reaper's period.
    idle_timeout: Option<Duration>,
    config: Config,
    allow: AllowLists,
    protection: RebindingProtection,
    authenticator: Option<Arc<dyn Authenticator>>,
    #[cfg(feature = "oauth")]
    resource_server: Option<crate::http::access::oauth::ResourceServer>,
    keys: Option<RequestStateKeys>,
    publisher: Option<Publisher>,
    /// The fleet's record of used single-use states (with a bus).
    used: Option<Arc<dyn UsedStates>>,
    /// Where the fleet decides its rate limits (with a bus).
    fleet_rates: Option<Arc<dyn FleetRates>>,
}

impl<A: App> SessionManager<A> {
    /// Starts configuring a manager for `app`.
    pub fn builder(app: A) -> Builder<A> {
        Builder {
            app,
            registry: Registry::builder(),
            idle_timeout: None,
            config: Config::default(),
            allow: AllowLists::default(),
            protection: RebindingProtection::Auto,
            authenticator: None,
            #[cfg(feature = "oauth")]
            resource_server: None,
            keys: None,
            publisher: None,
            used: None,
            fleet_rates: None,
        }
    }
}

impl<A: App> Builder<A> {
    // --- sessions ---------------------------------------------------------

    /// Maximum live sessions (the registry's capacity); at it, `initialize`
    /// gets 503 with `Retry-After`.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.registry = self.registry.capacity(capacity);
        self
    }

    /// Sessions with nothing in flight for this long end with
    /// [`Reason::IdleTimeout`]; `None` (the default): sessions never idle
    /// out (they end by `DELETE`, failure or shutdown).
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How often the reaper task sweeps for idle sessions (default: a
    /// quarter of the idle timeout, between 10 ms and 1 s; more than zero).
    /// Without an idle timeout sessions are not swept.
    pub fn reap_interval(mut self, interval: Duration) -> Self {
        self.config.reap_interval = Some(interval);
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

    /// Whether requests at protocol version 2026-07-28 (no sessions: each
    /// request stands alone, [`Context::modern`](crate::http::Context::modern)
    /// says what it carries) are served (default: yes, beside the legacy
    /// session era on the same endpoint). Off, such a request gets 400 with
    /// an `UnsupportedProtocolVersionError` listing the versions served.
    pub fn serve_modern(mut self, enabled: bool) -> Self {
        self.config.modern = enabled;
        self
    }

    /// The keys that seal 2026-07-28 `requestState`s (default: one drawn
    /// from the OS's CSPRNG at build time, so states open only in this
    /// process; a fleet whose retries may reach another node gives every
    /// node the same keys). Replaced at run time with
    /// [`SessionManager::set_request_state_keys`].
    pub fn request_state_keys(mut self, keys: crate::http::modern::RequestStateKeys) -> Self {
        self.keys = Some(keys);
        self
    }

    /// How long a sealed `requestState` opens (default
    /// [`Defaults::REQUEST_STATE_TTL`](crate::http::Defaults::REQUEST_STATE_TTL); more
    /// than zero, at most [`Defaults::DURATION_LIMIT`](crate::http::Defaults::DURATION_LIMIT)): past it, a
    /// retry that carries it is refused (`-32602`, counted as `expired`).
    pub fn request_state_ttl(mut self, ttl: Duration) -> Self {
        self.config.request_state_ttl = ttl;
        self
    }

    /// Single-use `requestState`s not used yet that are recorded at most,
    /// all principals together (default
    /// [`Defaults::SINGLE_USE_STATES`](crate::http::Defaults::SINGLE_USE_STATES); from 1
    /// to [`MAX_CAPACITY`](crate::MAX_CAPACITY)): past it, an answer that
    /// asks for one gets 503 saying so, with a `Retry-After` of when the
    /// soonest record expires (a record that is used makes room sooner).
    pub fn single_use_states(mut self, states: usize) -> Self {
        self.config.single_use_states = states;
        self
    }

    /// Single-use `requestState`s one principal may have recorded and not
    /// used yet (default: a tenth of
    /// [`single_use_states`](Builder::single_use_states), rounded up, see
    /// [`Defaults::SHARE_DIVISOR`](crate::http::Defaults::SHARE_DIVISOR); from 1 to
    /// `single_use_states`; `None`: no per-principal bound). Past it, that
    /// principal's answer that asks for one gets 429 naming the bound, with
    /// a `Retry-After` of when its own soonest record expires; nobody else
    /// notices. A server without an authenticator (no principal) has the
    /// global bound only.
    pub fn single_use_share(mut self, states: Option<usize>) -> Self {
        self.config.single_use_share = ShareSetting::of(states);
        self
    }

    /// Serves the tasks extension (`io.modelcontextprotocol/tasks`, see
    /// [`TaskWork`](crate::http::TaskWork)): a [`Reply::Task`](crate::http::Reply::Task)
    /// becomes a task for a client that asks for tasks. Off by default (the
    /// extension is opt-in): then every `Reply::Task` runs inline.
    pub fn tasks(mut self, enabled: bool) -> Self {
        self.config.tasks = enabled;
        self
    }

    /// Tasks held at most, running or ended and retained, all principals
    /// together (default [`Defaults::TASK_CAPACITY`](crate::http::Defaults::TASK_CAPACITY);
    /// from 1 to [`MAX_CAPACITY`](crate::MAX_CAPACITY)): past it, a call that
    /// would create one gets 503 saying the task store is full, with a
    /// `Retry-After` of when the soonest retained task is freed.
    pub fn task_capacity(mut self, tasks: usize) -> Self {
        self.config.task_capacity = tasks;
        self
    }

    /// Tasks one principal may hold, running or ended and retained (default:
    /// a tenth of [`task_capacity`](Builder::task_capacity), rounded up:
    /// 1,000 of the default 10,000, see
    /// [`Defaults::SHARE_DIVISOR`](crate::http::Defaults::SHARE_DIVISOR) for why; from
    /// 1 to `task_capacity`; `None`: no per-principal bound). Past it, that
    /// principal's call that would create one gets 429 naming the bound,
    /// and no other principal notices. A server without an authenticator
    /// (no principal) has the global bound only.
    pub fn task_share(mut self, tasks: Option<usize>) -> Self {
        self.config.task_share = ShareSetting::of(tasks);
        self
    }

    /// How long an ended task stays readable after its work ends (default
    /// [`Defaults::TASK_RETENTION`](crate::http::Defaults::TASK_RETENTION); more than
    /// zero, at most [`Defaults::DURATION_LIMIT`](crate::http::Defaults::DURATION_LIMIT)); the task's
    /// `ttlMs`. A client that never polls costs its task this long, and the
    /// task counts against its principal's share meanwhile.
    pub fn task_retention(mut self, retention: Duration) -> Self {
        self.config.task_retention = retention;
        self
    }

    /// How long a task's work waits for the client's input
    /// ([`TaskContext::input`](crate::http::tasks::TaskContext::input)) before the
    /// task fails, with a status message saying so (default
    /// [`Defaults::TASK_INPUT_TIMEOUT`](crate::http::Defaults::TASK_INPUT_TIMEOUT);
    /// `None`: it waits as long as the work runs). A task that asks and is
    /// never answered would otherwise hold its place forever.
    pub fn task_input_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.task_input_timeout = timeout;
        self
    }

    /// Whether a task still running when its `ttlMs` has passed since it
    /// was created is ended then (`failed`, its work dropped). Off by
    /// default: running work is never cut short by its TTL (rmcp 3.11's
    /// `TaskManager` aborts it), and the retention counts from its end.
    pub fn task_ttl_ends_work(mut self, ends: bool) -> Self {
        self.config.task_ttl_ends_work = ends;
        self
    }

    // --- listen streams (2026-07-28 `subscriptions/listen`) ---------------

    /// The publisher the application publishes changes through (default: a
    /// new one, [`SessionManager::publisher`]): give the same one to the
    /// application before building, to publish from its handlers. One
    /// publisher may serve several managers.
    pub fn publisher(mut self, publisher: Publisher) -> Self {
        self.publisher = Some(publisher);
        self
    }

    /// Listen streams open at once, all principals together (default
    /// [`Defaults::LISTEN_CAPACITY`](crate::http::Defaults::LISTEN_CAPACITY)); past it a listen gets 503 with
    /// `Retry-After`.
    pub fn listen_capacity(mut self, streams: usize) -> Self {
        self.config.listen_capacity = streams;
        self
    }

    /// Listen streams one principal may hold open (default: a tenth of
    /// [`listen_capacity`](Builder::listen_capacity)); past it a listen gets
    /// 429 naming the bound, and no other principal notices. `None`: no
    /// share (only the capacity). Requests without a principal (no
    /// authenticator) have none.
    pub fn listen_share(mut self, streams: Option<usize>) -> Self {
        self.config.listen_share = ShareSetting::of(streams);
        self
    }

    /// Joins the node to its fleet's bus (feature `redis`; see
    /// [`RedisBus`](crate::http::RedisBus)): the bus's publisher becomes the
    /// manager's (in place of one given to [`publisher`](Builder::publisher)),
    /// so what is published on any node reaches this node's listeners; and
    /// single-use `requestState`s are recorded in the fleet's record, so a
    /// retry opens on any node of the fleet (which must share the sealing
    /// keys: [`request_state_keys`](Builder::request_state_keys)), once;
    /// and the rate limits ([`rate_limit`](Builder::rate_limit),
    /// [`tool_rate_limit`](Builder::tool_rate_limit)) hold for the fleet:
    /// Redis decides each request, for all its limits in one script.
    /// While the bus is down, listens and single-use retries get 503, and
    /// each node keeps its share of each rate limit (the rate and the
    /// burst divided by the nodes last seen).
    #[cfg(feature = "redis")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    pub fn bus(mut self, bus: crate::http::RedisBus) -> Self {
        self.used = Some(bus.used_states());
        self.fleet_rates = Some(bus.fleet_rates());
        self.publisher = Some(bus.publisher());
        self
    }

    /// Resource updates one listen stream may have waiting (default
    /// [`Defaults::LISTEN_QUEUE`](crate::http::Defaults::LISTEN_QUEUE)): a stream whose client does not keep up is
    /// ended when it fills, gracefully (its client re-listens and refetches,
    /// as the spec says), never waited for.
    ///
    /// List changes (`tools`, `prompts`, `resources`) take no place in it:
    /// each kind is one flag, and changes made before the stream writes the
    /// first are heard as one (the client refetches the list once; counted
    /// in `sessionreg_listeners_merged_total`). A burst of them ends nobody,
    /// and a stream that listens to no resource gets a queue of one.
    pub fn listen_queue(mut self, publications: usize) -> Self {
        self.config.listen_queue = publications;
        self
    }

    /// Resource URIs one listen filter (or one legacy session's
    /// `resources/subscribe`s) is honoured for (default
    /// [`Defaults::LISTEN_URIS`](crate::http::Defaults::LISTEN_URIS)): the first ones; the acknowledgement says
    /// which.
    pub fn listen_uris(mut self, uris: usize) -> Self {
        self.config.listen_uris = uris;
        self
    }

    /// The longest resource URI a listen filter (or a `resources/subscribe`)
    /// may name, in bytes (default
    /// [`Defaults::LISTEN_URI_BYTES`](crate::http::Defaults::LISTEN_URI_BYTES),
    /// 2 KiB): a longer one refuses the listen (or the subscribe) with
    /// `-32602` naming this bound. At most
    /// [`listen_filter_bytes`](Builder::listen_filter_bytes).
    pub fn listen_uri_bytes(mut self, bytes: usize) -> Self {
        self.config.listen_uri_bytes = bytes;
        self
    }

    /// Bytes of the resource URIs one listen filter (or one legacy
    /// session's subscriptions) is honoured for together (default
    /// [`Defaults::LISTEN_FILTER_BYTES`](crate::http::Defaults::LISTEN_FILTER_BYTES),
    /// 64 KiB): a filter's first URIs that fit, as with
    /// [`listen_uris`](Builder::listen_uris); a subscribe past it is refused
    /// with `-32602`. At most [`listen_bytes`](Builder::listen_bytes).
    pub fn listen_filter_bytes(mut self, bytes: usize) -> Self {
        self.config.listen_filter_bytes = bytes;
        self
    }

    /// Bytes of resource URIs the listeners and the legacy sessions'
    /// subscriptions keep, all principals together (default
    /// [`Defaults::LISTEN_BYTES`](crate::http::Defaults::LISTEN_BYTES),
    /// 64 MiB); past it a listen or a subscribe gets 503 naming
    /// `listen_bytes`, with `Retry-After`.
    pub fn listen_bytes(mut self, bytes: usize) -> Self {
        self.config.listen_bytes = bytes;
        self
    }

    /// Bytes of resource URIs one principal's listeners and sessions may
    /// keep together (default a tenth of
    /// [`listen_bytes`](Builder::listen_bytes)); past it a listen or a
    /// subscribe gets 429 naming `listen_bytes_share`, and nobody else
    /// notices. `None`: no share (the bound of all alone).
    pub fn listen_bytes_share(mut self, bytes: Option<usize>) -> Self {
        self.config.listen_bytes_share = ShareSetting::of(bytes);
        self
    }

    // --- who may reach it -------------------------------------------------

    /// Allows an `Origin` (exact, e.g. `https://app.example`); any other
    /// origin then gets 403 (loopback ones too, when the loopback
    /// restriction is off). An allowed origin gets CORS headers. Can be
    /// replaced at run time: [`SessionManager::set_allowed_origins`].
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allow.origins.push(origin.into());
        self
    }

    /// Allows a `Host` (`name` or `name:port`); any other host then gets 403
    /// (loopback ones too, when the loopback restriction is off). Can be
    /// replaced at run time: [`SessionManager::set_allowed_hosts`].
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allow.hosts.push(host.into());
        self
    }

    /// DNS-rebinding protection (default [`RebindingProtection::Auto`]).
    pub fn rebinding_protection(mut self, protection: RebindingProtection) -> Self {
        self.protection = protection;
        self
    }

    /// Authenticates every request (see [`Authenticator`]): a refused one
    /// gets 401 or 403, and each session is bound to the principal that
    /// opened it (another principal's request with its id gets 404).
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// Makes the endpoint an OAuth 2.1 resource server (feature `oauth`;
    /// see [`oauth`](crate::http::oauth)): every request needs an access token
    /// of its authorization server for this resource (401 with a
    /// `resource_metadata` challenge, or 403 `insufficient_scope`), its
    /// principal is the token's issuer and subject, its scopes are in
    /// [`Context::scopes`](crate::http::Context::scopes), and the manager answers
    /// the resource's metadata at its well-known paths. With an
    /// [`authenticator`](Builder::authenticator) too, that is asked first.
    #[cfg(feature = "oauth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
    pub fn resource_server(mut self, server: crate::http::access::oauth::ResourceServer) -> Self {
        self.resource_server = Some(server);
        self
    }

    // --- requests ---------------------------------------------------------

    /// Request bodies over `bytes` get 413 (default [`Defaults::MAX_BODY`](crate::http::Defaults::MAX_BODY)).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.config.max_body_bytes = bytes;
        self
    }

    /// How long a client may take to send a whole `POST` body; `None` never
    /// times out (default [`Defaults::BODY_READ_TIMEOUT`](crate::http::Defaults::BODY_READ_TIMEOUT)). A slower body gets
    /// 408 and its connection is closed. Applies wherever the manager is
    /// mounted.
    pub fn body_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.body_read_timeout = timeout;
        self
    }

    /// Requests a session may have in flight at once: a handler running, its
    /// SSE reply streaming, or the session's open `GET` stream (each keeps
    /// the session busy in the registry, and the cap is the registry's own
    /// count of those) (default [`Defaults::MAX_REQUESTS_PER_SESSION`](crate::http::Defaults::MAX_REQUESTS_PER_SESSION); from
    /// 1 to [`Defaults::REQUESTS_PER_SESSION_LIMIT`](crate::http::Defaults::REQUESTS_PER_SESSION_LIMIT)).
    /// The next one gets 429 with `Retry-After`; the session is
    /// not affected.
    pub fn max_requests_per_session(mut self, requests: usize) -> Self {
        self.config.max_requests_per_session = requests;
        self
    }

    /// Handlers in flight in the whole manager, all sessions together
    /// (default [`Defaults::MAX_HANDLERS`](crate::http::Defaults::MAX_HANDLERS); at least 1). At the cap a request
    /// gets 503 with `Retry-After`. The cap counts handlers still running
    /// after their first poll (those that answer at once never reach it);
    /// it can be passed by at most one request per runtime worker thread.
    pub fn max_handlers(mut self, handlers: usize) -> Self {
        self.config.max_handlers = handlers;
        self
    }

    /// How long a request's work may run: its handler, then its streamed
    /// reply; `None` lets it run for as long as its session lives (default
    /// [`Defaults::HANDLER_TIMEOUT`](crate::http::Defaults::HANDLER_TIMEOUT)). Past it the work is dropped, the
    /// request gets a JSON-RPC error (-32603, `data.timeoutMs`; at the end
    /// of a reply stream already started), and its places under
    /// [`max_handlers`](Builder::max_handlers) and
    /// [`max_requests_per_session`](Builder::max_requests_per_session) are
    /// free. The session serves on.
    pub fn handler_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.handler_timeout = timeout;
        self
    }

    /// Requests per window each principal may send, all its JSON-RPC
    /// requests in both eras together (default: `None`, no limit): past
    /// it, 429 with `Retry-After`, `RateLimit-Policy` and `RateLimit`, and
    /// a JSON-RPC error naming the limit; the principal's next request is
    /// allowed once the rate gives it room, and no other principal
    /// notices. Bursts of [`rate_burst`](Builder::rate_burst). On one
    /// node, this node's count; with a fleet's bus (`Builder::bus`, feature
    /// `redis`), the fleet's (Redis decides each request; while it cannot,
    /// each node keeps its share). Requests without a principal (no
    /// authenticator) are not limited by it (see
    /// [`keyed_rate_limit`](Builder::keyed_rate_limit)).
    pub fn rate_limit(mut self, rate: Option<crate::http::Rate>) -> Self {
        self.config.rate_limit = rate;
        self
    }

    /// The most requests a principal may send at once within its
    /// [`rate_limit`](Builder::rate_limit) (default `None`: one window's
    /// worth, the rate's count; from 1 to
    /// [`Defaults::RATE_BURST_LIMIT`](crate::http::Defaults::RATE_BURST_LIMIT)).
    pub fn rate_burst(mut self, burst: Option<u32>) -> Self {
        self.config.rate_burst = burst;
        self
    }

    /// Requests per window each principal may send to the tool `tool`
    /// (its `tools/call`s; repeatable, one rate per tool, the last given
    /// kept), beside [`rate_limit`](Builder::rate_limit): past it, 429 as
    /// there, `"tool"` in the `RateLimit` headers and the tool named in
    /// the JSON-RPC error. Bursts of one window's worth.
    pub fn tool_rate_limit(mut self, tool: impl Into<String>, rate: crate::http::Rate) -> Self {
        let tool = tool.into();
        self.config
            .tool_rate_limits
            .retain(|(have, _)| *have != tool);
        self.config.tool_rate_limits.push((tool, rate));
        self
    }

    /// A limit of the application's, per key it derives from each request
    /// (its principal, method, tool, client address, a header; see
    /// [`KeyedRateLimit`](crate::http::KeyedRateLimit)); repeatable, each
    /// of its own name (refused at build otherwise). Checked beside
    /// [`rate_limit`](Builder::rate_limit) and
    /// [`tool_rate_limit`](Builder::tool_rate_limit), on requests with or
    /// without a principal, decided by the fleet with a bus
    /// (`Builder::bus`, feature `redis`). With one,
    /// [`serve`](crate::http::serve) puts
    /// each request's [`ClientAddr`](crate::http::ClientAddr) in it.
    pub fn keyed_rate_limit(mut self, limit: crate::http::KeyedRateLimit) -> Self {
        self.config.keyed_rate_limits.push(limit);
        self
    }

    /// Principals with a rate-limit cell of their own, per limit (default
    /// [`Defaults::RATE_LIMITED_PRINCIPALS`](crate::http::Defaults::RATE_LIMITED_PRINCIPALS)):
    /// past it, principals without a cell share one (with the same rate)
    /// until the cells of principals back at a full burst are pruned (at
    /// most once per window), so a flood of principals holds a bounded
    /// number of cells and the principals already known keep theirs.
    pub fn rate_limited_principals(mut self, principals: usize) -> Self {
        self.config.rate_limited_principals = principals;
        self
    }

    /// The `Retry-After` of a 503 at capacity or at the handler cap, and of
    /// a 429 at a session's request cap (more than zero, rounded up to whole
    /// seconds; default [`Defaults::RETRY_AFTER`](crate::http::Defaults::RETRY_AFTER)). The refusals of a full
    /// task store or single-use record, and of a principal past its share,
    /// say instead when a place frees.
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.config.retry_after = after;
        self
    }

    // --- SSE streams ------------------------------------------------------

    /// Whether `GET` opens a standalone SSE stream (default) or answers 405.
    pub fn standalone_stream(mut self, enabled: bool) -> Self {
        self.config.standalone_stream = enabled;
        self
    }

    /// The period of the keep-alive comments of SSE streams; `None` sends
    /// none (default [`Defaults::SSE_KEEP_ALIVE`](crate::http::Defaults::SSE_KEEP_ALIVE)).
    pub fn sse_keep_alive(mut self, period: Option<Duration>) -> Self {
        self.config.sse_keep_alive = period;
        self
    }

    /// The `retry` field (reconnection delay) of priming events; `None`
    /// sends none (default [`Defaults::SSE_RETRY`](crate::http::Defaults::SSE_RETRY)).
    pub fn sse_retry(mut self, retry: Option<Duration>) -> Self {
        self.config.sse_retry = retry;
        self
    }

    /// The queue of each SSE stream: at most `messages` messages and
    /// `bytes` bytes wait for a slow client (defaults
    /// [`Defaults::STREAM_QUEUE_MESSAGES`](crate::http::Defaults::STREAM_QUEUE_MESSAGES), [`Defaults::STREAM_QUEUE_BYTES`](crate::http::Defaults::STREAM_QUEUE_BYTES);
    /// each at least 1). One message larger than `bytes` still goes through
    /// an empty queue. A server message to the standalone stream that does
    /// not fit is dropped and counted
    /// (`sessionreg_http_notifications_dropped_total`;
    /// [`LegacyRequest::notify`](crate::http::LegacyRequest::notify) returns `false`); a
    /// streamed `POST` reply waits for room instead.
    pub fn stream_queue(mut self, messages: usize, bytes: usize) -> Self {
        self.config.stream_queue_messages = messages;
        self.config.stream_queue_bytes = bytes;
        self
    }

    /// Keep the last `events` messages of each SSE stream of a session (the
    /// standalone `GET` stream once it has been opened, and each `POST`
    /// reply stream of a client at 2025-11-25 or later), so a client
    /// reconnecting with `Last-Event-ID` gets what it missed on that
    /// stream; such `POST` streams are not cancelled when their connection
    /// drops, and start with a priming event (see `sse/resume.rs`). Default
    /// 0: no log, no replay, no priming. The logs are bounded in bytes too,
    /// per session ([`event_log_session_bytes`](Builder::event_log_session_bytes))
    /// and in all ([`event_log_total_bytes`](Builder::event_log_total_bytes)).
    pub fn event_log_events(mut self, events: usize) -> Self {
        self.config.event_log_events = events;
        self
    }

    /// The most bytes one session's event logs keep, all its streams
    /// together (default [`Defaults::EVENT_LOG_SESSION_BYTES`](crate::http::Defaults::EVENT_LOG_SESSION_BYTES)): past it the
    /// oldest events go first, those of finished streams before those of
    /// the stream being logged, and those before other streams'. A stream
    /// is logged only once a client has had it (the standalone stream from
    /// the first `GET`).
    pub fn event_log_session_bytes(mut self, bytes: usize) -> Self {
        self.config.event_log_session_bytes = bytes;
        self
    }

    /// The most bytes every session's event logs keep together (default
    /// [`Defaults::EVENT_LOG_TOTAL_BYTES`](crate::http::Defaults::EVENT_LOG_TOTAL_BYTES)): past it a session lets its own
    /// oldest events go to log a new one, or, with none, does not log it
    /// (it is still delivered to a connected client). The gauge
    /// `sessionreg_http_event_log_bytes` shows how much they hold.
    pub fn event_log_total_bytes(mut self, bytes: usize) -> Self {
        self.config.event_log_total_bytes = bytes;
        self
    }

    /// How long a write may make no progress: an SSE stream whose client
    /// has taken nothing for this long while a message waits is ended (its
    /// session is then idle, and can expire), and [`serve`](crate::http::serve)
    /// closes a connection whose socket has accepted no byte for this long
    /// while a write waits; `None` waits forever (default
    /// [`Defaults::STALL_TIMEOUT`](crate::http::Defaults::STALL_TIMEOUT)).
    pub fn stall_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.stall_timeout = timeout;
        self
    }

    /// How many series of `mcp_server_operation_duration_seconds` (and of
    /// the OpenTelemetry `mcp.server.operation.duration`) a tool's or a
    /// prompt's name may open (default
    /// [`Defaults::OPERATION_SERIES`](crate::http::Defaults::OPERATION_SERIES),
    /// at most 100 000): the names are the clients', so past the bound a
    /// new name counts under `_OTHER`. A method outside MCP's always does.
    pub fn operation_series(mut self, series: usize) -> Self {
        self.config.operation_series = series;
        self
    }

    // --- build ------------------------------------------------------------

    /// Builds the manager and its registry, validating every setting once:
    /// a value out of its range is a [`ConfigError`] naming the setting and
    /// what it allows.
    pub fn build(self) -> Result<SessionManager<A>, ConfigError> {
        let config = self.config.validated(self.idle_timeout)?;
        let app = Arc::new(self.app);
        let closer = Arc::clone(&app);
        let durations = Arc::new(Durations::new(config.operation_series));
        #[cfg(feature = "otel")]
        crate::http::observe::metric_export::register(&durations);
        let lives = Arc::clone(&durations);
        let topics = Arc::new(Topics::default());
        let index = Arc::clone(&topics);
        let mut registry = self.registry;
        if let Some(timeout) = self.idle_timeout {
            registry = registry.idle_timeout(timeout);
        }
        let registry = registry
            .on_close(
                move |id: &SessionId, entry: &SessionEntry<A::Session>, reason: Reason| {
                    lives.session_ended(entry.version, reason, entry.opened.elapsed().into());
                    session::entry::close(id, entry, reason, &index, |state| {
                        closer.closed(id, state, reason)
                    })
                },
            )
            .build()
            .map_err(registry_error)?;
        let bounds = listen::Bounds {
            capacity: config.listen_capacity,
            share: config.listen_share(),
            queue: config.listen_queue,
            uris: config.listen_uris,
            uri_bytes: config.listen_uri_bytes,
            filter_bytes: config.listen_filter_bytes,
            bytes: config.listen_bytes,
            bytes_share: config.listen_bytes_share(),
            keep_alive: config.sse_keep_alive,
            retry_after: config.retry_after_secs(),
        };
        let counters = Arc::new(HttpCounters::new());
        let listeners = Listeners::new(bounds, registry.node_id(), topics, Arc::clone(&counters))
            .map_err(registry_error)?;
        let publisher = self.publisher.unwrap_or_default();
        let access = Access::new(self.allow, self.protection);
        let keys = self.keys.unwrap_or_else(RequestStateKeys::random);
        let hub = Hub::new(Parts {
            app,
            registry,
            config,
            access,
            authenticator: self.authenticator,
            keys,
            used: self.used,
            fleet_rates: self.fleet_rates,
            listeners: Arc::new(listeners),
            publisher,
            counters,
            durations,
        })?;
        #[cfg(feature = "oauth")]
        let hub = hub.with_resource_server(self.resource_server);
        Ok(SessionManager::from_hub(hub))
    }
}

/// The session registry's refusal, named by the layer's setting.
fn registry_error(error: BuildError) -> ConfigError {
    match error {
        BuildError::ZeroCapacity | BuildError::CapacityTooLarge(_) => {
            let given = match error {
                BuildError::CapacityTooLarge(n) => n,
                _ => 0,
            };
            ConfigError::out_of_range(
                "capacity",
                given,
                format!("it must be from 1 to {}", crate::MAX_CAPACITY),
            )
        }
        BuildError::Shards(n) => ConfigError::out_of_range(
            "shards",
            n,
            format!("it must be a power of two from 1 to {}", crate::MAX_SHARDS),
        ),
        BuildError::IdleTimeoutTooLong(t) => ConfigError::out_of_range(
            "idle_timeout",
            t,
            format!("it must be at most {:?}", MAX_DURATION),
        ),
        other => ConfigError::Registry(other),
    }
}

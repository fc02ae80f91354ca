//! The session manager: routes each request of one MCP endpoint to its
//! session, applies the transport's rules, and runs the application.
//!
//! Every way a session ends goes through the registry:
//! `DELETE` → [`Registry::terminate`] with [`Reason::Deleted`]; a handler
//! error or panic → `terminate(Failed)`; an `initialize` answered with an
//! error → `terminate(Rejected)`; idle → the reaper's
//! [`Registry::reap_idle`] (or a lookup that finds it expired); shutdown →
//! [`Registry::terminate_all`] with [`Reason::Shutdown`]. The registry's
//! close callback (run once, by the winner) closes the session's streams,
//! logs the reason and calls [`App::closed`]. Nothing else cleans up.

use super::app::{App, Context, HandlerError, Reply};
use super::body::{self, Body};
use super::jsonrpc::{self, Message, Request, RpcError};
use super::rules::{self, Forbidden, OriginPolicy, Version};
use super::sse::{self, SseBody, Streams};
use crate::{BuildError, InFlight, Reason, Registry, Session, SessionId, Stats};
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use http::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Body as HttpBody;
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};
use tracing::Instrument;

/// Request bodies larger than this are refused with 413 unless configured.
pub const DEFAULT_MAX_BODY: usize = 4 * 1024 * 1024;
/// How often an SSE stream gets a keep-alive comment unless configured.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What a session is in the registry: the application's state plus the
/// session's streams.
pub struct Entry<S> {
    pub(crate) state: S,
    pub(crate) streams: Streams,
}

impl<S> Entry<S> {
    /// The application's state of the session.
    pub fn state(&self) -> &S {
        &self.state
    }
}

impl<S: fmt::Debug> fmt::Debug for Entry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// Whether `Origin`/`Host` are restricted to loopback (DNS-rebinding
/// protection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RebindingProtection {
    /// On when the server is bound to a loopback address (see
    /// [`SessionManager::set_local_addr`]; [`serve`](super::serve) sets it).
    #[default]
    Auto,
    /// Always restrict to loopback hosts and origins (plus the allow-lists).
    On,
    /// Never restrict (the allow-lists, if any, still apply).
    Off,
}

/// Configures a [`SessionManager`]; from [`SessionManager::builder`].
pub struct Builder<A> {
    app: A,
    capacity: Option<usize>,
    idle_timeout: Option<Duration>,
    shards: Option<usize>,
    node_id: Option<u8>,
    max_body: usize,
    keep_alive: Option<Duration>,
    event_log: usize,
    standalone_stream: bool,
    allowed_origins: Vec<String>,
    allowed_hosts: Vec<String>,
    protection: RebindingProtection,
    reap_interval: Option<Duration>,
    retry_after: Duration,
}

impl<A: App> Builder<A> {
    /// Maximum live sessions (the registry's capacity); at it, `initialize`
    /// gets 503 with `Retry-After`.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Sessions with nothing in flight for this long end with
    /// [`Reason::IdleTimeout`].
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// The registry's shard count (see [`crate::Builder::shards`]).
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The node id put into session ids (see [`crate::Builder::node_id`]).
    pub fn node_id(mut self, node: u8) -> Self {
        self.node_id = Some(node);
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
        self.keep_alive = period;
        self
    }

    /// Keep the last `events` messages of each session's standalone stream,
    /// so a client reconnecting with `Last-Event-ID` gets what it missed
    /// (default 0: no log, no replay).
    pub fn event_log(mut self, events: usize) -> Self {
        self.event_log = events;
        self
    }

    /// Whether `GET` opens a standalone SSE stream (default) or answers 405.
    pub fn standalone_stream(mut self, enabled: bool) -> Self {
        self.standalone_stream = enabled;
        self
    }

    /// Allows an `Origin` (exact, e.g. `https://app.example`); any other
    /// origin then gets 403 (loopback ones too, unless protection is on).
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Allows a `Host` (`name` or `name:port`); any other host then gets 403
    /// (loopback ones too, unless protection is on).
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
    /// quarter of the idle timeout, between 10 ms and 1 s).
    pub fn reap_interval(mut self, interval: Duration) -> Self {
        self.reap_interval = Some(interval);
        self
    }

    /// The `Retry-After` of a 503 at capacity (whole seconds, at least 1).
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = after;
        self
    }

    /// Builds the manager and its registry.
    pub fn build(self) -> Result<SessionManager<A>, BuildError> {
        let app = Arc::new(self.app);
        let closer = Arc::clone(&app);
        let mut registry = Registry::<Entry<A::Session>>::builder().on_close(
            move |id: &SessionId, entry: &Entry<A::Session>, reason: Reason| {
                on_close(&*closer, id, entry, reason)
            },
        );
        if let Some(capacity) = self.capacity {
            registry = registry.capacity(capacity);
        }
        if let Some(timeout) = self.idle_timeout {
            registry = registry.idle_timeout(timeout);
        }
        if let Some(shards) = self.shards {
            registry = registry.shards(shards);
        }
        if let Some(node) = self.node_id {
            registry = registry.node_id(node);
        }
        let registry = registry.build()?;
        let reap_interval = self.reap_interval.unwrap_or_else(|| {
            self.idle_timeout.map_or(Duration::from_secs(1), |t| {
                (t / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
            })
        });
        let open = OriginPolicy {
            allowed_origins: self.allowed_origins,
            allowed_hosts: self.allowed_hosts,
            loopback_only: false,
        };
        let loopback = OriginPolicy {
            loopback_only: true,
            ..open.clone()
        };
        Ok(SessionManager {
            inner: Arc::new(Inner {
                app,
                registry,
                config: Config {
                    max_body: self.max_body,
                    keep_alive: self.keep_alive,
                    event_log: self.event_log,
                    standalone_stream: self.standalone_stream,
                    protection: self.protection,
                    reap_interval,
                    retry_after: self.retry_after.as_secs().max(1),
                    idle: self.idle_timeout.is_some(),
                },
                open_policy: open,
                loopback_policy: loopback,
                bound_to_loopback: AtomicBool::new(false),
                shutting_down: AtomicBool::new(false),
                tasks: Tasks::default(),
            }),
        })
    }
}

/// The registry's close callback: run once per session, by the winner of
/// its terminate, whatever the path.
fn on_close<A: App>(app: &A, id: &SessionId, entry: &Entry<A::Session>, reason: Reason) {
    entry.streams.close();
    tracing::info!(session = %id, reason = reason.as_str(), "session closed");
    let closed =
        std::panic::catch_unwind(AssertUnwindSafe(|| app.closed(id, &entry.state, reason)));
    if closed.is_err() {
        tracing::error!(session = %id, "App::closed panicked");
    }
}

struct Config {
    max_body: usize,
    keep_alive: Option<Duration>,
    event_log: usize,
    standalone_stream: bool,
    protection: RebindingProtection,
    reap_interval: Duration,
    retry_after: u64,
    idle: bool,
}

pub(crate) struct Inner<A: App> {
    app: Arc<A>,
    pub(crate) registry: Registry<Entry<A::Session>>,
    config: Config,
    open_policy: OriginPolicy,
    loopback_policy: OriginPolicy,
    bound_to_loopback: AtomicBool,
    shutting_down: AtomicBool,
    tasks: Tasks,
}

/// Counts handler tasks running, so shutdown can wait for them.
#[derive(Default)]
struct Tasks {
    running: AtomicUsize,
    idle: Notify,
}

struct TaskGuard<'a>(&'a Tasks);

impl Tasks {
    fn enter(&self) -> TaskGuard<'_> {
        self.running.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self)
    }

    async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.running.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for TaskGuard<'_> {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Serves one MCP endpoint (streamable HTTP) with a registry of sessions.
///
/// Cheap to clone (one `Arc`). Mount it on hyper directly (it is a
/// [`hyper::service::Service`]), through [`serve`](super::serve) (which adds
/// the reaper and graceful shutdown), or on tower/axum (it is a
/// [`tower_service::Service`]): e.g.
/// `Router::new().route_service("/mcp", manager)`. Outside `serve`, start
/// the idle reaper with [`spawn_reaper`](SessionManager::spawn_reaper), and
/// at shutdown call [`shutdown`](SessionManager::shutdown) once the
/// listener has stopped, then [`wait_idle`](SessionManager::wait_idle).
pub struct SessionManager<A: App> {
    pub(crate) inner: Arc<Inner<A>>,
}

impl<A: App> Clone for SessionManager<A> {
    fn clone(&self) -> Self {
        SessionManager {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<A: App> fmt::Debug for SessionManager<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionManager")
            .field("registry", &self.inner.registry)
            .finish_non_exhaustive()
    }
}

enum Head {
    Reply(Reply),
    Stream(mpsc::Receiver<Bytes>),
    /// The handler failed; the session was terminated with `Failed`.
    Failed,
}

impl<A: App> SessionManager<A> {
    /// Starts configuring a manager for `app`.
    pub fn builder(app: A) -> Builder<A> {
        Builder {
            app,
            capacity: None,
            idle_timeout: None,
            shards: None,
            node_id: None,
            max_body: DEFAULT_MAX_BODY,
            keep_alive: Some(DEFAULT_KEEP_ALIVE),
            event_log: 0,
            standalone_stream: true,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            protection: RebindingProtection::Auto,
            reap_interval: None,
            retry_after: Duration::from_secs(1),
        }
    }

    /// The session registry (for stats, or to end a session from outside a
    /// request: always through [`Registry::terminate`]).
    pub fn registry(&self) -> &Registry<Entry<A::Session>> {
        &self.inner.registry
    }

    /// The application.
    pub fn app(&self) -> &A {
        &self.inner.app
    }

    /// A snapshot of the registry's counters.
    pub fn stats(&self) -> Stats {
        self.inner.registry.stats()
    }

    /// The registry's counters in Prometheus text format.
    pub fn metrics(&self) -> String {
        super::metrics::render(&self.stats())
    }

    /// Tells the manager the address it is served on: with
    /// [`RebindingProtection::Auto`], a loopback address turns the
    /// protection on.
    pub fn set_local_addr(&self, addr: std::net::SocketAddr) {
        self.inner
            .bound_to_loopback
            .store(addr.ip().is_loopback(), Ordering::SeqCst);
    }

    /// How often the reaper sweeps; `None` without an idle timeout.
    pub(crate) fn reap_interval(&self) -> Option<Duration> {
        self.inner
            .config
            .idle
            .then_some(self.inner.config.reap_interval)
    }

    /// Starts shutting down: refuses new sessions (503) and ends every live
    /// session with [`Reason::Shutdown`] (close callbacks run, SSE streams
    /// end cleanly). Returns how many sessions this call ended. Requests in
    /// flight carry on; see [`wait_idle`](SessionManager::wait_idle).
    pub fn shutdown(&self) -> usize {
        // Set before the sweep: an insert racing it re-checks the flag
        // after inserting and ends its own session (see `initialize`).
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        self.inner.registry.terminate_all(Reason::Shutdown)
    }

    /// Waits until no handler is running, or `deadline` has passed;
    /// returns whether they all finished.
    pub async fn wait_idle(&self, deadline: Duration) -> bool {
        tokio::time::timeout(deadline, self.inner.tasks.wait_idle())
            .await
            .is_ok()
    }

    fn policy(&self) -> &OriginPolicy {
        let loopback = match self.inner.config.protection {
            RebindingProtection::On => true,
            RebindingProtection::Off => false,
            RebindingProtection::Auto => self.inner.bound_to_loopback.load(Ordering::Relaxed),
        };
        if loopback {
            &self.inner.loopback_policy
        } else {
            &self.inner.open_policy
        }
    }

    /// Serves one request.
    pub async fn handle<B>(&self, request: http::Request<B>) -> Response<Body>
    where
        B: HttpBody + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let span = tracing::info_span!(
            "mcp",
            method = %request.method(),
            session = tracing::field::Empty,
        );
        self.route(request).instrument(span).await
    }

    async fn route<B>(&self, request: http::Request<B>) -> Response<Body>
    where
        B: HttpBody + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if let Err(forbidden) = self.policy().check(request.headers(), request.uri()) {
            let what = match forbidden {
                Forbidden::Origin => "forbidden Origin",
                Forbidden::Host => "forbidden Host",
            };
            return body::refuse(StatusCode::FORBIDDEN, jsonrpc::SERVER_ERROR, what);
        }
        let version = match rules::protocol_version(request.headers()) {
            Ok(version) => version,
            Err(bad) => {
                return body::refuse(
                    StatusCode::BAD_REQUEST,
                    jsonrpc::SERVER_ERROR,
                    &format!("unsupported MCP-Protocol-Version: {bad}"),
                )
            }
        };
        let method = request.method().clone();
        if version == Version::Stateless {
            // No sessions at this version: nothing to GET or DELETE.
            return match method {
                Method::POST => self.post(request, version).await,
                _ => not_allowed("POST"),
            };
        }
        match method {
            Method::POST => self.post(request, version).await,
            Method::GET if self.inner.config.standalone_stream => self.get(request).await,
            Method::DELETE => self.delete(request),
            _ if self.inner.config.standalone_stream => not_allowed("GET, POST, DELETE"),
            _ => not_allowed("POST, DELETE"),
        }
    }

    async fn post<B>(&self, request: http::Request<B>, version: Version) -> Response<Body>
    where
        B: HttpBody + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        let headers = &parts.headers;
        if !(rules::accepts(headers, "application/json")
            && rules::accepts(headers, "text/event-stream"))
        {
            return body::refuse(
                StatusCode::NOT_ACCEPTABLE,
                jsonrpc::SERVER_ERROR,
                "Accept must list application/json and text/event-stream",
            );
        }
        if !rules::is_json(headers) {
            return body::refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                jsonrpc::SERVER_ERROR,
                "Content-Type must be application/json",
            );
        }
        let limit = self.inner.config.max_body;
        let declared = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > limit as u64) {
            return too_large();
        }
        let bytes = match Limited::new(body, limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error)
                if error
                    .downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                return too_large()
            }
            Err(_) => {
                return body::refuse(
                    StatusCode::BAD_REQUEST,
                    jsonrpc::SERVER_ERROR,
                    "could not read the request body",
                )
            }
        };
        let value: serde_json::Value = match serde_json::from_slice(&bytes) {
            Ok(value) => value,
            Err(error) => {
                return body::rpc_error(
                    StatusCode::BAD_REQUEST,
                    None,
                    &RpcError::new(jsonrpc::PARSE_ERROR, format!("parse error: {error}")),
                )
            }
        };
        if value.is_array() {
            return body::refuse(
                StatusCode::BAD_REQUEST,
                jsonrpc::INVALID_REQUEST,
                "JSON-RPC batches are not supported",
            );
        }
        let message = match Message::from_value(value) {
            Ok(message) => message,
            Err(error) => return body::rpc_error(StatusCode::BAD_REQUEST, None, &error),
        };
        if version == Version::Stateless {
            let head = self.run(None, message.clone(), version);
            return self.answer(head, &message).await;
        }
        match (headers.get(rules::SESSION_HEADER), message) {
            (None, Message::Request(request)) if request.method == "initialize" => {
                if let Err(error) = check_initialize(&request) {
                    return body::rpc_error(StatusCode::BAD_REQUEST, Some(&request.id), &error);
                }
                self.initialize(request, version).await
            }
            (None, _) => body::refuse(
                StatusCode::BAD_REQUEST,
                jsonrpc::SERVER_ERROR,
                "missing MCP-Session-Id (only initialize starts a session)",
            ),
            (Some(_), message) if message.is_initialize() => body::refuse(
                StatusCode::BAD_REQUEST,
                jsonrpc::INVALID_REQUEST,
                "initialize must not carry an MCP-Session-Id",
            ),
            (Some(header), message) => {
                let session = match self.find(header.as_bytes()) {
                    Ok(session) => session,
                    Err(response) => return response,
                };
                // Counted in flight from here, so the reaper cannot take the
                // session while the handler is being scheduled; `None` if it
                // ended (or is being expired) since the lookup.
                let Some(request) = session.begin() else {
                    return not_found();
                };
                let head = self.run(Some(request), message.clone(), version);
                self.answer(head, &message).await
            }
        }
    }

    /// The live session a header names, or the 404 to answer.
    #[allow(clippy::result_large_err)]
    fn find(&self, header: &[u8]) -> Result<Session<Entry<A::Session>>, Response<Body>> {
        let registry = &self.inner.registry;
        let found = registry.parse_id(header).ok().and_then(|id| {
            tracing::Span::current().record("session", tracing::field::display(id));
            registry.lookup(&id).ok()
        });
        found.ok_or_else(not_found)
    }

    async fn initialize(&self, request: Request, version: Version) -> Response<Body> {
        let inner = &self.inner;
        if inner.shutting_down.load(Ordering::SeqCst) {
            return shutting_down();
        }
        let opened = std::panic::catch_unwind(AssertUnwindSafe(|| inner.app.open(&request)));
        let state = match opened {
            Ok(Ok(state)) => state,
            Ok(Err(error)) => {
                return body::rpc_error(StatusCode::BAD_REQUEST, Some(&request.id), &error)
            }
            Err(panic) => {
                tracing::error!(panic = panic_message(&*panic), "App::open panicked");
                return internal_error(Some(&request.id));
            }
        };
        let entry = Entry {
            state,
            streams: Streams::new(inner.config.event_log),
        };
        // Created with this request already in flight: it cannot idle out
        // before its handler has even started.
        let Ok(first) = inner.registry.insert_in_flight(entry) else {
            return unavailable(inner, &request.id, "too many sessions; retry later");
        };
        let id = first.id();
        tracing::Span::current().record("session", tracing::field::display(id));
        if inner.shutting_down.load(Ordering::SeqCst) {
            // Inserted while `shutdown` swept: end it ourselves.
            let _ = inner.registry.terminate(&id, Reason::Shutdown);
            return shutting_down();
        }
        let head = self.run(Some(first), Message::Request(request.clone()), version);
        let mut response = match head.await {
            Ok(Head::Reply(Reply::Result(result))) => body::json(
                StatusCode::OK,
                &jsonrpc::result_message(&request.id, result),
            ),
            Ok(Head::Stream(rx)) => self.sse(rx, None),
            Ok(Head::Reply(Reply::Error(error))) => {
                // The application rejected the first request: the session
                // ends, and its id is never shown.
                let _ = inner.registry.terminate(&id, Reason::Rejected);
                return body::rpc_error(StatusCode::BAD_REQUEST, Some(&request.id), &error);
            }
            Ok(Head::Reply(Reply::Stream(_) | Reply::Accepted)) => {
                let _ = inner.registry.terminate(&id, Reason::Rejected);
                return internal_error(Some(&request.id));
            }
            Ok(Head::Failed) => return internal_error(Some(&request.id)),
            Err(_) => return shutting_down(),
        };
        let mut text = [0u8; 32];
        let value =
            HeaderValue::from_str(id.encode(&mut text)).expect("session ids are visible ASCII");
        response.headers_mut().insert(rules::SESSION_HEADER, value);
        response
    }

    /// Runs the application on one message in a task of its own (so a
    /// client that disconnects does not cancel it), holding the request's
    /// in-flight guard for as long as the handler (and its SSE reply) runs.
    fn run(
        &self,
        guard: Option<InFlight<Entry<A::Session>>>,
        message: Message,
        version: Version,
    ) -> oneshot::Receiver<Head> {
        let (head_tx, head_rx) = oneshot::channel();
        let inner = Arc::clone(&self.inner);
        let task = async move {
            let _task = inner.tasks.enter();
            let session = guard.as_deref().cloned();
            let is_request = matches!(message, Message::Request(_));
            let ctx = Context {
                session: session.clone(),
                version,
            };
            let outcome = AssertUnwindSafe(inner.app.handle(ctx, message))
                .catch_unwind()
                .await;
            match outcome {
                Ok(Ok(Reply::Stream(stream))) if is_request => {
                    let (tx, rx) = mpsc::channel(sse::CHANNEL_CAPACITY);
                    if head_tx.send(Head::Stream(rx)).is_ok() {
                        pump(&inner, session.as_ref(), stream, tx).await;
                    }
                }
                Ok(Ok(reply)) => {
                    let reply = if is_request { reply } else { Reply::Accepted };
                    let _ = head_tx.send(Head::Reply(reply));
                }
                Ok(Err(error)) => {
                    fail(&inner, session.as_ref(), &error);
                    let _ = head_tx.send(Head::Failed);
                }
                Err(panic) => {
                    let error =
                        HandlerError::msg(format!("handler panicked: {}", panic_message(&*panic)));
                    fail(&inner, session.as_ref(), &error);
                    let _ = head_tx.send(Head::Failed);
                }
            }
            drop(guard);
        };
        tokio::spawn(task.in_current_span());
        head_rx
    }

    /// Turns a handler's outcome into the response to a non-initialize POST.
    async fn answer(&self, head: oneshot::Receiver<Head>, message: &Message) -> Response<Body> {
        let id = match message {
            Message::Request(r) => Some(&r.id),
            _ => None,
        };
        match head.await {
            Ok(Head::Failed) => internal_error(id),
            Ok(Head::Stream(rx)) => self.sse(rx, None),
            Ok(Head::Reply(reply)) => match (id, reply) {
                (None, _) => body::status(StatusCode::ACCEPTED),
                (Some(id), Reply::Result(result)) => {
                    body::json(StatusCode::OK, &jsonrpc::result_message(id, result))
                }
                (Some(id), Reply::Error(error)) => {
                    body::json(StatusCode::OK, &jsonrpc::error_message(Some(id), &error))
                }
                (Some(id), Reply::Accepted | Reply::Stream(_)) => body::json(
                    StatusCode::OK,
                    &jsonrpc::error_message(
                        Some(id),
                        &RpcError::new(jsonrpc::INTERNAL_ERROR, "the handler gave no response"),
                    ),
                ),
            },
            // The task was dropped unfinished: the runtime is going away.
            Err(_) => shutting_down(),
        }
    }

    fn sse(
        &self,
        rx: mpsc::Receiver<Bytes>,
        hold: Option<Box<dyn Any + Send + Sync>>,
    ) -> Response<Body> {
        let body = SseBody::new(rx, self.inner.config.keep_alive, hold);
        let mut response = Response::new(BodyExt::boxed(body));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    }

    /// `GET`: the session's standalone server-to-client stream.
    ///
    /// An open stream counts as a request in flight, so a client that keeps
    /// it open is never reaped as idle: its connection is the evidence that
    /// it is there, and keep-alive comments find out when it is not. When
    /// the stream drops, the guard goes with it and the idle clock starts
    /// from that moment; the session itself stays.
    async fn get<B>(&self, request: http::Request<B>) -> Response<Body> {
        let headers = request.headers();
        if !rules::accepts(headers, "text/event-stream") {
            return body::refuse(
                StatusCode::NOT_ACCEPTABLE,
                jsonrpc::SERVER_ERROR,
                "Accept must list text/event-stream",
            );
        }
        let Some(header) = headers.get(rules::SESSION_HEADER) else {
            return missing_id();
        };
        let session = match self.find(header.as_bytes()) {
            Ok(session) => session,
            Err(response) => return response,
        };
        let Some(in_flight) = session.begin() else {
            return not_found();
        };
        let last_event_id = headers
            .get(rules::LAST_EVENT_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let rx = match session.streams.open_standalone(last_event_id) {
            Ok(rx) => rx,
            Err(sse::Conflict) => {
                return body::refuse(
                    StatusCode::CONFLICT,
                    jsonrpc::SERVER_ERROR,
                    "this session already has a standalone SSE stream",
                )
            }
        };
        // The body holds the guard: the session is busy while the client
        // keeps the stream, and its idle clock starts when the body drops
        // (the client went away, or the session ended and the stream with it).
        self.sse(rx, Some(Box::new(in_flight)))
    }

    /// `DELETE`: ends the session, through the one terminate call.
    fn delete<B>(&self, request: http::Request<B>) -> Response<Body> {
        let Some(header) = request.headers().get(rules::SESSION_HEADER) else {
            return missing_id();
        };
        let registry = &self.inner.registry;
        let Ok(id) = registry.parse_id(header.as_bytes()) else {
            return not_found();
        };
        tracing::Span::current().record("session", tracing::field::display(id));
        if registry.terminate(&id, Reason::Deleted).is_won() {
            body::status(StatusCode::OK)
        } else {
            not_found()
        }
    }
}

/// Streams a handler's SSE reply to the client until it ends, the client
/// goes, or the session ends.
async fn pump<A: App>(
    inner: &Inner<A>,
    session: Option<&Session<Entry<A::Session>>>,
    mut stream: futures_util::stream::BoxStream<'static, serde_json::Value>,
    tx: mpsc::Sender<Bytes>,
) {
    let closed = async {
        match session {
            Some(s) => s.streams.closed().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(closed);
    let mut local_ids = 0u64;
    loop {
        let next = AssertUnwindSafe(stream.next()).catch_unwind();
        let item = tokio::select! {
            _ = &mut closed => break,
            _ = tx.closed() => break,
            item = next => item,
        };
        match item {
            Ok(Some(message)) => {
                let id = match session {
                    Some(s) => s.streams.next_event_id(),
                    None => {
                        local_ids += 1;
                        local_ids
                    }
                };
                if tx.send(sse::event(id, &message)).await.is_err() {
                    break;
                }
            }
            Ok(None) => break,
            Err(panic) => {
                let error =
                    HandlerError::msg(format!("reply stream panicked: {}", panic_message(&*panic)));
                fail(inner, session, &error);
                break;
            }
        }
    }
}

/// The shape an `initialize` request must have before a session is made
/// for it: params with the protocol version the client asks for (any
/// string: an unknown one is negotiated down by the application, see
/// [`rules::negotiate`]).
fn check_initialize(request: &Request) -> Result<(), RpcError> {
    let version = request
        .params
        .as_ref()
        .and_then(|p| p.get("protocolVersion"));
    match version {
        Some(serde_json::Value::String(_)) => Ok(()),
        _ => Err(RpcError::invalid_params(
            "initialize needs params.protocolVersion (a string)",
        )),
    }
}

/// A handler failed: end its session with `Failed`.
fn fail<A: App>(
    inner: &Inner<A>,
    session: Option<&Session<Entry<A::Session>>>,
    error: &HandlerError,
) {
    match session {
        Some(session) => {
            tracing::warn!(session = %session.id(), %error, "handler failed; ending the session");
            let _ = inner.registry.terminate(&session.id(), Reason::Failed);
        }
        None => tracing::warn!(%error, "stateless handler failed"),
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic>")
}

fn not_found() -> Response<Body> {
    body::refuse(
        StatusCode::NOT_FOUND,
        jsonrpc::SESSION_NOT_FOUND,
        "session not found",
    )
}

fn missing_id() -> Response<Body> {
    body::refuse(
        StatusCode::BAD_REQUEST,
        jsonrpc::SERVER_ERROR,
        "missing MCP-Session-Id",
    )
}

fn too_large() -> Response<Body> {
    body::refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        jsonrpc::SERVER_ERROR,
        "request body too large",
    )
}

/// 503 with `Retry-After`, for an `initialize` that found no room.
fn unavailable<A: App>(inner: &Inner<A>, id: &serde_json::Value, why: &str) -> Response<Body> {
    let mut response = body::rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        Some(id),
        &RpcError::new(jsonrpc::SERVER_ERROR, why),
    );
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(inner.config.retry_after));
    response
}

fn shutting_down() -> Response<Body> {
    body::refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        jsonrpc::SERVER_ERROR,
        "server is shutting down",
    )
}

fn internal_error(id: Option<&serde_json::Value>) -> Response<Body> {
    body::rpc_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        id,
        &RpcError::new(
            jsonrpc::INTERNAL_ERROR,
            "the handler failed; the session has ended",
        ),
    )
}

fn not_allowed(allow: &'static str) -> Response<Body> {
    let mut response = body::refuse(
        StatusCode::METHOD_NOT_ALLOWED,
        jsonrpc::SERVER_ERROR,
        "method not allowed",
    );
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

/// The future of a [`SessionManager`] serving a request as a service.
pub struct ResponseFuture(
    Pin<Box<dyn Future<Output = Result<Response<Body>, std::convert::Infallible>> + Send>>,
);

impl Future for ResponseFuture {
    type Output = Result<Response<Body>, std::convert::Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResponseFuture")
    }
}

impl<A: App, B> hyper::service::Service<http::Request<B>> for SessionManager<A>
where
    B: HttpBody + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = std::convert::Infallible;
    type Future = ResponseFuture;

    fn call(&self, request: http::Request<B>) -> ResponseFuture {
        let this = self.clone();
        ResponseFuture(Box::pin(async move { Ok(this.handle(request).await) }))
    }
}

impl<A: App, B> tower_service::Service<http::Request<B>> for SessionManager<A>
where
    B: HttpBody + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = std::convert::Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> ResponseFuture {
        hyper::service::Service::call(self, request)
    }
}

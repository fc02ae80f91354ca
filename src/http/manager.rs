//! The session manager: the shared state of one MCP endpoint, its public
//! methods, and the routing of each request to its method's handler
//! (`post.rs`, `get.rs`, `delete.rs`); also its hyper and tower `Service`
//! impls.
//!
//! Every way a session ends goes through the registry:
//! `DELETE` → [`Registry::terminate`] with [`Reason::Deleted`]; a handler
//! error or panic → `terminate(Failed)`; an `initialize` answered with an
//! error → `terminate(Rejected)`; idle → the reaper's
//! [`Registry::reap_idle`] (or a lookup that finds it expired); shutdown →
//! [`Registry::terminate_all`] with [`Reason::Shutdown`]. The registry's
//! close callback (run once, by the winner) closes the session's streams,
//! logs the reason and calls [`App::closed`]. Nothing else cleans up.

use super::admission::Tasks;
use super::app::App;
use super::auth::{Authenticator, Principal};
use super::body::{self, Body};
use super::cors;
use super::counters::{self, HttpCounters, HttpStats};
use super::drain::Drain;
use super::entry::Entry;
use super::jsonrpc;
use super::limits::Limits;
use super::outlet::{Outlet, QueueLimits};
use super::policy::Access;
use super::responses::{duplicate_header, not_allowed, not_found, unsupported_version};
use super::resume::LogBounds;
use super::rules::{self, Forbidden, Version};
use super::sse::SseBody;
use super::stateless;
use crate::{Reason, Registry, Session, Stats};
use http::header::{HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Body as HttpBody;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;
use tracing::Instrument;

pub(super) struct Config {
    pub(super) max_body: usize,
    pub(super) keep_alive: Option<Duration>,
    pub(super) event_log: usize,
    /// The event logs' bounds, with the budget every session shares.
    pub(super) log_bounds: LogBounds,
    /// The `retry` of priming events.
    pub(super) sse_retry: Option<Duration>,
    pub(super) standalone_stream: bool,
    /// Whether 2026-07-28 (session-less) requests are served.
    pub(super) stateless: bool,
    /// How often the reaper sweeps; `None` without an idle timeout.
    pub(super) reap_interval: Option<Duration>,
    pub(super) retry_after: u64,
    pub(crate) limits: Limits,
}

impl Config {
    /// The bounds of each SSE stream's queue.
    pub(super) fn queue_limits(&self) -> QueueLimits {
        QueueLimits {
            messages: self.limits.stream_queue_messages,
            bytes: self.limits.stream_queue_bytes,
            stall: self.limits.stall_timeout,
        }
    }
}

pub(crate) struct Inner<A: App> {
    pub(super) app: Arc<A>,
    pub(crate) registry: Registry<Entry<A::Session>>,
    pub(super) config: Config,
    pub(super) access: Access,
    pub(super) authenticator: Option<Arc<dyn Authenticator>>,
    pub(super) shutting_down: AtomicBool,
    pub(super) drain: Drain,
    pub(super) tasks: Arc<Tasks>,
    pub(crate) counters: Arc<HttpCounters>,
    /// The idle reaper, once started; aborted when the manager is dropped.
    pub(super) reaper: OnceLock<tokio::task::AbortHandle>,
}

impl<A: App> Drop for Inner<A> {
    fn drop(&mut self) {
        if let Some(reaper) = self.reaper.get() {
            reaper.abort();
        }
    }
}

/// Serves one MCP endpoint (streamable HTTP) with a registry of sessions.
///
/// Cheap to clone (one `Arc`). Mount it on hyper directly (it is a
/// [`hyper::service::Service`]), through [`serve`](super::serve) (which adds
/// graceful shutdown), or on tower/axum (it is a
/// [`tower_service::Service`]): e.g.
/// `Router::new().route_service("/mcp", manager)`. Wherever it is mounted,
/// DNS-rebinding protection holds for loopback hosts (see
/// [`RebindingProtection`](super::RebindingProtection)) and the idle reaper
/// starts with the first request (see
/// [`start_reaper`](SessionManager::start_reaper)). Outside `serve`, at
/// shutdown call [`shutdown`](SessionManager::shutdown) once the listener
/// has stopped, then [`wait_idle`](SessionManager::wait_idle).
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

impl<A: App> SessionManager<A> {
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

    /// A snapshot of the HTTP layer's own counters (connections, streams,
    /// handlers, responses by status, dropped notifications).
    pub fn http_stats(&self) -> HttpStats {
        let mut stats = self.inner.counters.snapshot();
        stats.event_log_bytes = self.inner.config.log_bounds.total.used() as u64;
        stats
    }

    /// The registry's counters in Prometheus text format, followed by the
    /// HTTP layer's (`sessionreg_http_*`; see [`HttpStats`]).
    pub fn metrics(&self) -> String {
        let mut out = String::with_capacity(3072);
        crate::metrics::write(&mut out, &self.stats());
        counters::write(&mut out, &self.http_stats());
        out
    }

    /// Tells the manager the address its listener is bound to
    /// ([`serve`](super::serve) does). With
    /// [`RebindingProtection::Auto`](super::RebindingProtection::Auto), a
    /// public (internet-routable) address lifts the loopback restriction on
    /// `Host`; a loopback, unspecified (`0.0.0.0`), private or link-local
    /// one keeps it (see `policy.rs`). A present `Origin` is checked either
    /// way. When the restriction is lifted, one INFO line says what the
    /// endpoint lets in.
    pub fn set_bind_address(&self, addr: std::net::SocketAddr) {
        let public = self.inner.access.bound.set(addr);
        if public && self.inner.access.protection() == super::RebindingProtection::Auto {
            let (origins, hosts) = self.allowed();
            tracing::info!(
                %addr,
                hosts = %if hosts.is_empty() { "any".to_string() } else { hosts.join(", ") },
                origins = %if origins.is_empty() { "none (requests with an Origin get 403)".to_string() } else { origins.join(", ") },
                "bound to a public address: Host is not restricted to loopback"
            );
        }
    }

    /// How often the reaper sweeps; `None` without an idle timeout.
    pub(crate) fn reap_interval(&self) -> Option<Duration> {
        self.inner.config.reap_interval
    }

    /// Shuts down now: refuses new sessions (503) and ends every live
    /// session with [`Reason::Shutdown`] (close callbacks run, the work of
    /// their requests in flight is stopped, SSE streams end cleanly).
    /// Returns how many sessions this call ended. Requests at 2026-07-28
    /// (no session) carry on; see [`wait_idle`](SessionManager::wait_idle).
    /// To let requests in flight finish first:
    /// [`shutdown_gracefully`](SessionManager::shutdown_gracefully).
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

    /// Serves one request, inside a DEBUG span `mcp` with the method and
    /// (once known) the session, named by the `Debug` form of its id (never
    /// its secret): at the default INFO level the span is disabled and
    /// costs nothing per request. The response's status is counted in
    /// `sessionreg_http_responses_total`.
    ///
    /// The returned future is a few words: the routing behind it is boxed
    /// when `handle` is called. (Routing is a future of about 4 KiB, a state
    /// for every way a request can go, and hyper keeps the box it polls a
    /// connection's request future in for as long as the connection is
    /// open, sized for the service's whole future: a service that awaited
    /// the routing inline would hold that much for every open connection,
    /// an idle keep-alive or a GET stream. The routing's box lives only
    /// while its request is in flight.)
    pub fn handle<B>(
        &self,
        request: http::Request<B>,
    ) -> impl Future<Output = Response<Body>> + Send + '_
    where
        B: HttpBody + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let span = tracing::debug_span!(
            "mcp",
            method = %request.method(),
            session = tracing::field::Empty,
        );
        let routing = Box::pin(self.route(request).instrument(span));
        async move {
            let response = routing.await;
            self.inner.counters.response(response.status().as_u16());
            response
        }
    }

    async fn route<B>(&self, request: http::Request<B>) -> Response<Body>
    where
        B: HttpBody + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        self.start_reaper();
        let policy = self.inner.access.current();
        if let Err(forbidden) = policy.check(request.headers(), request.uri()) {
            let what = match forbidden {
                Forbidden::Origin => "forbidden Origin",
                Forbidden::Host => "forbidden Host",
            };
            return body::refuse(StatusCode::FORBIDDEN, jsonrpc::SERVER_ERROR, what);
        }
        let origin = cors::allowed_origin(request.headers(), &policy);
        drop(policy);
        if cors::is_preflight(request.method(), request.headers()) {
            return cors::preflight(origin, request.headers(), self.allowed_methods());
        }
        let mut response = self.authenticated(request).await;
        if let Some(origin) = origin {
            cors::decorate(&mut response, origin);
        }
        response
    }

    /// Authenticates the request, then routes it by method.
    async fn authenticated<B>(&self, request: http::Request<B>) -> Response<Body>
    where
        B: HttpBody + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (mut parts, body) = request.into_parts();
        if let Some(name) = rules::duplicated(&parts.headers) {
            // Before the authenticator reads `Authorization`: two of them
            // may name two principals.
            return duplicate_header(name);
        }
        if let Some(authenticator) = &self.inner.authenticator {
            match authenticator.authenticate(&parts) {
                Ok(principal) => {
                    parts.extensions.insert(principal);
                }
                Err(refusal) => return refusal.into_response(),
            }
        }
        let request = http::Request::from_parts(parts, body);
        let stateless = self.inner.config.stateless;
        let version = match rules::protocol_version(request.headers()) {
            Ok(Version::Stateless) if !stateless => Err(rules::STATELESS_VERSION.to_string()),
            other => other,
        };
        let version = match version {
            Ok(version) => version,
            Err(bad) => {
                // The error carries the request's id when the body has one
                // (the 2026-07-28 schema's example does).
                let limit = self.inner.config.max_body;
                let id = match *request.method() == Method::POST {
                    true => {
                        let timeout = self.inner.config.limits.body_read_timeout;
                        stateless::request_id(request.into_body(), limit, timeout).await
                    }
                    false => None,
                };
                return unsupported_version(&bad, stateless, id.as_ref());
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
            _ => not_allowed(self.allowed_methods()),
        }
    }

    /// The methods the endpoint answers, for `Allow` and CORS.
    fn allowed_methods(&self) -> &'static str {
        if self.inner.config.standalone_stream {
            "GET, POST, DELETE"
        } else {
            "POST, DELETE"
        }
    }

    /// The live session a header names, if it belongs to the request's
    /// principal; or the 404 to answer (the same for every cause: another
    /// principal's session is no more visible than an unknown one).
    #[allow(clippy::result_large_err)]
    pub(super) fn find(
        &self,
        header: &[u8],
        principal: Option<&Principal>,
    ) -> Result<Session<Entry<A::Session>>, Response<Body>> {
        let registry = &self.inner.registry;
        let found = registry.parse_id(header).ok().and_then(|id| {
            // The Debug form: index, generation, node; never the secret.
            tracing::Span::current().record("session", tracing::field::debug(id));
            // Bound whenever a principal is present, however it got into
            // the request (the authenticator, or a middleware in front):
            // a session opened by one principal, or by none, is found only
            // by the same.
            registry
                .lookup_if(&id, |entry| entry.owner.as_ref() == principal)
                .ok()
        });
        found.ok_or_else(not_found)
    }

    pub(super) fn sse(&self, outlet: Arc<Outlet>) -> Response<Body> {
        let body = SseBody::new(
            outlet,
            self.inner.config.keep_alive,
            Arc::clone(&self.inner.counters),
        );
        let mut response = Response::new(BodyExt::boxed(body));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        // `no-transform`: no proxy may compress or rewrite the stream; and
        // `X-Accel-Buffering: no` keeps nginx from buffering it (both as the
        // official SDKs send them; the 2026-07-28 transport page asks for
        // the latter).
        headers.insert(
            CACHE_CONTROL,
            HeaderValue::from_static("no-cache, no-transform"),
        );
        headers.insert(
            HeaderName::from_static("x-accel-buffering"),
            HeaderValue::from_static("no"),
        );
        response
    }
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

//! The session manager: the façade of one MCP endpoint. Its methods are
//! the endpoint's public surface (serving a request, its registry and
//! counters, the allow-lists, draining, shutdown); each delegates to the
//! module that does the work, over the endpoint's [`Hub`]. Also its
//! hyper and tower `Service` impls. (Its constructor,
//! [`SessionManager::builder`], is with the builder.)
//!
//! Every way a session ends goes through the registry:
//! `DELETE` → [`Registry::terminate_session`] with [`Reason::Deleted`]; a
//! handler error or panic → `terminate_session(Failed)`; an `initialize`
//! answered with an error → `terminate(Rejected)`; idle → the reaper's
//! [`Registry::reap_idle`] (or a lookup that finds it expired); shutdown →
//! [`Registry::terminate_all`] with [`Reason::Shutdown`]. The registry's
//! close callback (run once, by the winner) stops the session's work,
//! closes its streams, logs the reason and calls
//! [`App::closed`](crate::http::App::closed). Nothing else cleans up.

use crate::http::access::AllowLists;
use crate::http::app::App;
use crate::http::counters::{self, HttpStats};
use crate::http::endpoint::drain::{self, DrainReport};
use crate::http::endpoint::reaper;
use crate::http::endpoint::router;
use crate::http::endpoint::shutdown::{self, ShutdownReport};
use crate::http::input::sealing::RequestStateKeys;
use crate::http::listen::{Publisher, Sink};
use crate::http::observe::DurationMetrics;
use crate::http::run::hub::Hub;
use crate::http::run::recycled::recycled;
#[cfg(feature = "internals")]
use crate::http::session::entry::SessionEntry;
use crate::http::wire::body::Body;
use crate::http::wire::body::SendBody;
#[cfg(doc)]
use crate::Reason;
#[cfg(feature = "internals")]
use crate::Registry;
use crate::Stats;
use http::Response;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;
use tracing::Instrument;

/// Serves one MCP endpoint (streamable HTTP) with a registry of sessions.
///
/// Cheap to clone (one `Arc`). Mount it on hyper directly (it is a
/// [`hyper::service::Service`]), through [`serve`](crate::http::serve) (which adds
/// the connection bounds and graceful shutdown), or on tower/axum (it is a
/// [`tower_service::Service`]): e.g.
/// `Router::new().route_service("/mcp", manager)`. Wherever it is mounted,
/// the `Origin` check and DNS-rebinding protection hold (see
/// [`RebindingProtection`](crate::http::RebindingProtection)) and the idle reaper
/// starts with the first request (see
/// [`start_reaper`](SessionManager::start_reaper)). Outside `serve`, at
/// shutdown call [`shutdown_gracefully`](SessionManager::shutdown_gracefully)
/// once the listener has stopped accepting.
pub struct SessionManager<A: App> {
    hub: Arc<Hub<A>>,
}

impl<A: App> Clone for SessionManager<A> {
    fn clone(&self) -> Self {
        SessionManager {
            hub: Arc::clone(&self.hub),
        }
    }
}

impl<A: App> fmt::Debug for SessionManager<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionManager")
            .field("registry", &self.hub.registry)
            .finish_non_exhaustive()
    }
}

impl<A: App> SessionManager<A> {
    pub(crate) fn from_hub(hub: Hub<A>) -> SessionManager<A> {
        let hub = Arc::new(hub);
        // Weak: the publisher must not keep the endpoint alive.
        let sink: Arc<dyn Sink> = hub.delivery.clone();
        hub.publisher.attach(Arc::downgrade(&sink));
        SessionManager { hub }
    }

    /// The publisher that reaches this endpoint's listeners (listen streams
    /// and legacy sessions): a clone of the one given to
    /// [`Builder::publisher`](crate::http::Builder::publisher), or the manager's
    /// own.
    pub fn publisher(&self) -> Publisher {
        self.hub.publisher.clone()
    }

    pub(crate) fn hub(&self) -> &Arc<Hub<A>> {
        &self.hub
    }

    // --- serving ----------------------------------------------------------

    /// Serves one request, inside a DEBUG span `mcp` with the method and
    /// (once known) the session, named by the `Debug` form of its id (never
    /// its secret): at the default INFO level the span is disabled and
    /// costs nothing per request. The response's status is counted in
    /// `sessionreg_http_responses_total`.
    ///
    /// The returned future is a few words: the routing behind it is boxed
    /// when `handle` is called. (Routing is a future of a few KiB, a hub
    /// for every way a request can go, and hyper keeps the box it polls a
    /// connection's request future in for as long as the connection is
    /// open, sized for the service's whole future: a service that awaited
    /// the routing inline would hold that much for every open connection,
    /// an idle keep-alive or a GET stream. The routing's box lives only
    /// while its request is in flight; freed, it is kept by its thread for
    /// the next routing made there, a few blocks at most.)
    pub fn handle<B>(
        &self,
        request: http::Request<B>,
    ) -> impl Future<Output = Response<Body>> + Send + '_
    where
        B: SendBody,
    {
        let span = tracing::debug_span!("mcp", method = %request.method());
        self.start_reaper();
        // On the heap, in a block its thread kept from an earlier routing if
        // it did (`recycled.rs`).
        let routing = recycled(|| router::route(&self.hub, request).instrument(span));
        async move {
            let response = routing.await;
            self.hub.counters.response(response.status().as_u16());
            response
        }
    }

    /// Starts the idle reaper on the current tokio runtime unless it runs
    /// already; returns whether it runs. A no-op (`false`) without an idle
    /// timeout or outside a runtime. Every request calls this (one atomic
    /// load once started), so calling it yourself is needed only to reap
    /// before the first request. It stops when the last clone of the
    /// manager is dropped.
    pub fn start_reaper(&self) -> bool {
        reaper::start(&self.hub)
    }

    // --- what it holds ----------------------------------------------------

    /// The session registry. Not part of the API: for this crate's own
    /// tests (feature `internals`); an application reads
    /// [`stats`](Self::stats) and ends sessions through the manager.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn registry(&self) -> &Registry<SessionEntry<A::Session>> {
        &self.hub.registry
    }

    /// The application.
    pub fn app(&self) -> &A {
        self.hub.app()
    }

    /// A snapshot of the registry's counters.
    pub fn stats(&self) -> Stats {
        self.hub.registry.stats()
    }

    /// A snapshot of the HTTP layer's own counters (connections, streams,
    /// handlers, event log bytes, responses by status, dropped
    /// notifications).
    pub fn http_stats(&self) -> HttpStats {
        let mut stats = self.hub.counters.snapshot();
        stats.event_log_bytes = self.hub.logs.total.used() as u64;
        stats.request_states_unused = self.hub.sealer.unused().stats().live;
        stats
    }

    /// The registry's counters in Prometheus text format, followed by the
    /// HTTP layer's (`sessionreg_http_*`; see [`HttpStats`]), when it
    /// serves tasks the task store's (`sessionreg_tasks_*`), and with an
    /// OAuth resource server (feature `oauth`) its own
    /// (`sessionreg_oauth_*`); then the MCP semantic conventions'
    /// histograms, `mcp_server_operation_duration_seconds` and
    /// `mcp_server_session_duration_seconds` (see
    /// [`duration_metrics`](Self::duration_metrics)), and with feature
    /// `otel` the spans the OTLP export dropped
    /// (`sessionreg_otel_spans_dropped_total{cause}`: `queue_full`,
    /// `export_failed`).
    pub fn metrics(&self) -> String {
        let mut out = String::with_capacity(3072);
        crate::metrics::write(&mut out, &self.stats());
        counters::write(&mut out, &self.http_stats());
        if let Some(tasks) = self.task_stats() {
            crate::metrics::write_tasks(&mut out, &tasks);
        }
        crate::http::listen::metrics::write(&mut out, &self.hub.listeners, &self.hub.publisher);
        #[cfg(feature = "oauth")]
        if let Some(server) = &self.hub.resource_server {
            server.stats().write_metrics(&mut out);
        }
        crate::http::access::rates::write_metrics(self.hub.rates.as_ref(), &mut out);
        self.hub.durations.write(&mut out);
        #[cfg(feature = "otel")]
        crate::http::observe::export_queue::write_metrics(&mut out);
        self.hub.app().metrics(&mut out);
        out
    }

    /// The duration histograms of the MCP semantic conventions, as a
    /// `prometheus-client` collector to register into an application's
    /// own registry: `mcp_server_operation_duration_seconds` (every
    /// request and notification, by `mcp_method_name`, `gen_ai_tool_name`
    /// or `gen_ai_prompt_name`, `error_type` and `mcp_protocol_version`;
    /// the conventions' buckets, 10 ms to 300 s) and
    /// `mcp_server_session_duration_seconds` (every legacy session, by
    /// `mcp_protocol_version` and, for one that failed or was rejected,
    /// `error_type`; buckets to a day). [`metrics`](Self::metrics) writes
    /// them already.
    pub fn duration_metrics(&self) -> DurationMetrics {
        DurationMetrics(Arc::clone(&self.hub.durations))
    }

    /// The task store's counters (see [`crate::metrics::write_tasks`]),
    /// when the manager serves the tasks extension
    /// ([`Builder::tasks`](crate::http::Builder::tasks)).
    pub fn task_stats(&self) -> Option<crate::TaskStats> {
        self.hub.tasks.as_ref().map(|tasks| tasks.stats())
    }

    // --- who may reach it -------------------------------------------------

    /// Tells the manager the address its listener is bound to
    /// ([`serve`](crate::http::serve) does). With
    /// [`RebindingProtection::Auto`](crate::http::RebindingProtection::Auto), a
    /// public (internet-routable) address lifts the loopback restriction on
    /// `Host`; a loopback, unspecified (`0.0.0.0`), private or link-local
    /// one keeps it. A present `Origin` is checked either way. When the
    /// restriction is lifted, one INFO line says what the endpoint lets in.
    pub fn set_bind_address(&self, addr: std::net::SocketAddr) {
        self.hub.access.set_bind_address(addr);
    }

    /// Replaces the `Origin` allow-list (see
    /// [`Builder::allow_origin`](crate::http::Builder::allow_origin)); requests
    /// already past the check are not affected. Lock-free for the requests
    /// that read it.
    pub fn set_allowed_origins(&self, origins: Vec<String>) {
        self.hub
            .access
            .replace(|lists| lists.origins.clone_from(&origins));
    }

    /// Replaces the `Host` allow-list (see
    /// [`Builder::allow_host`](crate::http::Builder::allow_host)).
    pub fn set_allowed_hosts(&self, hosts: Vec<String>) {
        self.hub
            .access
            .replace(|lists| lists.hosts.clone_from(&hosts));
    }

    /// The allow-lists in force.
    pub fn allowed(&self) -> AllowLists {
        self.hub.access.lists()
    }

    /// Replaces the keys that seal and open 2026-07-28 `requestState`s
    /// (see [`RequestStateKeys::rotated`] for a rotation that still opens
    /// the states sealed with the previous key). Lock-free for requests.
    pub fn set_request_state_keys(&self, keys: RequestStateKeys) {
        self.hub.sealer.set_keys(keys);
    }

    // --- draining, for a rolling restart (see `drain.rs`) -----------------

    /// Starts draining: from now on `initialize` gets 503 with
    /// `Retry-After` and creates nothing, [`readiness`](Self::readiness)
    /// answers 503, and the sessions already live are served on. Returns
    /// whether this call started it (false if the node was already
    /// draining).
    ///
    /// ```
    /// use sessionreg::http::{App, Context, HandlerError, Reply, SessionManager};
    /// use sessionreg::http::jsonrpc::{Message, Request, RpcError};
    /// use http::request::Parts;
    ///
    /// struct Tools;
    /// impl App for Tools {
    ///     type Session = ();
    ///     fn open(&self, _: &Request, _: &Parts) -> Result<(), RpcError> { Ok(()) }
    ///     async fn handle(&self, _: Context<()>, _: Message) -> Result<Reply, HandlerError> {
    ///         Ok(Reply::Accepted)
    ///     }
    /// }
    ///
    /// let manager = SessionManager::builder(Tools).node_id(7).build().unwrap();
    /// assert_eq!(manager.readiness().status(), 200);
    /// assert!(manager.start_drain());
    /// assert!(manager.is_draining());
    /// assert_eq!(manager.readiness().status(), 503); // out of the round-robin
    /// assert_eq!(manager.liveness().status(), 200); // still serving its ids
    /// ```
    pub fn start_drain(&self) -> bool {
        drain::start(&self.hub)
    }

    /// Whether the node is draining.
    pub fn is_draining(&self) -> bool {
        self.hub.phase.is_draining()
    }

    /// Drains: [`start_drain`](Self::start_drain), then waits until no
    /// session is live or `deadline` has passed. Shut down after it (the
    /// sessions still live then end with `Shutdown`); e.g. make it part of
    /// the signal future given to [`serve`](crate::http::serve).
    pub async fn drain(&self, deadline: Duration) -> DrainReport {
        drain::drain(&self.hub, deadline).await
    }

    /// The readiness probe: 200 when this node takes new sessions; 503 when
    /// it does not (draining, shutting down, or at capacity). A balancer
    /// puts a node in the round-robin of `initialize` requests only while
    /// this says 200. The body is JSON:
    /// `{"status":"ready"|"draining"|"full"|"shutting_down","node":N,"sessions":LIVE}`.
    pub fn readiness(&self) -> Response<Body> {
        drain::readiness(&self.hub)
    }

    /// The liveness probe: 200 while this node serves its sessions
    /// (draining or not), 503 once it is shutting down. A balancer routes a
    /// session's requests to its owner while this says 200, and to any other
    /// node (which answers 404, so the client re-initializes) when not.
    pub fn liveness(&self) -> Response<Body> {
        drain::liveness(&self.hub)
    }

    // --- shutdown (see `server/shutdown.rs`) ------------------------------

    /// Shuts down now: refuses new sessions (503) and ends every live
    /// session with [`Reason::Shutdown`] (close callbacks run, the work of
    /// their requests in flight is stopped, SSE streams end cleanly).
    /// Returns how many sessions this call ended. Requests at 2026-07-28
    /// (no session) carry on; see [`wait_idle`](SessionManager::wait_idle).
    /// To let requests in flight finish first:
    /// [`shutdown_gracefully`](SessionManager::shutdown_gracefully).
    pub fn shutdown(&self) -> usize {
        shutdown::now(&self.hub)
    }

    /// Shuts down gracefully, wherever the manager is mounted (outside
    /// [`serve`](crate::http::serve), call it once the listener has stopped
    /// accepting): refuses new sessions, waits up to `deadline` for the
    /// requests in flight to finish (an open `GET` stream is not waited
    /// for), then ends every session with [`Reason::Shutdown`], which stops
    /// the work still running and ends every stream.
    pub async fn shutdown_gracefully(&self, deadline: Duration) -> ShutdownReport {
        shutdown::gracefully(&self.hub, deadline).await
    }

    /// Waits until no handler is running, or `deadline` has passed;
    /// returns whether they all finished.
    pub async fn wait_idle(&self, deadline: Duration) -> bool {
        shutdown::wait_idle(&self.hub, deadline).await
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
    B: SendBody,
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
    B: SendBody,
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

//! The shared state of one endpoint ([`State`]): the application, the
//! registry of its sessions, its configuration and the switches and
//! counters every request reads. Its fields are private: the steps of a
//! request (`router.rs`, `legacy/`, `modern/`, `dispatch.rs`) get a
//! `&State` and use its methods.

use super::access::auth::{Authenticator, Principal};
use super::access::Access;
use super::admission::HandlerTasks;
use super::app::App;
use super::body::Body;
use super::config::Config;
use super::config_error::ConfigError;
use super::counters::HttpCounters;
use super::modern::sealing::{RequestStateKeys, Sealer};
use super::reject::Reject;
use super::session::SessionEntry;
use super::sse::resume::{LogBounds, LogBudget};
use super::sse::{Outlet, QueueLimits, SseBody, Streams};
use super::tasks::Tasks;
use crate::{Registry, Session};
use http::header::{HeaderName, HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use http::Response;
use http_body_util::BodyExt;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The shared state of one endpoint.
pub(crate) struct State<A: App> {
    app: Arc<A>,
    registry: Registry<SessionEntry<A::Session>>,
    config: Config,
    access: Access,
    authenticator: Option<Arc<dyn Authenticator>>,
    shutting_down: AtomicBool,
    draining: AtomicBool,
    handlers: Arc<HandlerTasks>,
    counters: Arc<HttpCounters>,
    /// The event logs' bounds, with the budget every session shares.
    logs: LogBounds,
    /// Seals and opens the `requestState`s of 2026-07-28 requests.
    sealer: Sealer,
    /// The tasks extension's store, when it is served.
    tasks: Option<Tasks>,
    /// The idle reaper, once started; aborted when the state is dropped.
    reaper: OnceLock<tokio::task::AbortHandle>,
}

impl<A: App> Drop for State<A> {
    fn drop(&mut self) {
        if let Some(reaper) = self.reaper.get() {
            reaper.abort();
        }
    }
}

impl<A: App> State<A> {
    pub(crate) fn new(
        app: Arc<A>,
        registry: Registry<SessionEntry<A::Session>>,
        config: Config,
        access: Access,
        authenticator: Option<Arc<dyn Authenticator>>,
        keys: RequestStateKeys,
    ) -> Result<State<A>, ConfigError> {
        let sealer = Sealer::new(keys, &config)?;
        let logs = LogBounds {
            events: config.event_log_events,
            session_bytes: config.event_log_session_bytes,
            total: Arc::new(LogBudget::new(config.event_log_total_bytes)),
        };
        let tasks = match config.tasks {
            true => Some(Tasks::new(&config, registry.node_id())?),
            false => None,
        };
        Ok(State {
            app,
            tasks,
            registry,
            config,
            access,
            authenticator,
            shutting_down: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            handlers: Arc::new(HandlerTasks::default()),
            counters: Arc::new(HttpCounters::new()),
            logs,
            sealer,
            reaper: OnceLock::new(),
        })
    }

    pub(crate) fn app(&self) -> &A {
        &self.app
    }

    pub(crate) fn registry(&self) -> &Registry<SessionEntry<A::Session>> {
        &self.registry
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    pub(crate) fn access(&self) -> &Access {
        &self.access
    }

    pub(crate) fn authenticator(&self) -> Option<&dyn Authenticator> {
        self.authenticator.as_deref()
    }

    pub(crate) fn handlers(&self) -> &Arc<HandlerTasks> {
        &self.handlers
    }

    pub(crate) fn counters(&self) -> &Arc<HttpCounters> {
        &self.counters
    }

    pub(crate) fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    /// The tasks extension's store, when it is served.
    pub(crate) fn tasks(&self) -> Option<&Tasks> {
        self.tasks.as_ref()
    }

    pub(crate) fn reaper(&self) -> &OnceLock<tokio::task::AbortHandle> {
        &self.reaper
    }

    /// Bytes the event logs of every session hold now.
    pub(crate) fn event_log_bytes(&self) -> usize {
        self.logs.total.used()
    }

    /// Whether the manager is shutting down (new sessions are refused).
    pub(crate) fn is_shutting_down(&self) -> bool {
        // SeqCst: an insert racing the shutdown sweep re-checks it after
        // inserting and ends its own session (see `legacy/initialize.rs`).
        self.shutting_down.load(Ordering::SeqCst)
    }

    pub(crate) fn start_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    /// Whether the node is draining (new sessions are refused).
    pub(crate) fn is_draining(&self) -> bool {
        // Relaxed: a flag with nothing published under it; an initialize
        // that reads it a moment late is served (see `drain.rs`).
        self.draining.load(Ordering::Relaxed)
    }

    /// Starts draining; whether this call started it.
    pub(crate) fn start_drain(&self) -> bool {
        !self.draining.swap(true, Ordering::Relaxed)
    }

    /// The response to a refusal, for request `id` if known.
    pub(crate) fn refuse(&self, reject: Reject, id: Option<&Value>) -> Response<Body> {
        reject.into_response(id, self.config.retry_after_secs())
    }

    /// The live session a header names, if it belongs to the request's
    /// principal; else [`Reject::SessionNotFound`], the same for every
    /// cause (another principal's session is no more visible than an
    /// unknown one).
    ///
    /// The binding holds whenever a principal is present, however it got
    /// into the request (the authenticator, or a middleware in front): a
    /// session opened by one principal, or by none, is found only by the
    /// same.
    pub(crate) fn find(
        &self,
        header: &[u8],
        principal: Option<&Principal>,
    ) -> Result<Session<SessionEntry<A::Session>>, Reject> {
        let id = self
            .registry
            .parse_id(header)
            .map_err(|_| Reject::SessionNotFound)?;
        // The Debug form: index, generation, node; never the secret.
        tracing::Span::current().record("session", tracing::field::debug(id));
        self.registry
            .lookup_if(&id, |entry| entry.owner.as_ref() == principal)
            .map_err(|_| Reject::SessionNotFound)
    }

    /// The bounds of each SSE stream's queue.
    pub(crate) fn queue_limits(&self) -> QueueLimits {
        QueueLimits {
            messages: self.config.stream_queue_messages,
            bytes: self.config.stream_queue_bytes,
            stall: self.config.stall_timeout,
        }
    }

    /// The streams of a new session.
    pub(crate) fn new_streams(&self) -> Streams {
        Streams::new(
            self.logs.clone(),
            self.queue_limits(),
            Arc::clone(&self.counters),
        )
    }

    /// A new outlet for a reply stream that is not logged.
    pub(crate) fn new_outlet(&self) -> Arc<Outlet> {
        Outlet::new(self.queue_limits(), Arc::clone(&self.counters))
    }

    /// An SSE response carrying `outlet`'s frames.
    pub(crate) fn sse(&self, outlet: Arc<Outlet>) -> Response<Body> {
        let body = SseBody::new(
            outlet,
            self.config.sse_keep_alive,
            Arc::clone(&self.counters),
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

    /// An SSE response that ends at once (for a request with nothing more
    /// to say).
    pub(crate) fn ended_sse(&self) -> Response<Body> {
        self.sse(Outlet::ended(Arc::clone(&self.counters)))
    }
}

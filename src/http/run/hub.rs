//! The shared hub of one endpoint ([`Hub`]): the parts every request
//! may need, each owned by the module that uses it (the registry of
//! sessions, the sealer of `requestState`s, the task store, the allow-lists,
//! the runner of handlers). A step of the pipeline takes the parts it uses;
//! nothing here builds a response or decides anything.

use crate::http::access::auth::Authenticator;
use crate::http::access::rates::{FleetRates, RateLimits};
use crate::http::access::Access;
use crate::http::app::discovery::Discovered;
use crate::http::app::App;
use crate::http::counters::HttpCounters;
use crate::http::input::sealing::{RequestStateKeys, Sealer};
use crate::http::input::used::UsedStates;
use crate::http::listen::{Delivery, Listeners, Publisher, Sessions};
use crate::http::observe::Durations;
use crate::http::run::admission::HandlerTasks;
use crate::http::run::dispatch::Runner;
use crate::http::session::entry::SessionEntry;
use crate::http::sse::resume::{LogBounds, LogBudget};
use crate::http::sse::{Outlet, QueueLimits, Responder, Streams};
use crate::http::tasks::Tasks;
use crate::http::wire::config::Config;
use crate::http::wire::config_error::ConfigError;
use crate::Registry;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The shared hub of one endpoint.
pub(crate) struct Hub<A: App> {
    /// The application, and what running its handlers needs.
    pub(crate) runner: Arc<Runner<A>>,
    /// The legacy era's sessions (shared with the listeners' delivery, which
    /// notifies them: `listen/deliver.rs`).
    pub(crate) registry: Arc<Registry<SessionEntry<A::Session>>>,
    pub(crate) config: Config,
    pub(crate) access: Access,
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    /// The OAuth resource server, asked after the authenticator.
    #[cfg(feature = "oauth")]
    pub(crate) resource_server: Option<crate::http::access::oauth::ResourceServer>,
    pub(crate) phase: Phase,
    /// The rate limits (each principal's, each limited tool's), when any
    /// is set.
    pub(crate) rates: Option<RateLimits>,
    pub(crate) counters: Arc<HttpCounters>,
    /// The event logs' bounds, with the budget every session shares.
    pub(crate) logs: LogBounds,
    /// How SSE responses are made.
    pub(crate) sse: Responder,
    /// Seals and opens the `requestState`s of 2026-07-28 requests.
    pub(crate) sealer: Sealer,
    /// The tasks extension's store, when it is served.
    pub(crate) tasks: Option<Tasks>,
    /// The listen streams, and what they (and the sessions) listen to.
    pub(crate) listeners: Arc<Listeners>,
    /// What the application publishes through, and what it reaches of this
    /// endpoint (its listen streams and sessions: `listen/deliver.rs`),
    /// which the publisher holds weakly.
    pub(crate) publisher: Publisher,
    pub(crate) delivery: Arc<Delivery>,
    /// What the application says of itself to 2026-07-28 clients, read
    /// once, when the manager is built.
    pub(crate) discovery: Discovered,
    /// The idle reaper, once started; aborted when the hub is dropped.
    pub(crate) reaper: OnceLock<tokio::task::AbortHandle>,
    /// The duration histograms (also fed by the registry's close callback).
    pub(crate) durations: Arc<Durations>,
}

impl<A: App> Drop for Hub<A> {
    fn drop(&mut self) {
        if let Some(reaper) = self.reaper.get() {
            reaper.abort();
        }
    }
}

/// What [`Hub::new`] is made of: what the builder made and validated.
pub(crate) struct Parts<A: App> {
    pub(crate) app: Arc<A>,
    pub(crate) registry: Registry<SessionEntry<A::Session>>,
    pub(crate) config: Config,
    pub(crate) access: Access,
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    pub(crate) keys: RequestStateKeys,
    /// The fleet's record of used single-use states, with a bus.
    pub(crate) used: Option<Arc<dyn UsedStates>>,
    /// Where the fleet decides its rate limits, with a bus.
    pub(crate) fleet_rates: Option<Arc<dyn FleetRates>>,
    pub(crate) listeners: Arc<Listeners>,
    pub(crate) publisher: Publisher,
    /// The layer's counters, which the listeners count in too.
    pub(crate) counters: Arc<HttpCounters>,
    pub(crate) durations: Arc<Durations>,
}

impl<A: App> Hub<A> {
    pub(crate) fn new(parts: Parts<A>) -> Result<Hub<A>, ConfigError> {
        let Parts {
            app,
            registry,
            config,
            access,
            authenticator,
            keys,
            used,
            fleet_rates,
            listeners,
            publisher,
            counters,
            durations,
        } = parts;
        let sealer = Sealer::new(keys, &config, used)?;
        let logs = LogBounds {
            events: config.event_log_events,
            session_bytes: config.event_log_session_bytes,
            total: Arc::new(LogBudget::new(config.event_log_total_bytes)),
        };
        let tasks = match config.tasks {
            true => Some(Tasks::new(&config, registry.node_id())?),
            false => None,
        };
        let runner = Arc::new(Runner {
            app,
            counters: Arc::clone(&counters),
            handlers: Arc::new(HandlerTasks::default()),
            timeout: config.handler_timeout,
        });
        let sse = Responder {
            keep_alive: config.sse_keep_alive,
            counters: Arc::clone(&counters),
        };
        let discovery = Discovered::new(runner.app.discovery(), tasks.is_some());
        let rates = RateLimits::new(&config, fleet_rates);
        let registry = Arc::new(registry);
        let delivery = Arc::new(Delivery::new(
            Arc::clone(&listeners),
            Arc::clone(&registry) as Arc<dyn Sessions>,
        ));
        Ok(Hub {
            delivery,
            discovery,
            runner,
            registry,
            config,
            access,
            authenticator,
            #[cfg(feature = "oauth")]
            resource_server: None,
            phase: Phase::default(),
            rates,
            counters,
            logs,
            sse,
            sealer,
            tasks,
            listeners,
            publisher,
            reaper: OnceLock::new(),
            durations,
        })
    }

    /// Mounts `server` (at build, before the hub is shared).
    #[cfg(feature = "oauth")]
    pub(crate) fn with_resource_server(
        mut self,
        server: Option<crate::http::access::oauth::ResourceServer>,
    ) -> Hub<A> {
        self.resource_server = server;
        self
    }

    /// The application.
    pub(crate) fn app(&self) -> &A {
        &self.runner.app
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
}

/// Where the endpoint is in its life: serving, draining (no new sessions),
/// shutting down.
#[derive(Debug, Default)]
pub(crate) struct Phase {
    shutting_down: AtomicBool,
    draining: AtomicBool,
}

impl Phase {
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
}

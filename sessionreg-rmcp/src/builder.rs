//! Configuration of a [`RegistrySessionManager`], checked once by `build`.

use crate::aliases::Aliases;
use crate::entry::Entry;
use crate::manager::RegistrySessionManager;
use crate::state::State;
use crate::workers::Workers;
use rmcp::transport::streamable_http_server::session::local::SessionConfig;
use rmcp::transport::streamable_http_server::session::EventStore;
use sessionreg::{BuildError, Reason, Registry, SessionId};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// rmcp's default `keep_alive`, and so the default idle timeout.
pub const DEFAULT_IDLE_TIMEOUT: Duration = SessionConfig::DEFAULT_KEEP_ALIVE;

type OnClose = Arc<dyn Fn(&SessionId, Reason) + Send + Sync>;

/// Builds a [`RegistrySessionManager`]; see
/// [`RegistrySessionManager::builder`].
///
/// ```
/// use std::time::Duration;
/// use sessionreg_rmcp::RegistrySessionManager;
///
/// let manager = RegistrySessionManager::builder()
///     .capacity(10_000)
///     .idle_timeout(Duration::from_secs(30 * 60))
///     .node_id(7) // ids start with "07": a balancer can route by it
///     .build()
///     .expect("a valid configuration");
/// assert_eq!(manager.stats().capacity, 10_000);
/// ```
#[must_use]
pub struct Builder {
    capacity: usize,
    /// Set by `idle_timeout` / `no_idle_timeout`; otherwise the session
    /// config's `keep_alive` is the timeout.
    idle_timeout: Option<Option<Duration>>,
    node: u8,
    session_config: SessionConfig,
    event_store: Option<Arc<dyn EventStore>>,
    token: Option<CancellationToken>,
    on_close: Option<OnClose>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("capacity", &self.capacity)
            .field("idle_timeout", &self.idle_timeout)
            .field("node", &self.node)
            .field("session_config", &self.session_config)
            .field("event_store", &self.event_store.is_some())
            .field("cancellation_token", &self.token.is_some())
            .field("on_close", &self.on_close.is_some())
            .finish()
    }
}

impl RegistrySessionManager {
    /// Starts configuring a manager.
    pub fn builder() -> Builder {
        Builder::new()
    }
}

impl Default for RegistrySessionManager {
    /// The defaults: capacity 65,536, idle timeout 300 s (rmcp's default
    /// `keep_alive`), node 0, rmcp's default [`SessionConfig`], no event
    /// store.
    fn default() -> Self {
        RegistrySessionManager::builder()
            .build()
            .expect("the default configuration is valid")
    }
}

impl Builder {
    fn new() -> Builder {
        Builder {
            capacity: sessionreg::DEFAULT_CAPACITY,
            idle_timeout: None,
            node: 0,
            session_config: SessionConfig::default(),
            event_store: None,
            token: None,
            on_close: None,
        }
    }

    /// The maximum of live sessions (default
    /// [`sessionreg::DEFAULT_CAPACITY`], 65,536). At it, `initialize` is
    /// refused (503 behind a [`StatusLayer`](crate::StatusLayer)); no busy
    /// session is ever evicted.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Ends sessions that had nothing in flight for this long (default: the
    /// [`session_config`](Self::session_config)'s `keep_alive`, rmcp's
    /// [`DEFAULT_IDLE_TIMEOUT`] of 300 s unless set). Set here, it wins over
    /// `keep_alive`.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(Some(timeout));
        self
    }

    /// Sessions never expire; they end by `DELETE`, worker exit or shutdown
    /// only (what `keep_alive: None` asks of rmcp's manager). Wins over
    /// `keep_alive`.
    pub fn no_idle_timeout(mut self) -> Self {
        self.idle_timeout = Some(None);
        self
    }

    /// The node id in every session id (its first two hex digits; default
    /// 0), so a load balancer can route each request to the node that owns
    /// its session (`deploy/` renders such configurations).
    pub fn node_id(mut self, node: u8) -> Self {
        self.node = node;
        self
    }

    /// rmcp's per-session worker configuration (channel capacity, SSE retry,
    /// `completed_cache_ttl`, `init_timeout`), as `LocalSessionManager`
    /// takes it.
    ///
    /// Its `keep_alive` is the idle timeout (unless
    /// [`idle_timeout`](Self::idle_timeout) or
    /// [`no_idle_timeout`](Self::no_idle_timeout) sets one; `None` means no
    /// timeout, as in rmcp), with this crate's rule of what idle means: a
    /// session expires once nothing of it has been in flight for that long.
    /// rmcp's worker restarts its `keep_alive` timer on its own events only,
    /// and so ends a session whose tool call stays silent for longer (the
    /// call is lost, and its client sees 404); here a request is in flight
    /// until its answer stream ends, and an open GET stream while it is
    /// open. The workers themselves run without rmcp's timer.
    ///
    /// ```
    /// use std::time::Duration;
    /// use rmcp::transport::streamable_http_server::session::local::SessionConfig;
    /// use sessionreg_rmcp::RegistrySessionManager;
    ///
    /// let mut config = SessionConfig::default();
    /// config.keep_alive = Some(Duration::from_secs(60));
    /// let manager = RegistrySessionManager::builder()
    ///     .session_config(config.clone())
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(manager.idle_timeout(), Some(Duration::from_secs(60)));
    ///
    /// config.keep_alive = None; // rmcp: never expire
    /// let manager = RegistrySessionManager::builder()
    ///     .session_config(config)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(manager.idle_timeout(), None);
    /// ```
    pub fn session_config(mut self, config: SessionConfig) -> Self {
        self.session_config = config;
        self
    }

    /// The SSE event store, as rmcp's `LocalSessionManager::with_event_store`
    /// takes it (also [`RegistrySessionManager::with_event_store`]): every
    /// session's worker stores each event it sends and the store's id goes
    /// out as the SSE event id; a `GET` with `Last-Event-ID` replays from
    /// the store (also after a restart, or on another node that restored
    /// the session); and rmcp's stateless paths use it (persisted streams
    /// for 2026-07-28 requests, and their replay by a `GET` without a
    /// session). Without one, each worker keeps its own cache, as in
    /// `LocalSessionManager` without a store.
    pub fn event_store(mut self, store: Arc<dyn EventStore>) -> Self {
        self.event_store = Some(store);
        self
    }

    /// The cancellation token of the rmcp server
    /// (`StreamableHttpServerConfig::cancellation_token`). Once it is
    /// cancelled the manager creates no sessions, and sessions whose workers
    /// it stops are counted as ended by [`Reason::Shutdown`] rather than
    /// [`Reason::Failed`].
    pub fn cancellation_token(mut self, token: CancellationToken) -> Self {
        self.token = Some(token);
        self
    }

    /// Called once per session, by whichever path ended it, with its reason
    /// (after the session's worker has been told to stop). It runs on that
    /// path's thread, maybe inside the registry's sweep: keep it short.
    pub fn on_close(mut self, f: impl Fn(&SessionId, Reason) + Send + Sync + 'static) -> Self {
        self.on_close = Some(Arc::new(f));
        self
    }

    /// Builds the manager, or says what is wrong with the configuration.
    pub fn build(self) -> Result<RegistrySessionManager, BuildError> {
        let hook = self.on_close;
        let aliases = Arc::new(Aliases::default());
        let restored = Arc::clone(&aliases);
        let idle_timeout = self.idle_timeout.unwrap_or(self.session_config.keep_alive);
        let mut registry = Registry::builder()
            .capacity(self.capacity)
            .node_id(self.node)
            .on_close(move |id, entry: &Entry, reason| {
                entry.worker.cancel();
                if entry.restored {
                    restored.remove(entry.handle.id(), *id);
                }
                if let Some(hook) = &hook {
                    hook(id, reason);
                }
            });
        if let Some(timeout) = idle_timeout {
            registry = registry.idle_timeout(timeout);
        }
        let registry = registry.build()?;
        let mut workers = Workers::new(self.session_config);
        if let Some(store) = self.event_store {
            workers.set_event_store(store);
        }
        Ok(RegistrySessionManager::from_parts(
            State::new(registry, self.token),
            aliases,
            workers,
            idle_timeout,
        ))
    }
}

//! Configuration of a [`RegistrySessionManager`], checked once by `build`.

use crate::entry::Entry;
use crate::manager::RegistrySessionManager;
use crate::state::State;
use rmcp::transport::streamable_http_server::session::local::SessionConfig;
use sessionreg::{BuildError, Reason, Registry, SessionId};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// rmcp's default `keep_alive`, used here as the default idle timeout.
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
    idle_timeout: Option<Duration>,
    node: u8,
    session_config: SessionConfig,
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
    /// The defaults: capacity 65,536, idle timeout 300 s, node 0, rmcp's
    /// default [`SessionConfig`] (without its `keep_alive`).
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
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            node: 0,
            session_config: SessionConfig::default(),
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

    /// Ends sessions that had nothing in flight for this long (default
    /// [`DEFAULT_IDLE_TIMEOUT`], rmcp's `keep_alive` default of 300 s).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// Sessions never expire; they end by `DELETE`, worker exit or shutdown
    /// only.
    pub fn no_idle_timeout(mut self) -> Self {
        self.idle_timeout = None;
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
    /// `init_timeout`, ...). Its `keep_alive` is ignored: the registry's
    /// idle timeout replaces it (rmcp's timer does not see requests in
    /// flight).
    pub fn session_config(mut self, config: SessionConfig) -> Self {
        self.session_config = config;
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
        let mut registry = Registry::builder()
            .capacity(self.capacity)
            .node_id(self.node)
            .on_close(move |id, entry: &Entry, reason| {
                entry.worker.cancel();
                if let Some(hook) = &hook {
                    hook(id, reason);
                }
            });
        if let Some(timeout) = self.idle_timeout {
            registry = registry.idle_timeout(timeout);
        }
        let registry = registry.build()?;
        let mut config = self.session_config;
        config.keep_alive = None;
        // A quarter of the timeout, within 10 ms .. 1 s: as sessionreg's
        // HTTP layer sweeps.
        let reap_every = self
            .idle_timeout
            .map(|t| (t / 4).clamp(Duration::from_millis(10), Duration::from_secs(1)));
        Ok(RegistrySessionManager::from_parts(
            State::new(registry, self.token),
            config,
            reap_every,
        ))
    }
}

//! Shared by this crate's tests: the example's server (its own `app.rs`) on
//! 127.0.0.1:0, started and stopped by each test, and the workspace's MCP
//! client (`mcp-test-client`) speaking to it.
#![allow(dead_code)]

#[path = "../../examples/rmcp_server/app.rs"]
pub mod app;
#[path = "../../examples/common/listen.rs"]
pub mod listen;
pub mod stores;

use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use serde_json::Value;
use sessionreg::{Reason, SessionId};
use sessionreg_rmcp::{Builder, RegistrySessionManager};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The client, and the helpers these tests use. (Each test file uses some
/// of them: the others are not unused.)
#[allow(unused_imports)]
pub use mcp_test_client::{eventually, read_sse, sse_events, sse_ids, Client, ACCEPT_BOTH};

/// Every close callback, so tests can check "exactly once, for this reason".
#[derive(Default)]
pub struct Closes(Mutex<Vec<(SessionId, Reason)>>);

impl Closes {
    pub fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    pub fn count_reason(&self, reason: Reason) -> usize {
        let log = self.0.lock().unwrap();
        log.iter().filter(|(_, r)| *r == reason).count()
    }

    /// The reason each id was closed for; panics if one was closed twice.
    pub fn each_once(&self) -> HashMap<String, Reason> {
        let mut seen = HashMap::new();
        for (id, reason) in self.0.lock().unwrap().iter() {
            if let Some(first) = seen.insert(id.to_string(), *reason) {
                panic!("a session was closed twice: {first} then {reason}");
            }
        }
        seen
    }
}

/// A server running the example's router on 127.0.0.1:0.
pub struct Server {
    pub url: String,
    pub manager: Arc<RegistrySessionManager>,
    pub closes: Arc<Closes>,
    /// rmcp's cancellation token (StreamableHttpServerConfig).
    pub rmcp_token: CancellationToken,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Server {
    /// The example's server with the manager `configure` makes of the
    /// default builder (a close hook is added to record closes).
    pub async fn start(configure: impl FnOnce(Builder) -> Builder) -> Server {
        Server::start_with_token(CancellationToken::new(), configure).await
    }

    /// [`start`](Server::start), with `rmcp_token` as rmcp's cancellation
    /// token.
    pub async fn start_with_token(
        rmcp_token: CancellationToken,
        configure: impl FnOnce(Builder) -> Builder,
    ) -> Server {
        let config = StreamableHttpServerConfig::default();
        Server::start_full("127.0.0.1:0", rmcp_token, config, configure).await
    }

    /// [`start`](Server::start) with rmcp's server configuration given (a
    /// `session_store`, say), bound to `bind` (`127.0.0.1:0`, or the
    /// address a stopped server had, to play its restart).
    pub async fn start_configured(
        bind: &str,
        config: StreamableHttpServerConfig,
        configure: impl FnOnce(Builder) -> Builder,
    ) -> Server {
        Server::start_full(bind, CancellationToken::new(), config, configure).await
    }

    async fn start_full(
        bind: &str,
        rmcp_token: CancellationToken,
        config: StreamableHttpServerConfig,
        configure: impl FnOnce(Builder) -> Builder,
    ) -> Server {
        let closes = Arc::new(Closes::default());
        let log = closes.clone();
        let manager = Arc::new(
            configure(RegistrySessionManager::builder())
                .on_close(move |id, reason| log.0.lock().unwrap().push((*id, reason)))
                .build()
                .expect("a valid configuration"),
        );
        let metrics = {
            let manager = manager.clone();
            move || manager.metrics()
        };
        let config = config.with_cancellation_token(rmcp_token.clone());
        let router = app::router_with(manager.clone(), config, metrics);
        let (url, stop, task) = serve_on(bind, router).await;
        Server {
            url,
            manager,
            closes,
            rmcp_token,
            stop,
            task: Some(task),
        }
    }

    /// Stops serving and waits for the server task (connections close).
    pub async fn stop(mut self) {
        self.rmcp_token.cancel();
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
        }
    }

    pub fn live(&self) -> u64 {
        self.manager.stats().live
    }

    /// `host:port`.
    pub fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string()
    }

    pub fn client(&self) -> Client {
        client(&self.url)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.rmcp_token.cancel();
        self.stop.cancel();
    }
}

/// The same example server with rmcp's `LocalSessionManager`, its
/// `keep_alive` set to `keep_alive`: the baseline some tests compare with.
pub struct LocalServer {
    pub url: String,
    pub manager: Arc<LocalSessionManager>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl LocalServer {
    pub async fn start(keep_alive: Duration) -> LocalServer {
        let mut manager = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        config.keep_alive = Some(keep_alive);
        manager.session_config = config;
        let manager = Arc::new(manager);
        let token = CancellationToken::new();
        let router = app::router(manager.clone(), token.clone(), String::new);
        let (url, stop, task) = serve(router).await;
        LocalServer {
            url,
            manager,
            stop,
            task,
        }
    }

    pub async fn live(&self) -> usize {
        self.manager.sessions.read().await.len()
    }

    pub fn client(&self) -> Client {
        client(&self.url)
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.stop.cancel();
        self.task.abort();
    }
}

/// Serves `router` on 127.0.0.1:0 as the examples serve theirs.
pub async fn serve(router: axum::Router) -> (String, CancellationToken, JoinHandle<()>) {
    serve_on("127.0.0.1:0", router).await
}

/// [`serve`] on `bind`.
pub async fn serve_on(
    bind: &str,
    router: axum::Router,
) -> (String, CancellationToken, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .unwrap_or_else(|e| panic!("bind {bind}: {e}"));
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let stopped = stop.clone().cancelled_owned();
    let task = tokio::spawn(async move {
        let _ = listen::serve(listener, router, stopped).await;
    });
    (url, stop, task)
}

/// The protocol version these tests speak (rmcp 3.11 negotiates it).
pub const PROTOCOL_VERSION: &str = "2025-06-18";

/// An `initialize` from a client named `name`, at [`PROTOCOL_VERSION`].
pub fn initialize_body(name: &str) -> Value {
    mcp_test_client::initialize_at(name, PROTOCOL_VERSION)
}

/// The workspace's MCP client of `url`, at [`PROTOCOL_VERSION`] (sent in
/// `MCP-Protocol-Version` on every request in a session, as rmcp's own
/// client does).
pub fn client(url: &str) -> Client {
    Client::new(url)
        .named("raw")
        .with_protocol_version(PROTOCOL_VERSION)
}

/// The text of a `tools/call` answer's first content item.
pub fn text_of(answer: &Value) -> Option<&str> {
    mcp_test_client::result_text(answer.get("result")?)
}

//! Shared by this crate's tests: the example's server (its own `app.rs`) on
//! 127.0.0.1:0, started and stopped by each test, and a raw HTTP client.
#![allow(dead_code)]

#[path = "../../examples/rmcp_server/app.rs"]
pub mod app;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use serde_json::{json, Value};
use sessionreg::{Reason, SessionId};
use sessionreg_rmcp::{Builder, RegistrySessionManager};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

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
        let router = app::router(manager.clone(), rmcp_token.clone(), metrics);
        let (url, stop, task) = serve(router).await;
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

    pub fn client(&self) -> Client {
        Client::new(&self.url)
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
        Client::new(&self.url)
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.stop.cancel();
        self.task.abort();
    }
}

async fn serve(router: axum::Router) -> (String, CancellationToken, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let stopped = stop.clone().cancelled_owned();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(stopped)
            .await;
    });
    (url, stop, task)
}

/// Waits up to a generous bound for `cond`; the bound is a safety net, not
/// the assertion.
pub async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A response, body read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn session_id(&self) -> Option<String> {
        self.headers
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_string())
    }

    /// The JSON-RPC messages in the body: the body itself if it is JSON,
    /// else every `data:` line of the SSE stream that holds one.
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    }

    /// The one message with a `result` or an `error`.
    pub fn answer(&self) -> Option<Value> {
        self.messages()
            .into_iter()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
    }
}

pub fn initialize_body(name: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": name, "version": "0" },
        },
    })
}

/// A raw HTTP/1.1 client speaking MCP to one endpoint.
#[derive(Clone)]
pub struct Client {
    http: HyperClient<HttpConnector, Full<Bytes>>,
    pub url: String,
}

impl Client {
    pub fn new(url: &str) -> Client {
        Client {
            http: HyperClient::builder(TokioExecutor::new()).build_http(),
            url: url.to_string(),
        }
    }

    pub fn request(&self, method: Method) -> http::request::Builder {
        Request::builder().method(method).uri(&self.url)
    }

    pub async fn send(&self, request: Request<Full<Bytes>>) -> Reply {
        let response = self.http.request(request).await.expect("the request");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("the body").to_bytes();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    /// A JSON-RPC POST, with the session id if given.
    pub async fn post(&self, session: Option<&str>, body: Value) -> Reply {
        let mut request = self
            .request(Method::POST)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH);
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        self.send(request.body(Full::new(body.to_string().into())).unwrap())
            .await
    }

    /// `initialize`, then `notifications/initialized`; the session id.
    pub async fn open(&self) -> String {
        let init = self.post(None, initialize_body("raw")).await;
        assert_eq!(init.status, StatusCode::OK, "initialize: {init:?}");
        let id = init.session_id().expect("an Mcp-Session-Id");
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let ack = self.post(Some(&id), note).await;
        assert_eq!(ack.status, StatusCode::ACCEPTED, "initialized: {ack:?}");
        id
    }

    pub async fn call(&self, id: &str, tool: &str, arguments: Value) -> Reply {
        let body = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": { "name": tool, "arguments": arguments } });
        self.post(Some(id), body).await
    }

    pub async fn delete(&self, id: &str) -> Reply {
        let request = self
            .request(Method::DELETE)
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18")
            .body(Full::default())
            .unwrap();
        self.send(request).await
    }

    /// Opens the session's standalone SSE stream (GET) and hands back the
    /// response with its body unread: the stream stays open until dropped.
    pub async fn open_stream(&self, id: &str) -> http::Response<hyper::body::Incoming> {
        let request = self
            .request(Method::GET)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18")
            .body(Full::default())
            .unwrap();
        self.http.request(request).await.expect("the GET")
    }

    /// `GET /metrics` as a map of sample name (labels included) to value.
    pub async fn metrics(&self) -> HashMap<String, f64> {
        let url = self.url.replace("/mcp", "/metrics");
        let request = Request::get(url).body(Full::default()).unwrap();
        let reply = self.send(request).await;
        assert_eq!(reply.status, StatusCode::OK);
        reply
            .body
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.rsplit_once(' '))
            .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
            .collect()
    }
}

/// The text of a `tools/call` result's first content item.
pub fn text_of(answer: &Value) -> Option<&str> {
    answer.pointer("/result/content/0/text")?.as_str()
}

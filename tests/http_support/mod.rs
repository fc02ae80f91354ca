//! Shared by the `tests/http_*.rs` files: a test application, and a server
//! on 127.0.0.1:0 started by the test itself. The client is the workspace's
//! one (`mcp-test-client`), re-exported here with its helpers under the
//! names these tests use.
#![allow(dead_code)]

use bytes::Bytes;
use futures_util::{stream, StreamExt};
use http::{Method, StatusCode};
use http_body_util::Full;
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, Message, RpcError};
use sessionreg::http::{
    self as mcp, App, Connections, Context, HandlerError, ListenFilter, Reply, SessionManager,
};
use sessionreg::{Reason, SessionId};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The client and its helpers; `Answer` is a response read whole. (Each
/// test file uses some of them: the others are not unused.)
#[allow(unused_imports)]
pub use mcp_test_client::{
    eventually, id_parts, initialize_body, read_sse, sse_events, sse_ids, with_meta, Client,
    Reply as Answer, ACCEPT_BOTH,
};

/// Records every close callback, so tests can check "exactly once".
#[derive(Default)]
pub struct Closes {
    pub log: Mutex<Vec<(SessionId, Reason)>>,
}

impl Closes {
    pub fn count(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    pub fn count_reason(&self, reason: Reason) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, r)| *r == reason)
            .count()
    }

    /// Panics if any session was closed twice.
    pub fn assert_each_once(&self) {
        let log = self.log.lock().unwrap();
        let mut seen = HashMap::new();
        for (id, reason) in log.iter() {
            if let Some(first) = seen.insert(*id, *reason) {
                panic!("session {id} closed twice: {first} then {reason}");
            }
        }
    }
}

/// Counts the handlers of the `hang` and `stream_forever` tools that started
/// and that were dropped (cancelled) before finishing.
#[derive(Default)]
pub struct Probes {
    pub started: AtomicUsize,
    pub dropped: AtomicUsize,
    /// Work a `hand_off` call handed elsewhere that saw its token cancelled.
    pub handed_off_cancelled: AtomicUsize,
}

/// Counts a drop into `Probes::dropped`.
struct DropProbe(Arc<Probes>);

impl Drop for DropProbe {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// Holds `gate` tool calls until the test opens it.
pub struct Gate {
    open: tokio::sync::Semaphore,
    /// Calls waiting at the gate now.
    pub waiting: AtomicUsize,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            open: tokio::sync::Semaphore::new(0),
            waiting: AtomicUsize::new(0),
        }
    }
}

impl Gate {
    /// Lets every call through, now and later.
    pub fn open(&self) {
        self.open
            .add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    async fn pass(&self) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _ = self.open.acquire().await.map(|p| p.forget());
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The test application: tools that sleep, wait at a gate, fail, panic,
/// stream, notify.
pub struct TestApp {
    pub closes: Arc<Closes>,
    pub probes: Arc<Probes>,
    pub gate: Arc<Gate>,
}

impl App for TestApp {
    type Session = String;

    fn open(
        &self,
        initialize: &jsonrpc::Request,
        request: &http::request::Parts,
    ) -> Result<String, RpcError> {
        let params = initialize.params_value().unwrap_or(Value::Null);
        let name = params
            .pointer("/clientInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("client")
            .to_string();
        if name == "refuse-open" {
            return Err(RpcError::new(-32000, "refused"));
        }
        // What `open` saw of the request: its principal, if any.
        Ok(match mcp::Principal::of(request) {
            Some(principal) => format!("{name}@{principal}"),
            None => name,
        })
    }

    /// Principal `narrow` may hear only the tools list and URIs under
    /// `narrow://`; principal `deaf` may not listen at all; everyone else
    /// hears all the layer honours.
    fn listen_filter(
        &self,
        mut filter: ListenFilter,
        request: &http::request::Parts,
    ) -> Option<ListenFilter> {
        match mcp::Principal::of(request).map(mcp::Principal::as_str) {
            Some("narrow") => {
                filter.drop_prompts_list_changed();
                filter.drop_resources_list_changed();
                filter.retain_resource_uris(|uri| uri.starts_with("narrow://"));
                Some(filter)
            }
            Some("deaf") => None,
            _ => Some(filter),
        }
    }

    async fn handle(&self, ctx: Context<String>, message: Message) -> Result<Reply, HandlerError> {
        let request = match message {
            Message::Request(request) => request,
            _ => return Ok(Reply::Accepted),
        };
        // Params are parsed only by the methods that read them: `ping`
        // with a 4 MiB body costs the body, not a Value tree of it.
        if request.method == "ping" {
            return Ok(Reply::Result(json!({})));
        }
        let params = match request.params_value() {
            Ok(params) => params,
            Err(error) => return Ok(Reply::Error(error)),
        };
        match request.method.as_str() {
            "initialize" => {
                if ctx.state().map(String::as_str) == Some("reject-initialize") {
                    return Ok(Reply::Error(RpcError::invalid_params("rejected")));
                }
                if ctx.state().map(String::as_str) == Some("panic-initialize") {
                    panic!("initialize panicked on purpose");
                }
                if ctx.state().map(String::as_str) == Some("hang-initialize") {
                    self.probes.started.fetch_add(1, Ordering::SeqCst);
                    let _probe = DropProbe(Arc::clone(&self.probes));
                    std::future::pending::<()>().await;
                }
                Ok(Reply::Result(json!({
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "test", "version": "0" },
                })))
            }
            // A few of the tools, by name (what a listing filter reads).
            "tools/list" => Ok(Reply::Result(json!({
                "tools": [{ "name": "echo" }, { "name": "whoami" }, { "name": "sleep" }],
            }))),
            "tools/call" => {
                let args = params.get("arguments").cloned().unwrap_or(Value::Null);
                match params.get("name").and_then(Value::as_str) {
                    Some("echo") => Ok(Reply::Result(json!({ "echo": args }))),
                    Some("sleep") => {
                        let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        Ok(Reply::Result(json!({ "slept": ms })))
                    }
                    Some("gate") => {
                        self.gate.pass().await;
                        Ok(Reply::Result(json!({ "passed": true })))
                    }
                    Some("fail") => Err(HandlerError::msg("failed on purpose")),
                    // A tool that ran and failed: a result, with isError.
                    Some("tool_error") => Ok(Reply::Result(json!({
                        "content": [{ "type": "text", "text": "it failed" }],
                        "isError": true,
                    }))),
                    // The same, serialized by the handler (no tree).
                    Some("tool_text") => Ok(Reply::tool_text("a \"quoted\" line\n")),
                    // Opens a span of its own, `handler.work` with field
                    // `label` (its argument), on a later poll than the
                    // first (tests/http_observe.rs: it must be a child of
                    // the request's span).
                    Some("traced") => {
                        let label = args.get("label").and_then(Value::as_str).unwrap_or("");
                        tokio::task::yield_now().await;
                        tracing::info_span!("handler.work", label).in_scope(|| {});
                        Ok(Reply::tool_text("traced"))
                    }
                    Some("tool_error_text") => Ok(Reply::tool_error_text("no such basket")),
                    Some("tool_error_serialized") => Ok(Reply::serialized(&json!({
                        "content": [{ "type": "text", "text": "it failed" }],
                        "isError": true,
                        "_meta": { "mine": 1 },
                    }))),
                    Some("whoami") => Ok(Reply::Result(json!({
                        "state": ctx.state(),
                        "principal": ctx.principal().map(|p| p.as_str()),
                        "scopes": ctx.scopes().map(|s| s.as_str()),
                        "tag": ctx.request().headers.get("x-tag").and_then(|v| v.to_str().ok()),
                    }))),
                    Some("hang") => {
                        self.probes.started.fetch_add(1, Ordering::SeqCst);
                        let _probe = DropProbe(Arc::clone(&self.probes));
                        std::future::pending::<()>().await;
                        unreachable!()
                    }
                    Some("slow_stream") => {
                        // `n` progress notifications `ms` apart, then the
                        // response; with `close`, the connection is closed
                        // first (SSE polling).
                        let n = args.get("n").and_then(Value::as_u64).unwrap_or(3);
                        let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(20);
                        let close = args.get("close").and_then(Value::as_bool).unwrap_or(false);
                        let id = request.id.clone();
                        let closed = close && ctx.legacy().is_some_and(|l| l.close_sse_stream());
                        let progress = stream::iter(0..n).then(move |i| async move {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            jsonrpc::notification_message(
                                "notifications/progress",
                                json!({ "progress": i }),
                            )
                        });
                        let done = stream::once(async move {
                            jsonrpc::result_message(&id, json!({ "closed": closed }))
                        });
                        Ok(Reply::Stream(Box::pin(progress.chain(done))))
                    }
                    Some("hand_off") => {
                        // Hands the request's token to work of its own,
                        // then waits for nothing (as `hang`).
                        self.probes.started.fetch_add(1, Ordering::SeqCst);
                        let token = ctx.cancellation();
                        let probes = Arc::clone(&self.probes);
                        tokio::spawn(async move {
                            token.cancelled().await;
                            probes.handed_off_cancelled.fetch_add(1, Ordering::SeqCst);
                        });
                        std::future::pending::<()>().await;
                        unreachable!()
                    }
                    Some("stream_forever") => {
                        self.probes.started.fetch_add(1, Ordering::SeqCst);
                        let probe = DropProbe(Arc::clone(&self.probes));
                        let first = jsonrpc::notification_message(
                            "notifications/progress",
                            json!({ "progress": 1 }),
                        );
                        let stream = stream::once(async move { first })
                            .chain(stream::pending())
                            .map(move |m| {
                                let _ = &probe;
                                m
                            });
                        Ok(Reply::Stream(Box::pin(stream)))
                    }
                    Some("close_then_json") => {
                        // Asks for SSE polling, then answers with plain JSON.
                        let closed = ctx.legacy().is_some_and(|l| l.close_sse_stream());
                        Ok(Reply::Result(json!({ "closed": closed })))
                    }
                    Some("stream_pad") => {
                        // `n` notifications padded with `bytes` bytes, then
                        // the response, as an SSE reply.
                        let n = args.get("n").and_then(Value::as_u64).unwrap_or(1);
                        let bytes = args.get("bytes").and_then(Value::as_u64).unwrap_or(0);
                        let pad = "x".repeat(bytes as usize);
                        let id = request.id.clone();
                        let mut messages: Vec<Value> = (0..n)
                            .map(|i| {
                                jsonrpc::notification_message(
                                    "notifications/message",
                                    json!({ "i": i, "pad": pad }),
                                )
                            })
                            .collect();
                        messages.push(jsonrpc::result_message(&id, json!({ "padded": n })));
                        Ok(Reply::Stream(Box::pin(stream::iter(messages))))
                    }
                    Some("panic") => panic!("handler panicked on purpose"),
                    Some("notify") => {
                        let n = args.get("n").and_then(Value::as_u64).unwrap_or(1);
                        let pad = args.get("bytes").and_then(Value::as_u64).unwrap_or(0);
                        let pad = "x".repeat(pad as usize);
                        let mut delivered = 0;
                        for i in 0..n {
                            let note = jsonrpc::notification_message(
                                "notifications/message",
                                json!({ "i": i, "pad": pad }),
                            );
                            delivered += u64::from(ctx.legacy().is_some_and(|l| l.notify(&note)));
                        }
                        Ok(Reply::Result(json!({ "delivered": delivered })))
                    }
                    Some("stream") => {
                        let id = request.id.clone();
                        let messages = vec![
                            jsonrpc::notification_message(
                                "notifications/progress",
                                json!({ "progress": 1 }),
                            ),
                            jsonrpc::notification_message(
                                "notifications/progress",
                                json!({ "progress": 2 }),
                            ),
                            jsonrpc::result_message(&id, json!({ "streamed": true })),
                        ];
                        Ok(Reply::Stream(Box::pin(stream::iter(messages))))
                    }
                    // A task where the manager has tasks and the client
                    // declared them; else answered inline.
                    Some("task_echo") => Ok(Reply::Task(mcp::TaskWork::new(|_| async move {
                        Ok(json!({ "content": [{ "type": "text", "text": "done" }] }))
                    }))),
                    // 2026-07-28: asks for `ok` (input_required, with a
                    // sealed state); answered, says so.
                    Some("ask") => Ok(match ctx.modern() {
                        Some(modern) if modern.request_state().is_some() => {
                            Reply::Result(json!({ "answered": true }))
                        }
                        Some(modern) => {
                            let asked = sessionreg::http::modern::InputRequests::new()
                                .elicit("ok", "Sure?", json!({ "type": "object" }))
                                .request_state(b"asked".to_vec());
                            match modern.input_required(asked) {
                                Ok(asked) => Reply::InputRequired(asked),
                                Err(error) => Reply::Error(error),
                            }
                        }
                        None => Reply::Error(RpcError::invalid_params("2026-07-28 only")),
                    }),
                    _ => Ok(Reply::Error(RpcError::invalid_params("unknown tool"))),
                }
            }
            other => Ok(Reply::Error(RpcError::method_not_found(other))),
        }
    }

    fn closed(&self, id: &SessionId, _session: &String, reason: Reason) {
        self.closes.log.lock().unwrap().push((*id, reason));
    }
}

pub type Builder = sessionreg::http::Builder<TestApp>;

/// A server on 127.0.0.1:0, served by `sessionreg::http::serve`.
pub struct Server {
    pub addr: SocketAddr,
    pub url: String,
    pub manager: SessionManager<TestApp>,
    pub closes: Arc<Closes>,
    pub probes: Arc<Probes>,
    pub gate: Arc<Gate>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<mcp::ShutdownReport>>>,
}

impl Server {
    pub async fn start() -> Server {
        Server::start_with(|b| b).await
    }

    pub async fn start_with(configure: impl FnOnce(Builder) -> Builder) -> Server {
        Server::start_full(configure, Duration::from_secs(10)).await
    }

    /// With `deadline` for in-flight requests at shutdown.
    pub async fn start_full(
        configure: impl FnOnce(Builder) -> Builder,
        deadline: Duration,
    ) -> Server {
        Server::start_on("127.0.0.1:0", configure, Connections::default(), deadline).await
    }

    /// With these connection bounds (which `serve_with` applies).
    pub async fn start_connections(
        configure: impl FnOnce(Builder) -> Builder,
        connections: Connections,
    ) -> Server {
        Server::start_on(
            "127.0.0.1:0",
            configure,
            connections,
            Duration::from_secs(10),
        )
        .await
    }

    /// A client of this server on a pool of its own that retires idle
    /// connections after [`POOL_IDLE`], before a server with
    /// [`short_connections`] closes them.
    pub fn client(&self) -> Client {
        let pool = mcp_test_client::http_builder()
            .pool_idle_timeout(POOL_IDLE)
            .build_http();
        Client::with_http(pool, &self.url)
    }

    /// With the short bounds of [`short_bounds`] and
    /// [`short_connections`], then `configure`.
    pub async fn start_short(configure: impl FnOnce(Builder) -> Builder) -> Server {
        Server::start_connections(|b| configure(short_bounds(b)), short_connections()).await
    }

    /// Bound to `bind` (e.g. `0.0.0.0:0`, as in a container); the client
    /// URL is on loopback, at the bound port.
    pub async fn start_on(
        bind: &str,
        configure: impl FnOnce(Builder) -> Builder,
        connections: Connections,
        deadline: Duration,
    ) -> Server {
        let (manager, closes, probes, gate) = gated_manager(configure);
        let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
        let bound = listener.local_addr().unwrap();
        let addr = SocketAddr::from(([127, 0, 0, 1], bound.port()));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(mcp::serve_with(
            listener,
            manager.clone(),
            manager.clone(),
            async move {
                let _ = stopped.await;
            },
            deadline,
            connections,
        ));
        Server {
            addr,
            url: format!("http://{addr}/mcp"),
            manager,
            closes,
            probes,
            gate,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn live(&self) -> u64 {
        self.manager.stats().live
    }

    pub fn created(&self) -> u64 {
        self.manager.stats().created
    }

    /// The HTTP layer's counters.
    pub fn http(&self) -> mcp::HttpStats {
        self.manager.http_stats()
    }

    /// Shuts the server down gracefully and returns its report.
    pub async fn shutdown(&mut self) -> mcp::ShutdownReport {
        let _ = self.stop.take().unwrap().send(());
        self.task.take().unwrap().await.unwrap().unwrap()
    }
}

/// Serves `manager` (of any application) on 127.0.0.1:0 for the rest of
/// the test; returns its `/mcp` URL.
pub async fn serve_manager<A: App>(manager: &SessionManager<A>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcp::serve(
        listener,
        manager.clone(),
        manager.clone(),
        std::future::pending::<()>(),
        Duration::from_secs(1),
    ));
    url
}

/// A manager for the test application, not served.
pub fn test_manager(
    configure: impl FnOnce(Builder) -> Builder,
) -> (SessionManager<TestApp>, Arc<Closes>, Arc<Probes>) {
    let (manager, closes, probes, _) = gated_manager(configure);
    (manager, closes, probes)
}

/// [`test_manager`], with the gate of its `gate` tool.
pub fn gated_manager(
    configure: impl FnOnce(Builder) -> Builder,
) -> (SessionManager<TestApp>, Arc<Closes>, Arc<Probes>, Arc<Gate>) {
    let closes = Arc::new(Closes::default());
    let probes = Arc::new(Probes::default());
    let gate = Arc::new(Gate::default());
    let app = TestApp {
        closes: Arc::clone(&closes),
        probes: Arc::clone(&probes),
        gate: Arc::clone(&gate),
    };
    let manager = configure(SessionManager::builder(app))
        .build()
        .expect("valid config");
    (manager, closes, probes, gate)
}

/// A POST to the endpoint with the given headers and raw body.
pub async fn post_raw(client: &Client, headers: &[(&str, &str)], body: impl Into<Bytes>) -> Answer {
    let mut request = client.request(Method::POST);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    client
        .send(request.body(Full::new(body.into())).unwrap())
        .await
}

pub const JSON_BOTH: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", ACCEPT_BOTH),
];

pub fn init_text() -> String {
    initialize_body("client").to_string()
}

/// A first request that is refused: `status`, no id echoed, nothing created.
pub async fn assert_refused_initialize(server: &Server, answer: &Answer, status: StatusCode) {
    assert_eq!(answer.status, status, "body: {:?}", answer.body);
    assert!(
        answer.session_id().is_none(),
        "a refused first request echoes no id"
    );
    assert_eq!(
        server.created(),
        0,
        "a refused first request creates nothing"
    );
    assert_eq!(server.live(), 0);
}

/// An initialize with the JSON headers and `headers`.
pub async fn with_headers(client: &Client, headers: &[(&str, &str)]) -> Answer {
    let mut all = JSON_BOTH.to_vec();
    all.extend_from_slice(headers);
    post_raw(client, &all, init_text()).await
}

/// The bounds tests shorten: long enough for a loaded 2-core machine to
/// serve a well-behaved request well within them, short enough to keep
/// each test to seconds.
pub const SHORT: Duration = Duration::from_millis(400);

/// Short bounds of the manager (a body's read, a stalled write). Sessions
/// keep the default (no idle timeout): a test's own session must not
/// expire between its requests on a loaded machine; the tests that need
/// sessions reaped ask for it.
pub fn short_bounds(b: Builder) -> Builder {
    b.body_read_timeout(Some(SHORT)).stall_timeout(Some(SHORT))
}

/// Short connection bounds (a request's headers, an idle connection).
pub fn short_connections() -> Connections {
    Connections::default()
        .header_read_timeout(Some(SHORT))
        .idle_timeout(Some(SHORT))
}

/// How long [`Server::client`] keeps an idle connection pooled: well under
/// [`SHORT`], the keep-alive bound of a server with [`short_connections`].
/// HTTP/1.1 leaves a race to the client: a request sent on a kept-alive
/// connection just as the server closes it for idleness gets no response
/// (RFC 9112 §9.3.1). A client configured for its server retires idle
/// connections first; hyper-util's pool, by default, keeps them 90 s.
pub const POOL_IDLE: Duration = Duration::from_millis(100);

/// A well-behaved client's whole session, from a fresh client: initialize,
/// initialized, a tool call, DELETE.
pub async fn served(server: &Server) {
    let client = server.client();
    let id = client.initialize().await;
    assert_eq!(client.initialized(&id).await.status, StatusCode::ACCEPTED);
    let echo = client.call(&id, "echo", json!({ "text": "hi" })).await;
    assert_eq!(echo.status, StatusCode::OK);
    assert_eq!(echo.json()["result"]["echo"]["text"], "hi");
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
}

/// No 500, no handler failure or panic, every close once; then, with the
/// hostile clients gone, no live session, stream, handler or connection.
pub async fn assert_clean(server: &Server) {
    let http = server.http();
    assert_eq!(http.responses(500), 0, "{http:?}");
    assert_eq!(server.closes.count_reason(Reason::Failed), 0);
    server.closes.assert_each_once();
    assert!(
        eventually(|| server.live() == 0).await,
        "live sessions: {}",
        server.live()
    );
    assert!(
        eventually(|| {
            let http = server.http();
            http.connections_open == 0 && http.streams_open == 0 && http.handlers_in_flight == 0
        })
        .await,
        "{:?}",
        server.http()
    );
}

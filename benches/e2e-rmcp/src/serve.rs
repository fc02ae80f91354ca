//! What the servers share: flags, logger, the accept loop, and `GET
//! /metrics` (the manager's text, if any, plus `tokio_tasks_alive`, the
//! runtime's live task count, so the bench can count tasks per session).
// Each binary uses a part (rmcp_tasks_server has a handler of its own).
#![allow(dead_code)]

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tower_service::Service;

/// A server with three tools, `echo`, `sleep` (`{"ms": N}`) and `running`
/// (how many `sleep` calls are running now), as examples/mcp_server has
/// (`benches/hostile.py` calls them); the churn benchmark sends only
/// `initialize`, `notifications/initialized` and `DELETE`.
#[derive(Clone)]
pub struct Empty;

impl ServerHandler for Empty {
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let text = match &*request.name {
            "echo" => args
                .get("text")
                .and_then(|t| t.as_str())
                .unwrap_or("")
                .to_string(),
            "sleep" => {
                let ms = args.get("ms").and_then(|m| m.as_u64()).unwrap_or(0);
                let _running = Sleeping::start();
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                format!("slept {ms} ms")
            }
            "running" => SLEEPING.load(Ordering::Relaxed).to_string(),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool: {other}"),
                    None,
                ))
            }
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// How many `sleep` calls are running in this process, for the `running`
/// tool: whether rmcp still runs a call whose session has ended, seen from
/// outside (`benches/hostile.py`, `deleted-calls`).
static SLEEPING: AtomicUsize = AtomicUsize::new(0);

/// One running `sleep` call in [`SLEEPING`], from its start until its
/// future ends: it returns, or it is dropped (cancelled).
struct Sleeping;

impl Sleeping {
    fn start() -> Sleeping {
        // Relaxed: a count read on its own, ordering nothing else.
        SLEEPING.fetch_add(1, Ordering::Relaxed);
        Sleeping
    }
}

impl Drop for Sleeping {
    fn drop(&mut self) {
        SLEEPING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The flags of examples/mcp_server, and one of rmcp's own.
pub struct Flags {
    pub addr: String,
    pub max_sessions: Option<usize>,
    pub idle_timeout_ms: Option<u64>,
    /// `--json-response`: rmcp's `json_response` (off by default, as in
    /// rmcp's default config): a request whose handler sends nothing
    /// before its result is answered `application/json` instead of SSE.
    /// Only requests served without a session take it (rmcp's legacy
    /// sessions always answer SSE), so it matters for 2026-07-28 requests
    /// (`benches/e2e --modern`).
    pub json_response: bool,
}

/// How the names of examples/mcp_server's bound flags end
/// (`--header-read-timeout-ms`, `--max-connections`, `--stream-queue-bytes`,
/// ...).
const BOUND_FLAG_ENDINGS: [&str; 7] = [
    "-ms",
    "-bytes",
    "-connections",
    "-streams",
    "-session",
    "-handlers",
    "-messages",
];

pub fn flags() -> Flags {
    flags_from(std::env::args().skip(1))
}

/// [`flags`] from `args` (the program's name not among them).
pub fn flags_from(args: impl IntoIterator<Item = String>) -> Flags {
    let mut flags = Flags {
        addr: "127.0.0.1:8080".into(),
        max_sessions: None,
        idle_timeout_ms: None,
        json_response: false,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--addr" => flags.addr = value(),
            "--max-sessions" => {
                flags.max_sessions = Some(value().parse().expect("--max-sessions N"))
            }
            "--idle-timeout-ms" => {
                flags.idle_timeout_ms = Some(value().parse().expect("--idle-timeout-ms MS"))
            }
            "--json-response" => flags.json_response = true,
            // examples/mcp_server's bound flags, which benches/hostile.py
            // passes to every server alike: rmcp has no counterpart.
            flag if flag.starts_with("--")
                && BOUND_FLAG_ENDINGS.iter().any(|e| flag.ends_with(e)) =>
            {
                let _ = value();
            }
            other => panic!("unknown argument {other}"),
        }
    }
    flags
}

/// Serves rmcp's streamable-HTTP service with `manager` on `flags.addr`
/// (rmcp's default config, but for `flags.json_response`), forever.
pub async fn serve<M: SessionManager>(
    flags: &Flags,
    manager: Arc<M>,
    metrics: impl Fn() -> String + Send + Sync + 'static,
) -> std::io::Result<()> {
    serve_with(flags, manager, || Ok(Empty), metrics).await
}

/// [`serve`] with the handler `handler` makes (one per rmcp session or
/// stateless request).
pub async fn serve_with<M: SessionManager, H: ServerHandler>(
    flags: &Flags,
    manager: Arc<M>,
    handler: impl Fn() -> Result<H, std::io::Error> + Send + Sync + 'static,
    metrics: impl Fn() -> String + Send + Sync + 'static,
) -> std::io::Result<()> {
    logs();
    let mut config = StreamableHttpServerConfig::default();
    config.json_response = flags.json_response;
    let service = StreamableHttpService::new(handler, manager, config);
    accept_forever(&flags.addr, service, metrics).await
}

/// Logs to stderr as examples/mcp_server sets them up (the bench passes
/// `RUST_LOG`).
pub fn logs() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
}

/// Serves `service` on `addr` (TCP_NODELAY, HTTP/1 and 2), with `GET
/// /metrics` answered by `metrics()` and `tokio_tasks_alive`, forever;
/// prints the URL once listening. The two bodies are told apart by an
/// `Either`, not boxed: a response costs what the service's does.
pub async fn accept_forever<S, B>(
    addr: &str,
    service: S,
    metrics: impl Fn() -> String + Send + Sync + 'static,
) -> std::io::Result<()>
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let metrics = Arc::new(metrics);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on http://{}/mcp", listener.local_addr()?)?;
    stdout.flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let (service, metrics) = (service.clone(), metrics.clone());
        let route = hyper::service::service_fn(move |request: Request<Incoming>| {
            let mut service = service.clone();
            let metrics = metrics.clone();
            async move {
                if request.uri().path() == "/metrics" {
                    let tasks = tokio::runtime::Handle::current()
                        .metrics()
                        .num_alive_tasks();
                    let text = format!("{}tokio_tasks_alive {tasks}\n", metrics());
                    return Ok(Response::new(Either::Right(Full::new(Bytes::from(text)))));
                }
                Ok::<_, S::Error>(service.call(request).await?.map(Either::Left))
            }
        });
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), route)
                .await;
        });
    }
}

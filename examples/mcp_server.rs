//! A small, real MCP server on the session layer (streamable HTTP).
//!
//! ```text
//! cargo run --release --example mcp_server -- --addr 127.0.0.1:8080
//! ```
//!
//! It answers `initialize`, `ping`, `tools/list` and `tools/call` (tools
//! `echo` and `sleep`), accepts `notifications/initialized`, serves
//! `GET /metrics` in Prometheus text, and shuts down gracefully on Ctrl-C or
//! SIGTERM. Its first line on stdout is `listening on http://ADDR/mcp`.

use clap::Parser;
use http::{Response, StatusCode};
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{Message, Request, RpcError};
use sessionreg::http::{self as mcp, App, Context, HandlerError, Reply, SessionManager};
use sessionreg::{Reason, SessionId};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(about = "An MCP server (streamable HTTP) on sessionreg")]
struct Args {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Sessions idle this long are ended.
    #[arg(long, default_value_t = 1_800_000)]
    idle_timeout_ms: u64,
    /// Maximum live sessions; more get 503.
    #[arg(long, default_value_t = 10_000)]
    max_sessions: usize,
    /// An Origin allowed besides loopback ones (repeatable).
    #[arg(long = "allowed-origin")]
    allowed_origins: Vec<String>,
    /// How long shutdown waits for requests in flight, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    shutdown_deadline_ms: u64,
}

/// The application: stateless tools, a little per-session state.
struct Server;

/// What the server remembers about a session.
struct Client {
    name: String,
    initialized: AtomicBool,
}

impl App for Server {
    type Session = Client;

    fn open(
        &self,
        initialize: &Request,
        _request: &http::request::Parts,
    ) -> Result<Client, RpcError> {
        // The manager has checked the request's shape (params.protocolVersion).
        let params = initialize.params.as_ref();
        let name = params
            .and_then(|p| p.pointer("/clientInfo/name"))
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        Ok(Client {
            name,
            initialized: AtomicBool::new(false),
        })
    }

    async fn handle(&self, ctx: Context<Client>, message: Message) -> Result<Reply, HandlerError> {
        match message {
            Message::Request(request) => Ok(answer(&ctx, request).await),
            Message::Notification(note) => {
                if note.method == "notifications/initialized" {
                    if let Some(client) = ctx.state() {
                        client.initialized.store(true, Ordering::Relaxed);
                    }
                }
                Ok(Reply::Accepted)
            }
            Message::Response(_) => Ok(Reply::Accepted),
        }
    }

    fn closed(&self, id: &SessionId, client: &Client, reason: Reason) {
        tracing::debug!(session = %id, client = %client.name, %reason, "client gone");
    }
}

async fn answer(ctx: &Context<Client>, request: Request) -> Reply {
    let params = request.params.unwrap_or(Value::Null);
    match request.method.as_str() {
        "initialize" => {
            let requested = params.get("protocolVersion").and_then(Value::as_str);
            Reply::Result(json!({
                "protocolVersion": mcp::rules::negotiate(requested),
                "capabilities": { "tools": { "listChanged": false } },
                "serverInfo": { "name": "sessionreg-example", "version": env!("CARGO_PKG_VERSION") },
            }))
        }
        "ping" => Reply::Result(json!({})),
        "tools/list" => Reply::Result(json!({ "tools": [
            {
                "name": "echo",
                "description": "Returns its text argument.",
                "inputSchema": {
                    "type": "object",
                    "properties": { "text": { "type": "string" } },
                    "required": ["text"],
                },
            },
            {
                "name": "sleep",
                "description": "Waits the given number of milliseconds, then answers.",
                "inputSchema": {
                    "type": "object",
                    "properties": { "ms": { "type": "integer", "minimum": 0 } },
                    "required": ["ms"],
                },
            },
        ]})),
        "tools/call" => call_tool(ctx, &params).await,
        other => Reply::Error(RpcError::method_not_found(other)),
    }
}

async fn call_tool(_ctx: &Context<Client>, params: &Value) -> Reply {
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    match params.get("name").and_then(Value::as_str) {
        Some("echo") => match args.get("text").and_then(Value::as_str) {
            Some(text) => Reply::Result(text_content(text)),
            None => Reply::Error(RpcError::invalid_params(
                "echo needs a string argument `text`",
            )),
        },
        Some("sleep") => match args.get("ms").and_then(Value::as_u64) {
            Some(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Reply::Result(text_content(&format!("slept {ms} ms")))
            }
            None => Reply::Error(RpcError::invalid_params(
                "sleep needs an integer argument `ms`",
            )),
        },
        Some(other) => Reply::Error(RpcError::invalid_params(format!("unknown tool: {other}"))),
        None => Reply::Error(RpcError::invalid_params("tools/call needs params.name")),
    }
}

fn text_content(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": false })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();

    let mut builder = SessionManager::builder(Server)
        .capacity(args.max_sessions)
        .idle_timeout(Duration::from_millis(args.idle_timeout_ms));
    for origin in &args.allowed_origins {
        builder = builder.allow_origin(origin.clone());
    }
    let manager = builder.build()?;

    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let addr = listener.local_addr()?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{addr}/mcp")?;
        stdout.flush()?;
    }

    let router = manager.clone();
    let service =
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let manager = router.clone();
            async move {
                Ok::<_, std::convert::Infallible>(match request.uri().path() {
                    "/mcp" => manager.handle(request).await,
                    "/metrics" if request.method() == http::Method::GET => {
                        let mut response = Response::new(mcp::body_from(manager.metrics()));
                        response.headers_mut().insert(
                            http::header::CONTENT_TYPE,
                            http::HeaderValue::from_static(mcp::metrics::CONTENT_TYPE),
                        );
                        response
                    }
                    _ => {
                        let mut response = Response::new(mcp::body_from("not found\n"));
                        *response.status_mut() = StatusCode::NOT_FOUND;
                        response
                    }
                })
            }
        });

    let report = mcp::serve(
        listener,
        manager.clone(),
        service,
        shutdown_signal(),
        Duration::from_millis(args.shutdown_deadline_ms),
    )
    .await?;
    let stats = manager.stats();
    tracing::info!(
        sessions_ended = report.sessions_ended,
        drained = report.drained,
        created = stats.created,
        live = stats.live,
        "stopped"
    );
    Ok(())
}

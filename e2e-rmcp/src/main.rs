//! An rmcp (3.11) streamable-HTTP server for `benches/e2e.rs`: the same flags
//! and first line as `examples/mcp_server`, so the same raw client measures
//! both. Sessions are rmcp's own (`LocalSessionManager`, stateful mode).
//!
//! ```text
//! cargo build --release -p e2e-rmcp
//! cargo bench --bench e2e -- --server target/release/rmcp_server
//! ```
//!
//! `--max-sessions` and `--idle-timeout-ms` are accepted and ignored: rmcp's
//! session manager has neither knob in this form.

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use std::io::Write;
use std::sync::Arc;

/// A server with no tools: `initialize`, `notifications/initialized` and
/// `DELETE` are all the benchmark sends.
#[derive(Clone)]
struct Empty;

impl ServerHandler for Empty {}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // As examples/mcp_server sets up its logs (the bench passes RUST_LOG).
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut addr = "127.0.0.1:8080".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--addr" => addr = args.next().expect("--addr ADDR"),
            "--max-sessions" | "--idle-timeout-ms" => {
                args.next();
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let service = StreamableHttpService::new(
        || Ok(Empty),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on http://{}/mcp", listener.local_addr()?)?;
    stdout.flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

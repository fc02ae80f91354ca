//! An rmcp MCP server (streamable HTTP) whose sessions live in sessionreg's
//! registry: rmcp's usual tool server, where the only change from rmcp's own
//! example is the session manager (plus `GET /metrics` and the
//! [`StatusLayer`](sessionreg_rmcp::StatusLayer)).
//!
//! ```text
//! cargo run --release -p sessionreg-rmcp --example rmcp_server -- --addr 127.0.0.1:8080
//! ```
//!
//! Tools `echo {text}` and `sleep {ms}`. Its first stdout line is
//! `listening on http://ADDR/mcp`; `GET /metrics` serves the registry's
//! counters in Prometheus text. Ctrl-C or SIGTERM shuts it down gracefully:
//! every session ends with reason `shutdown`, then the server exits 0.

#[path = "rmcp_server/app.rs"]
mod app;

use clap::Parser;
use sessionreg_rmcp::RegistrySessionManager;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
#[command(about = "An rmcp MCP server whose sessions live in sessionreg's registry")]
struct Args {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Sessions with nothing in flight for this long are ended.
    #[arg(long, default_value_t = 1_800_000)]
    idle_timeout_ms: u64,
    /// Maximum live sessions; more get 503.
    #[arg(long, default_value_t = 10_000)]
    max_sessions: usize,
    /// The node id: the first two hex digits of every session id.
    #[arg(long, default_value_t = 0)]
    node_id: u8,
}

#[tokio::main]
async fn main() -> ExitCode {
    // rmcp logs each new session's id in full at INFO from this target; ids
    // grant access, so it stays at WARN unless RUST_LOG says otherwise.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(
                    "info,rmcp::transport::streamable_http_server::session::local=warn",
                )
            }),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp_server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let token = CancellationToken::new();
    let manager = Arc::new(
        RegistrySessionManager::builder()
            .capacity(args.max_sessions)
            .idle_timeout(Duration::from_millis(args.idle_timeout_ms))
            .node_id(args.node_id)
            .cancellation_token(token.clone())
            .build()?,
    );
    let metrics = {
        let manager = manager.clone();
        move || manager.metrics()
    };
    let router = app::router(manager.clone(), token.child_token(), metrics);
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on http://{}/mcp", listener.local_addr()?)?;
    stdout.flush()?;
    let stopped = token.clone().cancelled_owned();
    let server = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(stopped)
            .await
    });
    stop_signal().await?;
    let ended = manager.shutdown();
    token.cancel();
    server.await??;
    tracing::info!(ended, "shut down");
    Ok(())
}

/// Ctrl-C or SIGTERM.
async fn stop_signal() -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = term.recv() => Ok(()),
    }
}

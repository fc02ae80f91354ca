//! An rmcp MCP server (streamable HTTP) serving the Tasks extension
//! (SEP-2663) on sessionreg's [`TaskManager`](sessionreg_rmcp::TaskManager),
//! with the fixtures of the official conformance suite's `tasks-*`
//! scenarios (see `rmcp_tasks_server/app.rs`). Sessions of the legacy wire
//! live in sessionreg's registry as in `rmcp_server`; the 2026-07-28 wire is
//! stateless, and its tasks outlive the requests that created them.
//!
//! ```text
//! cargo run -p sessionreg-rmcp --example rmcp_tasks_server -- --addr 127.0.0.1:8080
//! cargo run -p sessionreg-rmcp --example rmcp_tasks_server -- --tasks rmcp   # rmcp's own manager
//! ```
//!
//! Its first stdout line is `listening on http://ADDR/mcp`; `GET /metrics`
//! serves the session registry's counters, and the task store's
//! (`sessionreg_tasks_*`) with sessionreg's manager. Ctrl-C or SIGTERM shuts it down
//! gracefully (running tasks are stopped, every session ends with reason
//! `shutdown`), then the server exits 0.

#[path = "rmcp_tasks_server/app.rs"]
mod app;

use clap::{Parser, ValueEnum};
use sessionreg_rmcp::{RegistrySessionManager, TaskManager};
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Which task manager serves the tasks.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Manager {
    /// sessionreg_rmcp::TaskManager.
    Sessionreg,
    /// rmcp 3.11's own rmcp::task_manager::TaskManager (for comparison).
    Rmcp,
}

#[derive(Parser, Debug)]
#[command(about = "An rmcp MCP server serving the Tasks extension on sessionreg's task store")]
struct Args {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// The task manager.
    #[arg(long, value_enum, default_value_t = Manager::Sessionreg)]
    tasks: Manager,
    /// Maximum tasks held (running, or ended and retained); sessionreg's only.
    #[arg(long, default_value_t = 10_000)]
    max_tasks: usize,
    /// How long an ended task stays readable; sessionreg's only.
    #[arg(long, default_value_t = 600_000)]
    retention_ms: u64,
    /// Stop a task still running at its TTL (rmcp's always does); sessionreg's only.
    #[arg(long)]
    abort_at_ttl: bool,
    /// The node id: the first two hex digits of every session and task id.
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
            eprintln!("rmcp_tasks_server: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let token = CancellationToken::new();
    let sessions = Arc::new(
        RegistrySessionManager::builder()
            .node_id(args.node_id)
            .cancellation_token(token.clone())
            .build()?,
    );
    let metrics = {
        let sessions = sessions.clone();
        move || sessions.metrics()
    };
    // The one line an application changes: rmcp's TaskManager::new() or
    // sessionreg's (here with its builder, for the flags).
    let (router, stop_tasks): (_, Box<dyn Fn() + Send>) = match args.tasks {
        Manager::Sessionreg => {
            let tasks = TaskManager::builder()
                .capacity(args.max_tasks)
                .retention(Duration::from_millis(args.retention_ms))
                .abort_at_ttl(args.abort_at_ttl)
                .node_id(args.node_id)
                .build()?;
            let metrics = {
                let tasks = tasks.clone();
                move || metrics() + &tasks.metrics()
            };
            let stop = tasks.clone();
            (
                app::router(sessions.clone(), tasks, token.child_token(), metrics),
                Box::new(move || stop.shutdown()),
            )
        }
        Manager::Rmcp => {
            let tasks = rmcp::task_manager::TaskManager::new();
            let stop = tasks.clone();
            (
                app::router(sessions.clone(), tasks, token.child_token(), metrics),
                Box::new(move || stop.shutdown()),
            )
        }
    };
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
    stop_tasks();
    let ended = sessions.shutdown();
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

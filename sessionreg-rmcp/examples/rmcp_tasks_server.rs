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
#[path = "common/listen.rs"]
mod listen;
#[path = "common/process.rs"]
mod process;

use clap::{Parser, ValueEnum};
use sessionreg_rmcp::{RegistrySessionManager, TaskManager};
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
    process::init_tracing();
    process::exit("rmcp_tasks_server", run(Args::parse()).await)
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
    process::serve(args.addr, router, token, move || {
        stop_tasks();
        sessions.shutdown()
    })
    .await
}

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
//! cargo run -p sessionreg-rmcp --example rmcp_tasks_server -- --service layer # on sessionreg's layer
//! ```
//!
//! With `--service layer` the same handler is served by
//! `sessionreg_rmcp::http::StreamableHttpService` (sessionreg's HTTP layer:
//! both eras, legacy sessions in its registry) instead of rmcp's service
//! with sessionreg's session manager: a handler that supports rmcp's tasks
//! runs them on the manager it was given, made once and cloned into the
//! factory (at 2026-07-28 the factory makes a handler per request: a
//! manager made in the handler's constructor would lose every task).
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
use sessionreg_rmcp::http::StreamableHttpService;
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

/// Which HTTP service serves the handler.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Service {
    /// rmcp's `StreamableHttpService`, with sessionreg's session manager.
    Rmcp,
    /// sessionreg_rmcp::http::StreamableHttpService: sessionreg's HTTP layer.
    Layer,
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
    /// The HTTP service.
    #[arg(long, value_enum, default_value_t = Service::Rmcp)]
    service: Service,
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
    if let Service::Layer = args.service {
        return run_on_layer(args).await;
    }
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
            let tasks = sessionreg_tasks(&args)?;
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

/// sessionreg's task manager, as the flags say.
fn sessionreg_tasks(args: &Args) -> Result<TaskManager, Box<dyn std::error::Error>> {
    Ok(TaskManager::builder()
        .capacity(args.max_tasks)
        .retention(Duration::from_millis(args.retention_ms))
        .abort_at_ttl(args.abort_at_ttl)
        .node_id(args.node_id)
        .build()?)
}

/// The same handler on sessionreg's HTTP layer.
async fn run_on_layer(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    match args.tasks {
        Manager::Sessionreg => {
            let tasks = sessionreg_tasks(&args)?;
            let metrics = tasks.clone();
            let stop = tasks.clone();
            serve_on_layer(
                args,
                tasks,
                move || metrics.metrics(),
                Box::new(move || stop.shutdown()),
            )
            .await
        }
        Manager::Rmcp => {
            let tasks = rmcp::task_manager::TaskManager::new();
            let stop = tasks.clone();
            serve_on_layer(args, tasks, String::new, Box::new(move || stop.shutdown())).await
        }
    }
}

async fn serve_on_layer<M: app::Tasks>(
    args: Args,
    tasks: M,
    task_metrics: impl Fn() -> String + Clone + Send + Sync + 'static,
    stop_tasks: Box<dyn Fn() + Send>,
) -> Result<(), Box<dyn std::error::Error>> {
    // The one change from rmcp's service: this `StreamableHttpService`
    // (through its builder, for the node id).
    let service: StreamableHttpService<_> =
        StreamableHttpService::builder(move || Ok(app::TasksServer::new(tasks.clone())))?
            .node_id(args.node_id)
            .build()?
            .into();
    service.manager().set_bind_address(args.addr);
    let manager = service.clone();
    let metrics = move || manager.manager().metrics() + &task_metrics();
    let router = app::endpoint::endpoint(service.clone(), metrics);
    process::serve(args.addr, router, CancellationToken::new(), move || {
        stop_tasks();
        service.manager().shutdown()
    })
    .await
}

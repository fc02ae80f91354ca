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
#[path = "common/listen.rs"]
mod listen;
#[path = "common/process.rs"]
mod process;

use clap::Parser;
use sessionreg_rmcp::RegistrySessionManager;
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
    process::init_tracing();
    process::exit("rmcp_server", run(Args::parse()).await)
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
    process::serve(args.addr, router, token, move || manager.shutdown()).await
}

//! An rmcp counter served by sessionreg's streamable-HTTP layer: rmcp's
//! usual `#[tool_router]` server (`rmcp_counter/counter.rs`, which does not
//! change), where the one change from rmcp's own example is the `use` of
//! [`StreamableHttpService`] (plus `GET /metrics`).
//!
//! ```text
//! cargo run --release -p sessionreg-rmcp --example rmcp_counter -- --addr 127.0.0.1:8080
//! ```
//!
//! Tools `increment`, `add {by}`, `count_to_three` (progress when asked) and
//! `header {name}` (an HTTP header of the request, read from the `Parts`
//! rmcp puts in the request's extensions). Both eras on `/mcp`: a
//! 2025-11-25 client gets a session whose count goes on, a 2026-07-28
//! request a counter of its own. Its first stdout line is
//! `listening on http://ADDR/mcp`. Each connection has `TCP_NODELAY`.
//! Ctrl-C or SIGTERM shuts it down gracefully.

#[path = "rmcp_counter/counter.rs"]
mod counter;
#[path = "common/listen.rs"]
mod listen;
#[path = "common/process.rs"]
mod process;

use axum::routing::get;
use clap::Parser;
use counter::Counter;
use sessionreg_rmcp::http::{Config, StreamableHttpService};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
#[command(about = "An rmcp counter served by sessionreg's streamable-HTTP layer")]
struct Args {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Legacy sessions with nothing in flight for this long are ended.
    #[arg(long, default_value_t = 300_000)]
    idle_timeout_ms: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    process::init_tracing();
    process::exit("rmcp_counter", run(Args::parse()).await)
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let mut config = Config::default();
    config.idle_timeout = Some(Duration::from_millis(args.idle_timeout_ms));
    // The one change: this `StreamableHttpService` is sessionreg_rmcp's.
    let service = StreamableHttpService::try_new(|| Ok(Counter::new()), config)?;
    // The listener's address, so that a public bind lets any Host in.
    service.manager().set_bind_address(args.addr);
    let metrics = service.clone();
    let router = axum::Router::new()
        .nest_service("/mcp", service.clone())
        .route(
            "/metrics",
            get(move || async move { metrics.manager().metrics() }),
        );
    let token = CancellationToken::new();
    process::serve(args.addr, router, token, move || {
        service.manager().shutdown()
    })
    .await
}

//! The same MCP application as `mcp_server`, mounted in an axum 0.8 router
//! beside ordinary axum routes: what a user with an existing axum service
//! does.
//!
//! ```text
//! cargo run --release --example axum_server -- --addr 127.0.0.1:8080
//! ```
//!
//! Same flags and first stdout line (`listening on http://ADDR/mcp`) as
//! `mcp_server`; `GET /metrics`, and `GET /healthz` as the ordinary route.
//! Nothing here wires up the manager's safety by hand: DNS-rebinding
//! protection holds (only loopback `Host`s, plus `--allowed-host`; an
//! `Origin` only from `--allowed-origin`) and the idle reaper starts with
//! the first request, because the manager does both wherever it is
//! mounted. The router is served by `sessionreg::http::serve` (through
//! hyper-util's `TowerToHyperService`) rather than `axum::serve`, which sets
//! no hyper timer: so every connection flag applies here as in
//! `mcp_server` (header read and idle timeouts, open connections, stalled
//! writes, HTTP/2), and shutdown is the same graceful one (Ctrl-C,
//! SIGTERM): stop accepting, let requests in flight finish up to the
//! deadline, end every session (open SSE streams get a clean end).

#[path = "mcp_app/mod.rs"]
pub mod mcp_app;

use axum::routing::get;
use clap::Parser;
use hyper_util::service::TowerToHyperService;
use mcp_app::ops::{self, Flags};
use sessionreg::http as mcp;
use std::future::Future;

#[derive(Parser, Debug)]
#[command(about = "An MCP server (streamable HTTP) on sessionreg, mounted in axum")]
struct Args {
    #[command(flatten)]
    flags: Flags,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ops::init_tracing();
    let Args { flags } = Args::parse();
    let listener = tokio::net::TcpListener::bind(flags.addr).await?;
    // Signals are listened for before the address is announced.
    let stop = ops::shutdown_signal();
    ops::announce(listener.local_addr()?)?;
    run(&flags, listener, stop).await?;
    Ok(())
}

/// Serves the router on `listener` until `signal`, then shuts down
/// gracefully. Returns whether everything finished within the deadline.
pub async fn run(
    flags: &Flags,
    listener: tokio::net::TcpListener,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<bool, Box<dyn std::error::Error>> {
    let built = ops::build(flags)?;
    let manager = built.manager.clone();
    ops::reload_on_sighup(&built, flags);

    let metrics = manager.clone();
    let mut router = axum::Router::new();
    // With --oauth-issuer: the resource's metadata, which the manager
    // answers at its well-known paths.
    for path in built.metadata_paths() {
        router = router.route_service(&path, manager.clone());
    }
    let router = router
        .route_service("/mcp", manager.clone())
        .route(
            "/metrics",
            get(move || async move { ops::metrics(&metrics) }),
        )
        .route("/healthz", get(|| async { "ok\n" }));

    let report = mcp::serve_with(
        listener,
        manager.clone(),
        TowerToHyperService::new(router),
        signal,
        flags.shutdown_deadline(),
        built.connections,
    )
    .await?;
    if !report.drained {
        tracing::warn!("connections or handlers still running at the deadline");
    }
    let stats = manager.stats();
    tracing::info!(
        drained = report.drained,
        created = stats.created,
        live = stats.live,
        "stopped"
    );
    Ok(report.drained)
}

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
//! protection holds (only loopback `Host`s, plus `--allowed-host`) and the
//! idle reaper starts with the first request, because the manager does both
//! wherever it is mounted. Shutdown (Ctrl-C, SIGTERM): stop accepting, end
//! every session (open SSE streams get a clean end, so axum's graceful
//! shutdown can finish), wait for handlers up to the deadline.

#[path = "mcp_app/mod.rs"]
pub mod mcp_app;

use axum::routing::get;
use clap::Parser;
use mcp_app::ops::{self, Flags};
use std::future::{Future, IntoFuture};

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
    ops::announce(listener.local_addr()?)?;
    run(&flags, listener, ops::shutdown_signal()).await?;
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
    let router = axum::Router::new()
        .route_service("/mcp", manager.clone())
        .route(
            "/metrics",
            get(move || async move { ops::metrics(&metrics) }),
        )
        .route("/healthz", get(|| async { "ok\n" }));

    // When the signal comes: end every session first, so that open SSE
    // streams end and axum's graceful shutdown (which waits for every
    // connection) can complete.
    let (stopping_tx, stopping) = tokio::sync::oneshot::channel::<()>();
    let ender = manager.clone();
    let graceful = async move {
        signal.await;
        let ended = ender.shutdown();
        tracing::info!(sessions_ended = ended, "shutting down");
        let _ = stopping_tx.send(());
    };
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(graceful)
        .into_future();
    let deadline = flags.shutdown_deadline();
    let drained = tokio::select! {
        served = served => {
            served?;
            manager.wait_idle(deadline).await
        }
        () = async {
            let _ = stopping.await;
            tokio::time::sleep(deadline).await;
        } => false,
    };
    if !drained {
        tracing::warn!(
            ?deadline,
            "connections or handlers still running at the deadline"
        );
    }
    let stats = manager.stats();
    tracing::info!(
        drained,
        created = stats.created,
        live = stats.live,
        "stopped"
    );
    Ok(drained)
}

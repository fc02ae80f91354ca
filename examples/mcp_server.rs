//! A small, real MCP server on the session layer (streamable HTTP), served
//! on hyper by `sessionreg::http::serve`.
//!
//! ```text
//! cargo run --release --example mcp_server -- --addr 127.0.0.1:8080
//! cargo run --release --example mcp_server -- --bearer-token ada=s3cret --bearer-token-file tokens.txt
//! cargo run --release --features oauth --example mcp_server -- \
//!     --oauth-issuer https://auth.example.com/realms/mcp --resource https://mcp.example.com/mcp --required-scope mcp:tools
//! ```
//!
//! It answers `initialize`, `ping`, `tools/list` and `tools/call` (tools
//! `echo`, `sleep`, `running`: how many `sleep` calls run now, and
//! `notify`, among others), accepts `notifications/initialized`, serves
//! 2026-07-28 (session-less) requests too, serves `GET /metrics` in
//! Prometheus text, and shuts down gracefully on Ctrl-C or SIGTERM. With
//! `--bearer-token`/`--bearer-token-file`, every `/mcp` request needs
//! `Authorization: Bearer TOKEN` and sessions are bound to the token's
//! name; SIGHUP re-reads the token, allow-list, request-state key and bus
//! key files. With
//! `--oauth-issuer URL --resource URL [--required-scope S]...` (feature
//! `oauth`), it is an OAuth 2.1 resource server: `/mcp` needs an access
//! token of that issuer for that resource (401 names the metadata, at
//! `/.well-known/oauth-protected-resource/mcp`; a missing scope is 403),
//! sessions are bound to the token's issuer and subject, and the `whoami`
//! tool answers with them and the token's scopes; static tokens, if given
//! too, are tried first. Its first line on
//! stdout is `listening on http://ADDR/mcp`. The same application mounted
//! in axum: `examples/axum_server.rs`.
//!
//! In a fleet behind a load balancer (README, "Run a fleet"; `deploy/`):
//!
//! * `--node-id N` puts N in the first two hex digits of every session id,
//!   task id and basket id this node mints, which the balancer routes by (a
//!   task's requests name it in `Mcp-Name`; a basket tool's call, in
//!   `Mcp-Param-Basket`, the header its `x-mcp-header` argument is
//!   mirrored into).
//! * `--request-state-key-file PATH`: the keys that seal the `requestState`
//!   of an input-required answer (the `confirm` tool's), shared by the
//!   nodes so that a retry opens on any of them; re-read on SIGHUP.
//! * `--redis-url URL --bus-key-file PATH` (feature `redis`): the fleet's
//!   bus, its frames sealed under the keys of PATH (the same file on every
//!   node; the bus does not start without it); re-read on SIGHUP.
//! * `GET /health/ready` is 200 while the node takes new sessions, 503 while
//!   it drains (or is full); `GET /health/live` is 200 while it serves its
//!   sessions, draining or not.
//! * SIGUSR1, or `POST /drain` on `--admin-addr` (loopback only; its
//!   address is the second stdout line, `admin on http://ADDR/drain`),
//!   drains it: new sessions get 503, live ones are served until they end
//!   or `--drain-deadline-ms` passes, then the node stops and prints
//!   `stopped sessions_ended=N`.
//! * `--otlp-endpoint URL` (feature `otel`; or `OTEL_EXPORTER_OTLP_ENDPOINT`)
//!   exports each request's SERVER span and the duration histograms over
//!   OTLP/HTTP (README, "Observe").
//! * `/metrics` adds `mcp_server_requests_total` (requests to `/mcp`),
//!   `mcp_server_foreign_ids_total{owner}`: requests that carried a
//!   well-formed session id of another node, i.e. that a balancer sent to
//!   the wrong node, or to this one because the owner was down; and
//!   `mcp_server_foreign_task_ids_total{owner}`, the same for the task ids
//!   of `tasks/*` requests (their `Mcp-Name`), and
//!   `mcp_server_foreign_handle_ids_total{owner}` for the basket ids of
//!   `tools/call`s (their `Mcp-Param-Basket`).

#[path = "mcp_app/mod.rs"]
mod mcp_app;

use clap::Parser;
use mcp_app::fleet::{self, FleetFlags, Routing};
use mcp_app::ops::{self, Flags};
use mcp_app::otel;
use sessionreg::http as mcp;
use std::sync::Arc;
use tokio::sync::Notify;

#[derive(Parser, Debug)]
#[command(about = "An MCP server (streamable HTTP) on sessionreg, served on hyper")]
struct Args {
    #[command(flatten)]
    flags: Flags,
    #[command(flatten)]
    fleet: FleetFlags,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { flags, fleet } = Args::parse();
    // Before the manager is built: its histograms take the export's meter.
    let telemetry = otel::init(&flags.otel);
    // A setting out of range, or a file that cannot be read, is said on
    // stderr, and the server exits 2.
    let built = ops::build(&flags).unwrap_or_else(|error| ops::startup_error(error));
    let manager = built.manager.clone();
    ops::reload_on_sighup(&built, &flags);

    let listener = tokio::net::TcpListener::bind(flags.addr).await?;
    let admin = fleet.bind_admin().await?;
    let drain_requested = Arc::new(Notify::new());
    // Signals are listened for before the addresses are announced.
    let stop = fleet::stop_signal(
        manager.clone(),
        Arc::clone(&drain_requested),
        fleet.drain_deadline(),
        ops::shutdown_signal(),
    );
    ops::announce(listener.local_addr()?)?;
    let routing = Arc::new(Routing::new(flags.node_id));
    // /metrics on the public listener, or on the admin one.
    let public_metrics = !fleet.metrics_on_admin;
    if let Some(admin) = admin {
        fleet::announce_admin(admin.local_addr()?)?;
        let options = fleet::AdminOptions {
            token: fleet.admin_token()?,
            metrics: fleet.metrics_on_admin.then(|| Arc::clone(&routing)),
        };
        tokio::spawn(fleet::serve_admin(
            admin,
            manager.clone(),
            Arc::clone(&drain_requested),
            options,
        ));
    }

    // The resource's metadata (with --oauth-issuer) is the manager's to
    // answer, as /mcp is.
    let metadata_paths = Arc::new(built.metadata_paths());
    let router = manager.clone();
    let service =
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let manager = router.clone();
            let routing = Arc::clone(&routing);
            let metadata_paths = Arc::clone(&metadata_paths);
            async move {
                let get = request.method() == http::Method::GET;
                Ok::<_, std::convert::Infallible>(match request.uri().path() {
                    "/mcp" => {
                        routing.observe(request.headers());
                        manager.handle(request).await
                    }
                    "/metrics" if get && public_metrics => routing.metrics(&manager),
                    "/health/ready" if get => manager.readiness(),
                    "/health/live" if get => manager.liveness(),
                    path if metadata_paths.iter().any(|p| p == path) => {
                        manager.handle(request).await
                    }
                    _ => ops::not_found(),
                })
            }
        });

    let report = mcp::serve_with(
        listener,
        manager.clone(),
        service,
        stop,
        flags.shutdown_deadline(),
        built.connections,
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
    // What the export holds goes out before the last line.
    telemetry.shutdown().await;
    // The last stdout line, for whoever waits for the node to stop.
    ops::announce_stopped(report.sessions_ended);
    Ok(())
}

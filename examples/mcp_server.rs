//! A small, real MCP server on the session layer (streamable HTTP), served
//! on hyper by `sessionreg::http::serve`.
//!
//! ```text
//! cargo run --release --example mcp_server -- --addr 127.0.0.1:8080
//! cargo run --release --example mcp_server -- --bearer-token ada=s3cret --bearer-token-file tokens.txt
//! ```
//!
//! It answers `initialize`, `ping`, `tools/list` and `tools/call` (tools
//! `echo` and `sleep`), accepts `notifications/initialized`, serves
//! 2026-07-28 (session-less) requests too, serves `GET /metrics` in
//! Prometheus text, and shuts down gracefully on Ctrl-C or SIGTERM. With
//! `--bearer-token`/`--bearer-token-file`, every `/mcp` request needs
//! `Authorization: Bearer TOKEN` and sessions are bound to the token's
//! name; SIGHUP re-reads the token and allow-list files. Its first line on
//! stdout is `listening on http://ADDR/mcp`. The same application mounted
//! in axum: `examples/axum_server.rs`.

#[path = "mcp_app/mod.rs"]
mod mcp_app;

use clap::Parser;
use http::{Response, StatusCode};
use mcp_app::ops::{self, Flags};
use sessionreg::http as mcp;

#[derive(Parser, Debug)]
#[command(about = "An MCP server (streamable HTTP) on sessionreg, served on hyper")]
struct Args {
    #[command(flatten)]
    flags: Flags,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ops::init_tracing();
    let Args { flags } = Args::parse();
    let built = ops::build(&flags)?;
    let manager = built.manager.clone();
    ops::reload_on_sighup(&built, &flags);

    let listener = tokio::net::TcpListener::bind(flags.addr).await?;
    ops::announce(listener.local_addr()?)?;

    let router = manager.clone();
    let service =
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let manager = router.clone();
            async move {
                Ok::<_, std::convert::Infallible>(match request.uri().path() {
                    "/mcp" => manager.handle(request).await,
                    "/metrics" if request.method() == http::Method::GET => ops::metrics(&manager),
                    _ => {
                        let mut response = Response::new(mcp::body_from("not found\n"));
                        *response.status_mut() = StatusCode::NOT_FOUND;
                        response
                    }
                })
            }
        });

    let report = mcp::serve(
        listener,
        manager.clone(),
        service,
        ops::shutdown_signal(),
        flags.shutdown_deadline(),
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
    Ok(())
}

//! An MCP server on `sessionreg::http` with every fixture the official
//! conformance suite's server scenarios call (`@modelcontextprotocol/
//! conformance`, run by `tests/interop/run.sh` at `--requirements 2025-11-25` and
//! `--requirements 2026-07-28` against one endpoint): tools, prompts,
//! resources, completion, logging and progress in both eras; sampling and
//! elicitation as requests to the client on the call's stream in the legacy
//! era (`Context::ask`) and as `input_required` answers in the modern one
//! (`Modern::input_required`, their state sealed by the layer, single use
//! and short-lived here so the suite sees those guarantees); resource
//! subscriptions in the legacy era; a tool with an `x-mcp-header`
//! parameter.
//!
//! ```text
//! cargo run --release --example conformance_server -- --addr 127.0.0.1:0
//! ```
//!
//! Flags and first stdout line as `mcp_server`'s (`listening on
//! http://ADDR/mcp`); `GET /metrics` as there.

#[path = "../mcp_app/mod.rs"]
mod mcp_app;

mod app;
mod fixtures;
mod legacy;
mod modern;
mod tasks;

use clap::Parser;
use mcp_app::ops::{self, Flags};
use sessionreg::http as mcp;

#[derive(Parser, Debug)]
#[command(about = "An MCP server with the conformance suite's fixtures, on sessionreg")]
struct Args {
    #[command(flatten)]
    flags: Flags,
    /// How long a sealed `requestState` of the modern era's input-required
    /// fixtures opens, in milliseconds.
    #[arg(long, default_value_t = 60_000)]
    request_state_ttl_ms: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    ops::init_tracing();
    let Args {
        flags,
        request_state_ttl_ms,
    } = Args::parse();
    let ttl = std::time::Duration::from_millis(request_state_ttl_ms);
    // A setting out of range (a TTL of 0 or past a year, say) is said on
    // stderr, and the server exits 2.
    let built = app::Conformance::new()
        .map_err(Into::into)
        .and_then(|app| {
            ops::build_configured(app, &flags, |b| b.request_state_ttl(ttl).tasks(true))
        })
        .unwrap_or_else(|error| ops::startup_error(error));
    let manager = built.manager.clone();
    ops::reload_on_sighup(&built, &flags);
    let listener = tokio::net::TcpListener::bind(flags.addr).await?;
    // Signals are listened for before the address is announced.
    let stop = ops::shutdown_signal();
    ops::announce(listener.local_addr()?)?;
    let router = manager.clone();
    let service =
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let manager = router.clone();
            async move {
                let get = request.method() == http::Method::GET;
                Ok::<_, std::convert::Infallible>(match request.uri().path() {
                    "/mcp" => manager.handle(request).await,
                    "/metrics" if get => ops::metrics(&manager),
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
    ops::announce_stopped(report.sessions_ended);
    Ok(())
}

//! What both rmcp examples do as processes: their logging, their first
//! stdout line, serving until Ctrl-C or SIGTERM. Included by each with
//! `#[path = "common/process.rs"] mod process;` (beside `listen.rs`, which
//! it serves with).

use std::io::Write;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

/// Logs to stderr at `RUST_LOG`, or INFO. rmcp logs each new session's id
/// in full at INFO from its session target; ids grant access, so that one
/// stays at WARN unless `RUST_LOG` says otherwise. So does `rmcp::service`:
/// served by sessionreg's layer (`rmcp_counter`) its loop runs, and logs
/// the client's `initialize` params at INFO, once per request.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(
                    "info,rmcp::transport::streamable_http_server::session::local=warn,rmcp::service=warn",
                )
            }),
        )
        .with_writer(std::io::stderr)
        .init();
}

/// The process's exit status for `run`'s outcome (errors go to stderr,
/// named by `name`).
pub fn exit(name: &str, outcome: Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Binds `addr`, prints `listening on http://ADDR/mcp` (the first stdout
/// line, which scripts read), and serves `router` until Ctrl-C or SIGTERM;
/// then runs `stop` (which ends the sessions and tasks; it returns how many
/// sessions it ended), stops the listener and waits for it.
pub async fn serve(
    addr: std::net::SocketAddr,
    router: axum::Router,
    token: CancellationToken,
    stop: impl FnOnce() -> usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    // Listened for before the address is printed: a supervisor may signal
    // as soon as it reads the line, and an unheard SIGTERM kills.
    let signalled = stop_signal()?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on http://{}/mcp", listener.local_addr()?)?;
    stdout.flush()?;
    let stopped = token.clone().cancelled_owned();
    let server = tokio::spawn(crate::listen::serve(listener, router, stopped));
    signalled.await;
    let ended = stop();
    token.cancel();
    server.await??;
    tracing::info!(ended, "shut down");
    Ok(())
}

/// Listens for Ctrl-C (SIGINT) and SIGTERM from this call on; the future
/// resolves on the first of them.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

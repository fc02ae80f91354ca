//! How the rmcp examples serve their router: `axum::serve`, with
//! `TCP_NODELAY` on every connection it accepts. Included by each example
//! (`#[path = "common/listen.rs"] mod listen;`) and by the tests that serve
//! the examples' routers, so what they serve is served the same way.
//!
//! Without `TCP_NODELAY` (axum leaves Nagle's algorithm on) an SSE answer's
//! last chunk waits for the client's delayed ACK: a keep-alive `tools/call`
//! to an rmcp server takes about 40 ms instead of under 1 ms (BENCHMARKS.md,
//! "TCP_NODELAY on the rmcp examples").

use axum::serve::ListenerExt;
use std::future::Future;

/// Serves `router` on `listener`, each connection with `TCP_NODELAY`, until
/// `stopped` resolves; then lets the requests in flight finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    stopped: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = listener.tap_io(|tcp| {
        // Fails only on a socket that is already gone, which the server
        // then finds out about by itself.
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(stopped)
        .await
}

//! Serving a listener with graceful shutdown.
//!
//! Order on shutdown: stop accepting; end every session with
//! [`Reason::Shutdown`](crate::Reason::Shutdown) (close callbacks run, SSE
//! streams end cleanly, new `initialize` requests get 503); let open
//! connections finish their requests and wait for handlers still running,
//! up to a deadline.

use super::{App, Body, SessionManager};
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;

/// What a graceful shutdown did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Sessions ended with `Reason::Shutdown`.
    pub sessions_ended: usize,
    /// Whether connections and handlers all finished within the deadline.
    pub drained: bool,
}

/// Serves `manager` on `listener` (HTTP/1.1 and HTTP/2) until `signal`
/// resolves, then shuts down gracefully, waiting at most `deadline` for
/// requests in flight. Runs the idle reaper meanwhile, and turns on
/// DNS-rebinding protection if the listener is on loopback (unless
/// configured otherwise).
///
/// `service` answers each request; pass `manager.clone()` to serve only the
/// MCP endpoint, or a router that calls [`SessionManager::handle`] for it.
pub async fn serve<A, S, F>(
    listener: TcpListener,
    manager: SessionManager<A>,
    service: S,
    signal: impl Future<Output = ()>,
    deadline: Duration,
) -> std::io::Result<ShutdownReport>
where
    A: App,
    S: hyper::service::Service<
            Request<Incoming>,
            Response = Response<Body>,
            Error = Infallible,
            Future = F,
        > + Clone
        + Send
        + 'static,
    F: Future<Output = Result<Response<Body>, Infallible>> + Send + 'static,
{
    manager.set_local_addr(listener.local_addr()?);
    manager.start_reaper();
    let graceful = GracefulShutdown::new();
    let builder = auto::Builder::new(TokioExecutor::new());
    tokio::pin!(signal);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, _peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of descriptors and the like: back off, go on.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let connection = builder
                    .serve_connection(TokioIo::new(stream), service.clone())
                    .into_owned();
                let watched = graceful.watch(connection);
                tokio::spawn(async move {
                    if let Err(error) = watched.await {
                        tracing::debug!(error = %error, "connection ended with an error");
                    }
                });
            }
            () = &mut signal => break,
        }
    }
    drop(listener);
    let sessions_ended = manager.shutdown();
    tracing::info!(sessions_ended, "shutting down");
    let drained = tokio::time::timeout(deadline, async {
        graceful.shutdown().await;
        manager.inner_wait_idle().await;
    })
    .await
    .is_ok();
    Ok(ShutdownReport {
        sessions_ended,
        drained,
    })
}

impl<A: App> SessionManager<A> {
    async fn inner_wait_idle(&self) {
        // The outer timeout bounds this.
        while !self.wait_idle(Duration::from_secs(3600)).await {}
    }
}

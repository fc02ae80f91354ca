//! What a node in a fleet behind a load balancer adds (README, "Run a
//! fleet"; `deploy/`; `examples/fleet`): health probes, draining by signal
//! or by a loopback admin endpoint, and counting the requests that a
//! balancer sent to the wrong node.

use super::Server;
use clap::Args;
use http::{HeaderMap, Response, StatusCode};
use serde_json::json;
use sessionreg::http::{self as mcp, SessionManager};
use sessionreg::SessionId;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// The flags of a node in a fleet (besides `--node-id`).
#[derive(Args, Debug, Clone)]
pub struct FleetFlags {
    /// Loopback address of the admin endpoint (`POST /drain`); none if
    /// absent.
    #[arg(long)]
    pub admin_addr: Option<SocketAddr>,
    /// How long a drain waits for live sessions to end before the node
    /// stops anyway, in milliseconds.
    #[arg(long, default_value_t = 300_000)]
    pub drain_deadline_ms: u64,
}

impl FleetFlags {
    /// The admin listener, bound (loopback only), if asked for.
    pub async fn bind_admin(&self) -> Result<Option<tokio::net::TcpListener>, String> {
        let Some(addr) = self.admin_addr else {
            return Ok(None);
        };
        if !addr.ip().is_loopback() {
            return Err(format!(
                "--admin-addr must be a loopback address, not {addr}"
            ));
        }
        tokio::net::TcpListener::bind(addr)
            .await
            .map(Some)
            .map_err(|e| format!("--admin-addr {addr}: {e}"))
    }

    /// `--drain-deadline-ms` as a duration.
    pub fn drain_deadline(&self) -> Duration {
        Duration::from_millis(self.drain_deadline_ms)
    }
}

/// What a node counts about the requests it gets: all of them, and those
/// carrying a well-formed id of another node, by owner.
pub struct Routing {
    node: u8,
    requests: AtomicU64,
    foreign: [AtomicU64; 256],
}

impl Routing {
    /// Counters for node `node`.
    pub fn new(node: u8) -> Routing {
        Routing {
            node,
            requests: AtomicU64::new(0),
            foreign: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts one request to `/mcp`. An id minted by another node means the
    /// balancer sent it here: a misroute if its owner is up, the expected
    /// fallback if not (this node answers 404 either way).
    pub fn observe(&self, headers: &HeaderMap) {
        // Relaxed: independent counters, read only for the metrics text.
        self.requests.fetch_add(1, Ordering::Relaxed);
        let owner = headers
            .get(mcp::rules::SESSION_HEADER)
            .and_then(|v| SessionId::parse_bytes(v.as_bytes()).ok())
            .map(SessionId::node);
        if let Some(owner) = owner.filter(|&owner| owner != self.node) {
            self.foreign[usize::from(owner)].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `GET /metrics`: the registry's counters, then
    /// `mcp_server_requests_total` and `mcp_server_foreign_ids_total{owner}`.
    pub fn metrics(&self, manager: &SessionManager<Server>) -> Response<mcp::Body> {
        use std::fmt::Write;
        let mut text = manager.metrics();
        let _ = writeln!(
            text,
            "# HELP mcp_server_requests_total Requests to /mcp.\n\
             # TYPE mcp_server_requests_total counter\n\
             mcp_server_requests_total {}\n\
             # HELP mcp_server_foreign_ids_total Requests to /mcp with a session id of another node, by owner.\n\
             # TYPE mcp_server_foreign_ids_total counter",
            self.requests.load(Ordering::Relaxed)
        );
        for (owner, count) in self.foreign.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            if count > 0 {
                let _ = writeln!(
                    text,
                    "mcp_server_foreign_ids_total{{owner=\"{owner}\"}} {count}"
                );
            }
        }
        text_response(StatusCode::OK, mcp::metrics::CONTENT_TYPE, text)
    }
}

fn text_response(
    status: StatusCode,
    content_type: &'static str,
    text: String,
) -> Response<mcp::Body> {
    let mut response = Response::new(mcp::body_from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    response
}

/// Prints the admin endpoint's address, the line after `listening on`.
pub fn announce_admin(addr: SocketAddr) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "admin on http://{addr}/drain")?;
    stdout.flush()
}

/// Serves the admin listener: `POST /drain` starts the drain and wakes
/// `requested`.
pub async fn serve_admin(
    listener: tokio::net::TcpListener,
    manager: SessionManager<Server>,
    requested: Arc<Notify>,
) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            Err(error) => {
                tracing::warn!(%error, "admin accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let manager = manager.clone();
        let requested = Arc::clone(&requested);
        let service = hyper::service::service_fn(move |request: http::Request<_>| {
            let response =
                if request.uri().path() == "/drain" && request.method() == http::Method::POST {
                    let started = manager.start_drain();
                    requested.notify_one();
                    let body = json!({
                        "draining": true,
                        "started_now": started,
                        "sessions": manager.stats().live,
                    });
                    text_response(StatusCode::ACCEPTED, "application/json", body.to_string())
                } else {
                    text_response(StatusCode::NOT_FOUND, "text/plain", "POST /drain\n".into())
                };
            std::future::ready(Ok::<_, std::convert::Infallible>(response))
        });
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

/// Resolves when the server should stop: at once on `stop_now` (Ctrl-C,
/// SIGTERM); after a drain on SIGUSR1 or `requested` (the admin
/// endpoint), when the last session has ended or `deadline` has passed.
pub async fn stop_signal(
    manager: SessionManager<Server>,
    requested: Arc<Notify>,
    deadline: Duration,
    stop_now: impl std::future::Future<Output = ()>,
) {
    let drained = async {
        tokio::select! {
            () = requested.notified() => {}
            () = user_signal() => {}
        }
        let report = manager.drain(deadline).await;
        if report.remaining > 0 {
            tracing::warn!(
                remaining = report.remaining,
                "drain deadline passed; ending the remaining sessions"
            );
        }
    };
    tokio::select! {
        () = stop_now => {}
        () = drained => {}
    }
}

/// Resolves on SIGUSR1; never where it cannot be listened for.
async fn user_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut usr1) = signal(SignalKind::user_defined1()) {
            usr1.recv().await;
            return;
        }
    }
    std::future::pending::<()>().await
}

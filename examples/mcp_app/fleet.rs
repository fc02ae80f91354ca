//! What a node in a fleet behind a load balancer adds (README, "Run a
//! fleet"; `deploy/`; `examples/fleet`): health probes, draining by signal
//! or by a loopback admin endpoint, and counting the requests that a
//! balancer sent to the wrong node.

use super::Server;
use clap::Args;
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use serde_json::json;
use sessionreg::http::{self as mcp, Authenticator, BearerTokens, SessionManager};
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
    /// A file holding the token the admin endpoint then requires, as
    /// `Authorization: Bearer TOKEN` (one line; re-read on SIGHUP).
    #[arg(long, value_name = "PATH", requires = "admin_addr")]
    pub admin_token_file: Option<std::path::PathBuf>,
    /// Serve `GET /metrics` on the admin endpoint instead of the public
    /// listener.
    #[arg(long, requires = "admin_addr")]
    pub metrics_on_admin: bool,
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

    /// The admin endpoint's token, from `--admin-token-file`, if any.
    pub fn admin_token(&self) -> Result<Option<BearerTokens>, String> {
        let Some(path) = &self.admin_token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let token = text.trim().to_string();
        BearerTokens::new([("admin".to_string(), token)])
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// What the admin endpoint serves besides `POST /drain`, and what it asks.
#[derive(Clone, Default)]
pub struct AdminOptions {
    /// Required as `Authorization: Bearer TOKEN` when set.
    pub token: Option<BearerTokens>,
    /// `GET /metrics`, when the metrics are served here.
    pub metrics: Option<Arc<Routing>>,
}

/// Whether a request to the admin endpoint may be what a web page made a
/// browser send; `Some(why)` refuses it. The admin endpoint is on loopback,
/// which any page the operator's browser shows can reach, with a request
/// (`POST` with `Content-Type: text/plain`) that needs no CORS preflight: so
/// anything a browser adds is refused. An `Origin` header (browsers send
/// one on every cross-origin `POST`, `null` from sandboxed pages), a
/// `Sec-Fetch-Site` other than `none` (browsers send it on every request;
/// `none` is the user's own navigation), or a `Host` that is not a loopback
/// name (DNS rebinding: a page's own name resolved to 127.0.0.1).
pub fn browser_request(headers: &HeaderMap) -> Option<&'static str> {
    if headers.contains_key(http::header::ORIGIN) {
        return Some("an Origin header (a browser page)");
    }
    let fetch_site = headers.get("sec-fetch-site").map(|v| v.as_bytes());
    if fetch_site.is_some_and(|site| site != b"none") {
        return Some("a Sec-Fetch-Site header (a browser page)");
    }
    let host = headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(|h| h.rsplit_once(':').map_or(h, |(name, _)| name));
    match host {
        Some("localhost" | "127.0.0.1" | "[::1]") => None,
        Some(_) => Some("a Host that is not loopback (DNS rebinding)"),
        None => Some("no Host header"),
    }
}

/// What a node counts about the requests it gets: all of them, and those
/// carrying a well-formed id of another node, by owner: a session id
/// (`MCP-Session-Id`), a task id (the `Mcp-Name` of a `tasks/*` request),
/// or a basket id (the `Mcp-Param-Basket` header of a `tools/call`), each
/// of which a balancer routes by: `deploy/render.sh`.
pub struct Routing {
    node: u8,
    requests: AtomicU64,
    foreign: [AtomicU64; 256],
    foreign_tasks: [AtomicU64; 256],
    foreign_handles: [AtomicU64; 256],
}

/// The header a basket tool's `basket` argument is mirrored into.
const BASKET_HEADER: HeaderName = HeaderName::from_static("mcp-param-basket");
/// The headers `observe` reads, named once (a `&str` name is parsed and
/// checked at every lookup).
const SESSION_ID: HeaderName = HeaderName::from_static(mcp::headers::SESSION_ID);
const MCP_METHOD: HeaderName = HeaderName::from_static(mcp::headers::MCP_METHOD);
const MCP_NAME: HeaderName = HeaderName::from_static(mcp::headers::MCP_NAME);

impl Routing {
    /// Counters for node `node`.
    pub fn new(node: u8) -> Routing {
        Routing {
            node,
            requests: AtomicU64::new(0),
            foreign: std::array::from_fn(|_| AtomicU64::new(0)),
            foreign_tasks: std::array::from_fn(|_| AtomicU64::new(0)),
            foreign_handles: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts one request to `/mcp`. An id minted by another node means the
    /// balancer sent it here: a misroute if its owner is up, the expected
    /// fallback if not (this node answers 404, "Task not found" or "no
    /// basket", either way). Task and basket ids are read only where the
    /// balancer reads them: the `Mcp-Name` of a request whose `Mcp-Method`
    /// begins with `tasks/`, the `Mcp-Param-Basket` of a `tools/call`.
    pub fn observe(&self, headers: &HeaderMap) {
        // Relaxed: independent counters, read only for the metrics text.
        self.requests.fetch_add(1, Ordering::Relaxed);
        // One pass over the request's few headers, not a hashed look-up per
        // name (most of these are absent from most requests); the first of
        // each name counts, as `HeaderMap::get`'s.
        let (mut session, mut method, mut name, mut basket) = (None, None, None, None);
        for (header, value) in headers {
            let first = if *header == SESSION_ID {
                &mut session
            } else if *header == MCP_METHOD {
                &mut method
            } else if *header == MCP_NAME {
                &mut name
            } else if *header == BASKET_HEADER {
                &mut basket
            } else {
                continue;
            };
            first.get_or_insert(value);
        }
        let owner = |value: Option<&HeaderValue>| {
            value
                .and_then(|v| SessionId::parse_bytes(v.as_bytes()).ok())
                .map(SessionId::node)
                .filter(|&owner| owner != self.node)
        };
        if let Some(owner) = owner(session) {
            self.foreign[usize::from(owner)].fetch_add(1, Ordering::Relaxed);
        }
        // The id headers only where Mcp-Method says the balancer reads them.
        let (id, counts) = match method.map(HeaderValue::as_bytes) {
            Some(m) if m.starts_with(b"tasks/") => (name, &self.foreign_tasks),
            Some(b"tools/call") => (basket, &self.foreign_handles),
            _ => return,
        };
        if let Some(owner) = owner(id) {
            counts[usize::from(owner)].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `GET /metrics`: the registry's counters, then
    /// `mcp_server_requests_total`, `mcp_server_foreign_ids_total{owner}`,
    /// `mcp_server_foreign_task_ids_total{owner}` and
    /// `mcp_server_foreign_handle_ids_total{owner}`.
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
        let _ = writeln!(
            text,
            "# HELP mcp_server_foreign_task_ids_total Task requests (tasks/*) to /mcp whose Mcp-Name is a task id of another node, by owner.\n\
             # TYPE mcp_server_foreign_task_ids_total counter"
        );
        for (owner, count) in self.foreign_tasks.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            if count > 0 {
                let _ = writeln!(
                    text,
                    "mcp_server_foreign_task_ids_total{{owner=\"{owner}\"}} {count}"
                );
            }
        }
        let _ = writeln!(
            text,
            "# HELP mcp_server_foreign_handle_ids_total Tool calls to /mcp whose Mcp-Param-Basket is a basket id of another node, by owner.\n\
             # TYPE mcp_server_foreign_handle_ids_total counter"
        );
        for (owner, count) in self.foreign_handles.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            if count > 0 {
                let _ = writeln!(
                    text,
                    "mcp_server_foreign_handle_ids_total{{owner=\"{owner}\"}} {count}"
                );
            }
        }
        text_response(StatusCode::OK, sessionreg::metrics::CONTENT_TYPE, text)
    }
}

fn text_response(
    status: StatusCode,
    content_type: &'static str,
    text: String,
) -> Response<mcp::Body> {
    let mut response = Response::new(super::text_body(text));
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
/// `requested`; `GET /metrics` when `options` say so. Anything a browser
/// may have sent is refused with 403 ([`browser_request`]), and so is a
/// request without the admin token when there is one (401).
pub async fn serve_admin(
    listener: tokio::net::TcpListener,
    manager: SessionManager<Server>,
    requested: Arc<Notify>,
    options: AdminOptions,
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
        // As `serve` does for the public listener: a response's last write
        // must not wait for the client's delayed ACK.
        let _ = stream.set_nodelay(true);
        let manager = manager.clone();
        let requested = Arc::clone(&requested);
        let options = options.clone();
        let service = hyper::service::service_fn(move |request: http::Request<_>| {
            let response = admin(&manager, &requested, &options, request);
            std::future::ready(Ok::<_, std::convert::Infallible>(response))
        });
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(io, service)
                .await;
        });
    }
}

/// One admin request.
fn admin<B>(
    manager: &SessionManager<Server>,
    requested: &Notify,
    options: &AdminOptions,
    request: http::Request<B>,
) -> Response<mcp::Body> {
    let (parts, _body) = request.into_parts();
    if let Some(why) = browser_request(&parts.headers) {
        tracing::warn!(why, "admin request refused");
        return text_response(
            StatusCode::FORBIDDEN,
            "text/plain",
            format!("refused: {why}\n"),
        );
    }
    if let Some(token) = &options.token {
        if token.authenticate(&parts).is_err() {
            let mut response = text_response(
                StatusCode::UNAUTHORIZED,
                "text/plain",
                "admin token required\n".into(),
            );
            response.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static(r#"Bearer realm="admin""#),
            );
            return response;
        }
    }
    match (parts.method.clone(), parts.uri.path()) {
        (http::Method::POST, "/drain") => {
            let started = manager.start_drain();
            requested.notify_one();
            let body = json!({
                "draining": true,
                "started_now": started,
                "sessions": manager.stats().live,
            });
            text_response(StatusCode::ACCEPTED, "application/json", body.to_string())
        }
        (http::Method::GET, "/metrics") => match &options.metrics {
            Some(routing) => routing.metrics(manager),
            None => text_response(StatusCode::NOT_FOUND, "text/plain", "POST /drain\n".into()),
        },
        _ => text_response(StatusCode::NOT_FOUND, "text/plain", "POST /drain\n".into()),
    }
}

/// Resolves when the server should stop: at once on `stop_now` (Ctrl-C,
/// SIGTERM); after a drain on SIGUSR1 or `requested` (the admin
/// endpoint), when the last session has ended or `deadline` has passed.
/// SIGUSR1 is listened for from this call on (before the addresses are
/// announced: unheard, it would kill the process).
pub fn stop_signal(
    manager: SessionManager<Server>,
    requested: Arc<Notify>,
    deadline: Duration,
    stop_now: impl std::future::Future<Output = ()>,
) -> impl std::future::Future<Output = ()> {
    let user_signal = user_signal();
    async move {
        let drained = async {
            tokio::select! {
                () = requested.notified() => {}
                () = user_signal => {}
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
}

/// Resolves on SIGUSR1, listened for from this call on; never where it
/// cannot be listened for.
fn user_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let usr1 = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()).ok();
    async move {
        #[cfg(unix)]
        if let Some(mut usr1) = usr1 {
            usr1.recv().await;
            return;
        }
        std::future::pending::<()>().await
    }
}

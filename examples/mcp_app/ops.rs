//! What both example servers do around the application: flags, the manager
//! built from them, files re-read on SIGHUP, `/metrics`, shutdown signals.

use super::baskets::flags::BasketFlags;
use super::bounds::Bounds;
use super::bus::{self, BusFlags};
use super::oauth::{self, OAuthFlags, ResourceServer};
use super::Server;
use clap::Args;
use http::{HeaderValue, Response};
use sessionreg::http::modern::RequestStateKeys;
use sessionreg::http::{self as mcp, App, BearerTokens, SessionManager};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The flags both servers take.
#[derive(Args, Debug, Clone)]
pub struct Flags {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Sessions idle this long are ended (0: never).
    #[arg(long, default_value_t = 1_800_000)]
    pub idle_timeout_ms: u64,
    /// Maximum live sessions; more get 503.
    #[arg(long, default_value_t = 10_000)]
    pub max_sessions: usize,
    /// The baskets' bounds.
    #[command(flatten)]
    pub baskets: BasketFlags,
    /// An Origin allowed besides loopback ones (repeatable); allowed
    /// origins get CORS headers.
    #[arg(long = "allowed-origin")]
    pub allowed_origins: Vec<String>,
    /// A file of allowed Origins, one a line (`#` comments), added to
    /// --allowed-origin; re-read on SIGHUP.
    #[arg(long)]
    pub allowed_origins_file: Option<PathBuf>,
    /// A Host (`name` or `name:port`) allowed besides loopback ones
    /// (repeatable): a server reached by a public name needs it.
    #[arg(long = "allowed-host")]
    pub allowed_hosts: Vec<String>,
    /// A file of allowed Hosts, one a line, added to --allowed-host;
    /// re-read on SIGHUP.
    #[arg(long)]
    pub allowed_hosts_file: Option<PathBuf>,
    /// `NAME=TOKEN` (repeatable): every /mcp request then needs
    /// `Authorization: Bearer TOKEN`, and its sessions are bound to NAME.
    #[arg(long = "bearer-token", value_name = "NAME=TOKEN")]
    pub bearer_tokens: Vec<String>,
    /// A file of `NAME=TOKEN` lines, added to --bearer-token; re-read on
    /// SIGHUP (a token the file no longer gives its NAME ends the streams
    /// it opened; a bad file keeps the tokens in force, and the reason is
    /// logged).
    #[arg(long, value_name = "PATH")]
    pub bearer_token_file: Option<PathBuf>,
    /// Events kept per SSE stream for clients that resume with
    /// Last-Event-ID (0: none, and no priming events).
    #[arg(long, default_value_t = 256)]
    pub event_log: usize,
    /// How long shutdown waits for requests in flight, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub shutdown_deadline_ms: u64,
    /// This node's id in a fleet behind a load balancer: the first two hex
    /// digits of the session, task and basket ids it mints (0-255).
    #[arg(long, default_value_t = 0)]
    pub node_id: u8,
    /// The keys that seal and open 2026-07-28 `requestState`s (the
    /// input-required answers' state): `ID=KEY` lines, ID 0-255 and KEY 64
    /// hex digits (32 bytes), `#` comments; the first line's key seals, the
    /// others still open (a rotation). The nodes of a fleet that share the
    /// file open each other's states. Re-read on SIGHUP (a bad file keeps
    /// the keys in force, and the reason is logged). Without it, a random
    /// key of this process's own.
    #[arg(long, value_name = "PATH")]
    pub request_state_key_file: Option<PathBuf>,
    /// How often an SSE stream gets a keep-alive comment, in milliseconds;
    /// 0 sends none.
    #[arg(long, default_value_t = 15_000)]
    pub keep_alive_ms: u64,
    /// The bounds against hostile clients.
    #[command(flatten)]
    pub bounds: Bounds,
    /// The OAuth resource server.
    #[command(flatten)]
    pub oauth: OAuthFlags,
    /// The fleet's bus (`--redis-url`).
    #[command(flatten)]
    pub bus: BusFlags,
    /// The OTLP export (`--otlp-endpoint`).
    #[command(flatten)]
    pub otel: super::otel::OtelFlags,
}

impl Flags {
    /// `--shutdown-deadline-ms` as a duration.
    pub fn shutdown_deadline(&self) -> Duration {
        Duration::from_millis(self.shutdown_deadline_ms)
    }
}

/// The manager and what SIGHUP reloads into it.
pub struct Built<A: App = Server> {
    /// The manager to mount.
    pub manager: SessionManager<A>,
    /// The token set, when the flags gave any (SIGHUP replaces it).
    pub tokens: Option<BearerTokens>,
    /// The OAuth resource server, when the flags ask for one.
    pub oauth: Option<ResourceServer>,
    /// The connection bounds to serve with (`mcp::serve_with`).
    pub connections: mcp::Connections,
    /// The fleet's bus, when the flags ask for one (SIGHUP re-reads its
    /// keys).
    pub bus: Option<bus::Bus>,
}

impl<A: App> Built<A> {
    /// The paths the router sends to the manager besides `/mcp`: the
    /// resource's metadata (none without a resource server).
    pub fn metadata_paths(&self) -> Vec<String> {
        oauth::metadata_paths(self.oauth.as_ref())
    }
}

/// Builds the manager from the flags (and the files they name, which must
/// be readable and valid at startup).
pub fn build(flags: &Flags) -> Result<Built, Box<dyn std::error::Error>> {
    let app = Server::new(&flags.baskets, flags.node_id)?;
    // The basket updates the application publishes reach the manager's
    // listeners (and, with a bus, every node's).
    let publisher = app.publisher();
    let bus = flags.bus.start(&publisher)?;
    let kept = bus.clone();
    let mut built = build_configured(app, flags, move |b| {
        bus::attach(b.publisher(publisher), bus)
    })?;
    built.bus = kept;
    Ok(built)
}

/// What a server does with a configuration it cannot start with (a setting
/// out of range, a file that cannot be read or parsed): says why on stderr
/// and exits with status 2, as for a flag clap refuses.
pub fn startup_error(error: Box<dyn std::error::Error>) -> ! {
    eprintln!("error: {error}");
    std::process::exit(2)
}

/// [`build`] for another application (the conformance server's).
pub fn build_with<A: App>(app: A, flags: &Flags) -> Result<Built<A>, Box<dyn std::error::Error>> {
    build_configured(app, flags, |b| b)
}

/// [`build_with`], with `configure` applied to the builder last.
pub fn build_configured<A: App>(
    app: A,
    flags: &Flags,
    configure: impl FnOnce(mcp::Builder<A>) -> mcp::Builder<A>,
) -> Result<Built<A>, Box<dyn std::error::Error>> {
    let mut builder = SessionManager::builder(app)
        .node_id(flags.node_id)
        .capacity(flags.max_sessions)
        .idle_timeout(
            (flags.idle_timeout_ms > 0).then(|| Duration::from_millis(flags.idle_timeout_ms)),
        )
        .sse_keep_alive(
            (flags.keep_alive_ms > 0).then(|| Duration::from_millis(flags.keep_alive_ms)),
        )
        .event_log_events(flags.event_log)
        // The app serves 2026-07-28 requests too (they have no session),
        // and its `sleep` runs as a task for clients that ask for tasks.
        .serve_modern(true)
        .tasks(true);
    if let Some(path) = &flags.request_state_key_file {
        let keys = request_state_keys(path)?;
        tracing::info!(file = %path.display(), ?keys, "request-state keys loaded");
        builder = builder.request_state_keys(keys);
    }
    builder = configure(flags.bounds.apply(builder));
    let tokens = match token_set(flags)? {
        Some(pairs) => {
            let tokens = BearerTokens::new(pairs)?;
            builder = builder.authenticator(tokens.clone());
            Some(tokens)
        }
        None => None,
    };
    let (builder, oauth) = flags.oauth.apply(builder)?;
    oauth::prefetch(oauth.as_ref());
    let connections = flags.bounds.connections()?;
    let manager = builder.build()?;
    let (origins, hosts) = allow_lists(flags)?;
    manager.set_allowed_origins(origins);
    manager.set_allowed_hosts(hosts);
    if let Some(tokens) = &tokens {
        tracing::info!(principals = ?names(tokens), "bearer tokens required");
    }
    Ok(Built {
        manager,
        tokens,
        oauth,
        connections,
        bus: None,
    })
}

/// The tokens of the flags and the token file; `None` if neither gives any.
fn token_set(flags: &Flags) -> Result<Option<Vec<(String, String)>>, String> {
    if flags.bearer_tokens.is_empty() && flags.bearer_token_file.is_none() {
        return Ok(None);
    }
    let mut pairs = BearerTokens::parse(&flags.bearer_tokens.join("\n"))
        .map_err(|e| format!("--bearer-token: {e}"))?;
    if let Some(path) = &flags.bearer_token_file {
        let text = read(path)?;
        let more = BearerTokens::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        pairs.extend(more);
    }
    Ok(Some(pairs))
}

/// The keys of a `--request-state-key-file` (never logged: only their ids).
fn request_state_keys(path: &Path) -> Result<RequestStateKeys, String> {
    let text = read(path)?;
    let keys = RequestStateKeys::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    warn_if_shared(path, "the request-state key file");
    Ok(keys)
}

/// Warns if the key file at `path` (`what`) is readable by others than its
/// owner.
pub fn warn_if_shared(path: &Path, what: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).map_or(0, |m| m.permissions().mode());
        if mode & 0o077 != 0 {
            tracing::warn!(
                file = %path.display(),
                mode = format!("{:o}", mode & 0o777),
                "{what} is readable by others than its owner (chmod 600 it)"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = (path, what);
}

/// The allow-lists of the flags and files.
fn allow_lists(flags: &Flags) -> Result<(Vec<String>, Vec<String>), String> {
    let mut origins = flags.allowed_origins.clone();
    if let Some(path) = &flags.allowed_origins_file {
        origins.extend(list_file(
            path,
            |entry| entry.contains("://"),
            "an origin (scheme://host[:port])",
        )?);
    }
    let mut hosts = flags.allowed_hosts.clone();
    if let Some(path) = &flags.allowed_hosts_file {
        hosts.extend(list_file(
            path,
            |entry| !entry.contains('/'),
            "a host (name or name:port)",
        )?);
    }
    Ok((origins, hosts))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// One entry a line, `#` comments and blank lines skipped; every entry must
/// pass `valid` and be one word.
fn list_file(path: &Path, valid: impl Fn(&str) -> bool, what: &str) -> Result<Vec<String>, String> {
    let text = read(path)?;
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let entry = line.trim();
        if entry.is_empty() || entry.starts_with('#') {
            continue;
        }
        if entry.split_whitespace().count() != 1 || !valid(entry) {
            return Err(format!(
                "{} line {}: expected {what}",
                path.display(),
                n + 1
            ));
        }
        entries.push(entry.to_string());
    }
    Ok(entries)
}

fn names(tokens: &BearerTokens) -> Vec<String> {
    tokens
        .principals()
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Re-reads the token, allow-list, request-state key and bus key files on
/// every SIGHUP, for as long as the manager lives. What cannot be read or
/// is invalid is logged (never a token or a key) and the set in force
/// stays.
pub fn reload_on_sighup<A: App>(built: &Built<A>, flags: &Flags) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(error) => {
                tracing::warn!(%error, "no SIGHUP handler: files will not be re-read");
                return;
            }
        };
        let manager = built.manager.clone();
        let tokens = built.tokens.clone();
        let bus = built.bus.clone();
        let flags = flags.clone();
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                reload(&manager, tokens.as_ref(), &flags);
                flags.bus.reload(bus.as_ref());
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (built, flags);
}

/// One reload: each set is swapped in whole, or not at all.
pub fn reload<A: App>(manager: &SessionManager<A>, tokens: Option<&BearerTokens>, flags: &Flags) {
    if let Some(tokens) = tokens {
        let outcome = token_set(flags).and_then(|pairs| {
            tokens
                .replace(pairs.unwrap_or_default())
                .map_err(|e| e.to_string())
        });
        match outcome {
            Ok(count) => {
                tracing::info!(count, principals = ?names(tokens), "bearer tokens reloaded")
            }
            Err(error) => tracing::warn!(%error, "bearer tokens not reloaded; the old set stays"),
        }
    }
    match allow_lists(flags) {
        Ok((origins, hosts)) => {
            tracing::info!(?origins, ?hosts, "allow-lists reloaded");
            manager.set_allowed_origins(origins);
            manager.set_allowed_hosts(hosts);
        }
        Err(error) => tracing::warn!(%error, "allow-lists not reloaded; the old ones stay"),
    }
    if let Some(path) = &flags.request_state_key_file {
        match request_state_keys(path) {
            Ok(keys) => {
                tracing::info!(file = %path.display(), ?keys, "request-state keys reloaded");
                manager.set_request_state_keys(keys);
            }
            Err(error) => {
                tracing::warn!(%error, "request-state keys not reloaded; the old keys stay")
            }
        }
    }
}

/// `GET /metrics`: the registry's counters in Prometheus text.
pub fn metrics<A: App>(manager: &SessionManager<A>) -> Response<mcp::Body> {
    let mut response = Response::new(super::text_body(manager.metrics()));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(sessionreg::metrics::CONTENT_TYPE),
    );
    response
}

/// The answer to a path the example does not serve.
pub fn not_found() -> Response<mcp::Body> {
    let mut response = Response::new(super::text_body("not found\n"));
    *response.status_mut() = http::StatusCode::NOT_FOUND;
    response
}

/// Logs to stderr, at `RUST_LOG` or INFO.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
}

/// Prints the first stdout line the interop scripts and tests wait for.
pub fn announce(addr: SocketAddr) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on http://{addr}/mcp")?;
    stdout.flush()
}

/// Prints the last stdout line, for whoever waits for the server to stop.
/// Nobody may be reading any more (a parent that took the first line and
/// closed the pipe): a closed stdout is no reason to fail a clean stop, so
/// the error is ignored where `println!` would panic.
pub fn announce_stopped(sessions_ended: usize) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ =
        writeln!(stdout, "stopped sessions_ended={sessions_ended}").and_then(|()| stdout.flush());
}

/// Listens for Ctrl-C and SIGTERM from the moment it is called, and
/// resolves on the first of them. Call it before announcing the address: a
/// supervisor may send SIGTERM as soon as it reads that line, and a signal
/// nobody listens for yet would kill the process instead of stopping it.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        async fn next(listener: Option<Signal>) {
            match listener {
                Some(mut listener) => {
                    listener.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let interrupt = signal(SignalKind::interrupt()).ok();
        let terminate = signal(SignalKind::terminate()).ok();
        async move {
            tokio::select! {
                () = next(interrupt) => {}
                () = next(terminate) => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}

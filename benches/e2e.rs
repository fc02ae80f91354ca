//! End to end: MCP session churn over real loopback sockets, with one raw
//! HTTP/1.1 client for every server.
//!
//! Each session is three requests on a keep-alive connection: `initialize`
//! (POST, no session id; the answer's `MCP-Session-Id` header names the
//! session), `notifications/initialized` (POST with the id, 202) and
//! `DELETE` (any 2xx). The client is hand-written blocking HTTP/1.1 over
//! `std::net::TcpStream` (Content-Length and chunked bodies, JSON or SSE), so
//! it costs the same against every server and shares no code with them.
//!
//! It measures, on the server process only:
//! * sessions per second over `--sessions` churned sessions from `--clients`
//!   connections in parallel (threads started on a barrier);
//! * server CPU per session: user + system time from `/proc/<pid>/stat`
//!   across the churn, ÷ sessions;
//! * RSS (`VmRSS` in `/proc/<pid>/status`) before and after the churn, and per
//!   idle session: RSS with `--idle` sessions initialized and left open, minus
//!   RSS before they were opened, ÷ their number; with the server's thread
//!   count and `sessionreg_sessions_live` from `GET /metrics` beside it, and
//!   tokio tasks per idle session where the server exports
//!   `tokio_tasks_alive` (e2e-rmcp's servers do).
//!
//! By default it spawns `target/release/examples/mcp_server` (build it first:
//! `cargo build --release --example mcp_server`); `--server PATH` runs
//! another binary that takes the same flags, and `--url URL --pid PID`
//! measures a server already running (another SDK's, say).
//!
//! `--against PATH` spawns a second server (e.g. `target/release/rmcp_server`)
//! and compares the two in one run: both stay up, and `--rounds R` (default
//! 5) rounds each churn `--sessions` on one server and then on the other
//! (alternating which goes first), so that both see the same machine, load
//! and drift. It prints every round, the medians, and the median of the
//! per-round ratios; then the idle measurement of each.
//!
//! A spawned server gets `RUST_LOG=warn` (`--log FILTER` to change it): both
//! servers compared here install the same `tracing_subscriber::fmt` logger,
//! and at WARN neither formats a line per request or per session (rmcp logs
//! several per session at INFO), so the figures measure the session layers,
//! not log formatting.
//!
//! `cargo bench --bench e2e -- [--sessions N] [--clients N] [--idle N] [--log FILTER]
//!  [--against PATH [--rounds R]]`

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Barrier;
use std::time::{Duration, Instant};

const PROTOCOL: &str = "2025-11-25";

struct Options {
    sessions: usize,
    clients: usize,
    idle: usize,
    server: Option<PathBuf>,
    url: Option<String>,
    pid: Option<u32>,
    log: String,
    against: Option<PathBuf>,
    rounds: usize,
}

fn options() -> Options {
    let mut o = Options {
        sessions: 20_000,
        clients: 2,
        idle: 10_000,
        server: None,
        url: None,
        pid: None,
        log: "warn".into(),
        against: None,
        rounds: 5,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--sessions" => o.sessions = value().parse().expect("--sessions N"),
            "--clients" => o.clients = value().parse().expect("--clients N"),
            "--idle" => o.idle = value().parse().expect("--idle N"),
            "--server" => o.server = Some(value().into()),
            "--url" => o.url = Some(value()),
            "--pid" => o.pid = Some(value().parse().expect("--pid PID")),
            "--log" => o.log = value(),
            "--against" => o.against = Some(value().into()),
            "--rounds" => o.rounds = value().parse().expect("--rounds R"),
            // What cargo bench passes to every harness.
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

/// `http://127.0.0.1:PORT/mcp` → (address, path).
fn split_url(url: &str) -> (SocketAddr, String) {
    let rest = url.strip_prefix("http://").expect("an http:// url");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    (
        host.parse().expect("a numeric host:port"),
        if path.is_empty() {
            "/".into()
        } else {
            path.into()
        },
    )
}

/// The built example next to this bench binary (target/<profile>/deps/..).
fn default_server() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    dir.join("examples").join("mcp_server")
}

fn spawn_server(path: &PathBuf, max_sessions: usize, log: &str) -> (Child, String) {
    let mut child = Command::new(path)
        .env("RUST_LOG", log)
        .args(["--addr", "127.0.0.1:0"])
        .args(["--max-sessions", &max_sessions.to_string()])
        // Long enough that no session expires during the run.
        .args(["--idle-timeout-ms", "3600000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}); build it: cargo build --release --example mcp_server",
                path.display()
            )
        });
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the server's first line");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, url)
}

// ---- /proc ----

fn ticks_per_second() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output();
    out.ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// User and system CPU time of `pid`, in seconds.
fn cpu_seconds(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/pid/stat");
    // Fields after the command name (which may hold spaces) start at ")".
    let fields: Vec<&str> = stat[stat.rfind(')').expect("stat") + 2..]
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 here.
    let ticks = |i: usize| fields[i].parse::<f64>().unwrap() / ticks_per_second();
    (ticks(11), ticks(12))
}

/// A field of `/proc/<pid>/status`, e.g. `VmRSS` (in kB) or `Threads`.
fn status(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/pid/status");
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

fn rss_bytes(pid: u32) -> u64 {
    status(pid, "VmRSS") * 1024
}

// ---- the raw HTTP/1.1 client ----

struct Response {
    status: u16,
    session_id: Option<String>,
    body: Vec<u8>,
}

struct Client {
    addr: SocketAddr,
    host: String,
    path: String,
    conn: Option<BufReader<TcpStream>>,
    request: Vec<u8>,
}

impl Client {
    fn new(addr: SocketAddr, path: &str) -> Client {
        Client {
            addr,
            host: addr.to_string(),
            path: path.to_string(),
            conn: None,
            request: Vec::with_capacity(1024),
        }
    }

    fn send(&mut self, method: &str, path: &str, session: Option<&str>, body: &str) -> Response {
        self.request.clear();
        let r = &mut self.request;
        write!(r, "{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.host).unwrap();
        if !body.is_empty() {
            write!(
                r,
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            )
            .unwrap();
        }
        r.extend_from_slice(b"Accept: application/json, text/event-stream\r\n");
        if let Some(id) = session {
            write!(
                r,
                "Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n"
            )
            .unwrap();
        }
        r.extend_from_slice(b"\r\n");
        r.extend_from_slice(body.as_bytes());
        // One retry on a fresh connection if the server closed an idle one.
        for attempt in 0..2 {
            if self.conn.is_none() {
                let stream = TcpStream::connect(self.addr).expect("connect");
                stream.set_nodelay(true).unwrap();
                self.conn = Some(BufReader::with_capacity(16 * 1024, stream));
            }
            let conn = self.conn.as_mut().unwrap();
            if conn.get_mut().write_all(&self.request).is_ok() {
                match read_response(conn) {
                    Ok((response, keep)) => {
                        if !keep {
                            self.conn = None;
                        }
                        return response;
                    }
                    Err(e) if attempt == 0 => {
                        let _ = e;
                    }
                    Err(e) => panic!("{method} {path}: {e}"),
                }
            }
            self.conn = None;
        }
        panic!("{method} {path}: the server closed the connection twice")
    }

    fn initialize(&mut self) -> String {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL}","capabilities":{{}},"clientInfo":{{"name":"e2e","version":"0"}}}}}}"#
        );
        let path = self.path.clone();
        let r = self.send("POST", &path, None, &body);
        assert_eq!(
            r.status,
            200,
            "initialize: {}",
            String::from_utf8_lossy(&r.body)
        );
        r.session_id
            .expect("initialize answers with MCP-Session-Id")
    }

    fn initialized(&mut self, id: &str) {
        let path = self.path.clone();
        let r = self.send(
            "POST",
            &path,
            Some(id),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        assert!(
            r.status == 202 || r.status == 200,
            "initialized: {}",
            r.status
        );
    }

    fn delete(&mut self, id: &str) {
        let path = self.path.clone();
        let r = self.send("DELETE", &path, Some(id), "");
        // 200 or 204 here; rmcp answers 202.
        assert!((200..300).contains(&r.status), "DELETE: {}", r.status);
    }

    fn session(&mut self) {
        let id = self.initialize();
        self.initialized(&id);
        self.delete(&id);
    }

    fn metrics(&mut self) -> String {
        let r = self.send("GET", "/metrics", None, "");
        String::from_utf8_lossy(&r.body).into_owned()
    }
}

/// Reads one response; returns it and whether the connection stays open.
fn read_response(conn: &mut BufReader<TcpStream>) -> std::io::Result<(Response, bool)> {
    let mut line = String::new();
    if conn.read_line(&mut line)? == 0 {
        return Err(std::io::Error::other("closed before the status line"));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let (mut length, mut chunked, mut keep, mut session_id) = (None, false, true, None);
    loop {
        line.clear();
        conn.read_line(&mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<usize>().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            keep = !value.eq_ignore_ascii_case("close");
        } else if name.eq_ignore_ascii_case("mcp-session-id") {
            session_id = Some(value.to_string());
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            conn.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| std::io::Error::other(format!("bad chunk size {line:?}")))?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    line.clear();
                    conn.read_line(&mut line)?;
                    if line.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            conn.read_exact(&mut body[start..])?;
            line.clear();
            conn.read_line(&mut line)?;
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        conn.read_exact(&mut body)?;
    } else if status != 204 && status != 304 && !(100..200).contains(&status) {
        conn.read_to_end(&mut body)?;
        keep = false;
    }
    Ok((
        Response {
            status,
            session_id,
            body,
        },
        keep,
    ))
}

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Churns `n` sessions over `clients` connections started on a barrier;
/// returns the wall time.
fn churn(addr: SocketAddr, path: &str, clients: usize, n: usize) -> Duration {
    let barrier = Barrier::new(clients + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let barrier = &barrier;
                let count = n / clients + usize::from(c < n % clients);
                s.spawn(move || {
                    let mut client = Client::new(addr, path);
                    barrier.wait();
                    for _ in 0..count {
                        client.session();
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().expect("a client failed");
        }
        start.elapsed()
    })
}

/// A server under measurement.
struct Server {
    name: String,
    child: Option<Child>,
    addr: SocketAddr,
    path: String,
    pid: u32,
}

impl Server {
    fn spawn(path: &PathBuf, o: &Options) -> Server {
        let (child, url) = spawn_server(path, o.idle + 1_000, &o.log);
        let pid = child.id();
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Server::at(&url, pid, Some(child), name)
    }

    fn at(url: &str, pid: u32, child: Option<Child>, name: String) -> Server {
        let (addr, path) = split_url(url);
        println!("server {name}: {url} (pid {pid})");
        Server {
            name,
            child,
            addr,
            path,
            pid,
        }
    }

    fn stop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            // SIGTERM: a graceful shutdown, as the example supports.
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One churn's figures, on the server alone.
#[derive(Clone, Copy)]
struct Churn {
    rate: f64,
    user_us: f64,
    system_us: f64,
    utilisation: f64,
}

impl Churn {
    fn cpu_us(&self) -> f64 {
        self.user_us + self.system_us
    }
}

fn measure_churn(server: &Server, o: &Options) -> Churn {
    let before = cpu_seconds(server.pid);
    let wall = churn(server.addr, &server.path, o.clients, o.sessions);
    let after = cpu_seconds(server.pid);
    let n = o.sessions as f64;
    let (user, system) = (after.0 - before.0, after.1 - before.1);
    Churn {
        rate: n / wall.as_secs_f64(),
        user_us: user / n * 1e6,
        system_us: system / n * 1e6,
        utilisation: 100.0 * (user + system) / wall.as_secs_f64(),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn print_churn(name: &str, runs: &[Churn]) {
    let med = |f: fn(&Churn) -> f64| median(runs.iter().map(f).collect());
    println!(
        "| {name} | {:.0} | {:.1} | {:.1} / {:.1} | {:.0}% |",
        med(|c| c.rate),
        med(Churn::cpu_us),
        med(|c| c.user_us),
        med(|c| c.system_us),
        med(|c| c.utilisation),
    );
}

/// Idle sessions: opened (initialize + initialized) and left open, then
/// deleted.
fn measure_idle(server: &Server, idle: usize) {
    let pid = server.pid;
    let mut client = Client::new(server.addr, &server.path);
    let threads_before = status(pid, "Threads");
    // Servers that export it (e2e-rmcp's): the tokio runtime's live tasks.
    let tasks_before = metric(&client.metrics(), "tokio_tasks_alive");
    let rss_idle_before = rss_bytes(pid);
    let ids: Vec<String> = (0..idle)
        .map(|_| {
            let id = client.initialize();
            client.initialized(&id);
            id
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let rss_idle = rss_bytes(pid);
    let scraped = client.metrics();
    let live = metric(&scraped, "sessionreg_sessions_live");
    let tasks_idle = metric(&scraped, "tokio_tasks_alive");
    let threads_idle = status(pid, "Threads");
    for id in &ids {
        client.delete(id);
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss_end = rss_bytes(pid);
    let live_end = metric(&client.metrics(), "sessionreg_sessions_live");
    println!(
        "\nidle, {}: {idle} sessions opened and left open on one connection",
        server.name
    );
    println!("| metric | value |");
    println!("|---|---:|");
    println!(
        "| RSS per idle session | {:.0} bytes |",
        rss_idle.saturating_sub(rss_idle_before) as f64 / idle as f64
    );
    println!(
        "| RSS before / with idle sessions / after deleting them | {:.1} / {:.1} / {:.1} MiB |",
        mib(rss_idle_before),
        mib(rss_idle),
        mib(rss_end)
    );
    println!("| server threads before / with idle sessions | {threads_before} / {threads_idle} |");
    if let (Some(before), Some(with)) = (tasks_before, tasks_idle) {
        println!(
            "| tokio tasks per idle session ({before} before, {with} with them) | {:.2} |",
            (with - before) / idle as f64
        );
    }
    println!(
        "| sessionreg_sessions_live with idle / after | {} / {} |",
        live.map_or("n/a".into(), |v| v.to_string()),
        live_end.map_or("n/a".into(), |v| v.to_string())
    );
}

fn main() {
    let o = options();
    let mut servers = vec![match (&o.url, o.pid) {
        (Some(url), Some(pid)) => Server::at(url, pid, None, url.clone()),
        (None, None) => Server::spawn(&o.server.clone().unwrap_or_else(default_server), &o),
        _ => panic!("--url and --pid go together"),
    }];
    if let Some(path) = &o.against {
        servers.push(Server::spawn(path, &o));
    }
    println!("RUST_LOG={} for spawned servers", o.log);
    let rss_start: Vec<u64> = servers.iter().map(|s| rss_bytes(s.pid)).collect();

    // Warm up: connections, thread pools, allocator arenas.
    for server in &servers {
        churn(server.addr, &server.path, o.clients, 1_000.min(o.sessions));
    }
    let rss_before: Vec<u64> = servers.iter().map(|s| rss_bytes(s.pid)).collect();

    // One churn per server per round; with two, the order alternates.
    let rounds = if servers.len() > 1 {
        o.rounds.max(1)
    } else {
        1
    };
    let mut runs: Vec<Vec<Churn>> = vec![Vec::new(); servers.len()];
    println!(
        "\nchurn: {} sessions per round (initialize, notifications/initialized, DELETE), {} client connections, {rounds} round(s)",
        o.sessions, o.clients
    );
    println!("| round | server | sessions/s | server CPU per session | of which user / system | CPU use |");
    println!("|---:|---|---:|---:|---:|---:|");
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..servers.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let c = measure_churn(&servers[i], &o);
            println!(
                "| {} | {} | {:.0} | {:.1} µs | {:.1} / {:.1} µs | {:.0}% |",
                round + 1,
                servers[i].name,
                c.rate,
                c.cpu_us(),
                c.user_us,
                c.system_us,
                c.utilisation
            );
            runs[i].push(c);
        }
    }
    println!("\nmedians over the rounds:");
    println!("| server | sessions/s | server CPU per session (µs) | of which user / system (µs) | CPU use (of one core) |");
    println!("|---|---:|---:|---:|---:|");
    for (server, runs) in servers.iter().zip(&runs) {
        print_churn(&server.name, runs);
    }
    if servers.len() == 2 {
        // Each round's ratio, then the median: drift between rounds cancels.
        let ratio = |f: fn(&Churn) -> f64| {
            median(
                runs[0]
                    .iter()
                    .zip(&runs[1])
                    .map(|(a, b)| f(a) / f(b))
                    .collect(),
            )
        };
        println!(
            "\n{} ÷ {}, median of the per-round ratios: sessions/s {:.2}×, server CPU per session {:.2}× (user {:.2}×, system {:.2}×)",
            servers[0].name,
            servers[1].name,
            ratio(|c| c.rate),
            ratio(Churn::cpu_us),
            ratio(|c| c.user_us),
            ratio(|c| c.system_us),
        );
    }
    for (i, server) in servers.iter().enumerate() {
        println!(
            "RSS of {}: at start / before churn / after churn {:.1} / {:.1} / {:.1} MiB",
            server.name,
            mib(rss_start[i]),
            mib(rss_before[i]),
            mib(rss_bytes(server.pid))
        );
    }

    for server in &servers {
        measure_idle(server, o.idle);
    }
    for server in &mut servers {
        server.stop();
    }
}

//! The servers under measurement: spawned (or found already running) and
//! stopped, and what `/proc/<pid>` says about them.

use crate::options::{Options, Spec};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server under measurement.
pub struct Server {
    /// Its binary's file name (or its URL, for one already running).
    pub name: String,
    /// The process, if spawned here.
    child: Option<Child>,
    /// Where it listens.
    pub addr: SocketAddr,
    /// The MCP endpoint's path.
    pub path: String,
    /// Its process id, for `/proc`.
    pub pid: u32,
}

impl Server {
    /// Spawns the server `spec` with room for the idle sessions (or the
    /// live tasks of `--tasks`), and `extra` flags after the common ones.
    pub fn spawn(spec: &Spec, o: &Options, extra: &[String]) -> Server {
        let room = o.idle.max(o.tasks.unwrap_or(0)) + 1_000;
        let (child, url) = spawn_server(spec, room, &o.log, extra);
        let pid = child.id();
        let mut name = spec.name.clone();
        for flag in extra {
            name = format!("{name} {flag}");
        }
        Server::at(&url, pid, Some(child), name)
    }

    /// The server at `url` with process id `pid` (spawned here if `child`).
    pub fn at(url: &str, pid: u32, child: Option<Child>, name: String) -> Server {
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

    /// Stops a server spawned here (SIGTERM, then SIGKILL after 10 s);
    /// once: the child is reaped and forgotten.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let child = &mut child;
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

impl Drop for Server {
    /// A run that stops early (a wrong answer is a panic) leaves no server
    /// behind: unwinding drops the servers, and each is stopped.
    fn drop(&mut self) {
        self.stop();
    }
}

/// The built example next to this bench binary (target/<profile>/deps/..).
pub fn default_server() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    dir.join("examples").join("mcp_server")
}

/// Starts the server `spec` on a free loopback port; returns it and the
/// URL its first stdout line names.
fn spawn_server(spec: &Spec, max_sessions: usize, log: &str, extra: &[String]) -> (Child, String) {
    let path = &spec.program;
    let mut child = Command::new(path)
        .args(&spec.args)
        .env("RUST_LOG", log)
        .args(["--addr", "127.0.0.1:0"])
        .args(["--max-sessions", &max_sessions.to_string()])
        // Long enough that no session expires during the run.
        .args(["--idle-timeout-ms", "3600000"])
        .args(extra)
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

// ---- /proc ----

/// Clock ticks per second, the unit of `/proc/<pid>/stat`'s CPU times.
fn ticks_per_second() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output();
    out.ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// User and system CPU time of `pid`, in seconds.
pub fn cpu_seconds(pid: u32) -> (f64, f64) {
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
pub fn status(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/pid/status");
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// Resident set size of `pid`, in bytes.
pub fn rss_bytes(pid: u32) -> u64 {
    status(pid, "VmRSS") * 1024
}

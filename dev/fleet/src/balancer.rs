//! The load balancer in front of the fleet: nginx or HAProxy from PATH,
//! configured by `deploy/render.sh`, listening on a free loopback port; and
//! the clients that reach the fleet through it.

use crate::process::{repo_root, Guard, WorkDir};
use mcp_test_client::{Client, Http, PROTOCOL_VERSION};
use std::fmt;
use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// Which balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// nginx (open source): passive health only.
    Nginx,
    /// HAProxy: active health checks.
    Haproxy,
}

impl Kind {
    /// The program's name, and `render.sh`'s KIND.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Nginx => "nginx",
            Kind::Haproxy => "haproxy",
        }
    }

    /// The Debian package that installs it.
    pub fn package(self) -> &'static str {
        self.name()
    }

    /// The program on PATH (or in /usr/sbin and /sbin, where Debian puts
    /// both and which a non-root PATH often lacks).
    pub fn locate(self) -> Result<PathBuf, String> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
            .map(|dir| dir.join(self.name()))
            .find(|candidate| candidate.is_file())
            .ok_or_else(|| {
                format!(
                    "{} is not installed (not on PATH, nor in /usr/sbin); \
                     on Debian or Ubuntu: sudo apt-get install -y {}",
                    self.name(),
                    self.package()
                )
            })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = String;

    fn from_str(s: &str) -> Result<Kind, String> {
        match s {
            "nginx" => Ok(Kind::Nginx),
            "haproxy" => Ok(Kind::Haproxy),
            other => Err(format!("unknown balancer {other:?}: nginx or haproxy")),
        }
    }
}

/// A running balancer. Dropping it kills it.
pub struct Balancer {
    /// Which one.
    pub kind: Kind,
    /// Where it listens (loopback).
    pub addr: SocketAddr,
    /// Held to be killed on drop.
    _process: Guard,
}

impl Balancer {
    /// Renders the configuration for `nodes` (node i at `nodes[i]`) into
    /// `dir`, routing a `tools/call` by the handle in each
    /// `Mcp-Param-<Name>` header of `route_params` (`MCP_ROUTE_PARAMS`),
    /// starts the balancer on a free loopback port and waits until it
    /// accepts connections.
    pub fn start(
        kind: Kind,
        nodes: &[SocketAddr],
        route_params: &[&str],
        dir: &WorkDir,
    ) -> Result<Balancer, String> {
        let program = kind.locate()?;
        // A free port, found by binding port 0: another process could take
        // it before the balancer binds it, so a start that fails is tried
        // again on a new port.
        let mut last_error = String::new();
        for _attempt in 0..5 {
            let port = free_port()?;
            let config = render(kind, port, nodes, route_params, dir.path())?;
            let mut command = match kind {
                Kind::Nginx => {
                    let mut c = Command::new(&program);
                    c.arg("-p")
                        .arg(dir.path())
                        .arg("-c")
                        .arg(&config)
                        .args(["-g", "daemon off;"]);
                    c
                }
                Kind::Haproxy => {
                    let mut c = Command::new(&program);
                    c.arg("-f").arg(&config);
                    c
                }
            };
            let log_path = dir.path().join(format!("{}.log", kind.name()));
            let log = File::create(&log_path).map_err(|e| format!("{kind} log: {e}"))?;
            let err = log.try_clone().map_err(|e| format!("{kind} log: {e}"))?;
            command.stdin(Stdio::null()).stdout(log).stderr(err);
            let mut process = Guard::spawn(command, kind.name())
                .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            match wait_listening(&mut process, addr) {
                Ok(()) => {
                    return Ok(Balancer {
                        kind,
                        addr,
                        _process: process,
                    })
                }
                Err(error) => {
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    last_error = format!("{error}; its log:\n{log}");
                }
            }
        }
        Err(format!("{kind} did not start: {last_error}"))
    }

    /// The MCP endpoint through the balancer.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// A client of the fleet through the balancer, on `http`'s pool,
    /// introducing itself as `name`, with `MCP-Protocol-Version` on every
    /// request in a session (as a client after initialization sends it).
    pub fn client(&self, http: &Http, name: &str) -> Client {
        Client::with_http(http.clone(), &self.url())
            .named(name)
            .with_protocol_version(PROTOCOL_VERSION)
    }
}

/// The HTTP client pool for the fleet's clients: an idle connection is
/// closed after 30 s, before either balancer closes it (HAProxy's
/// `timeout http-keep-alive` is 60 s, nginx's default `keepalive_timeout`
/// 75 s), so no request goes out on a connection the balancer is closing.
pub fn http() -> Http {
    mcp_test_client::http_builder()
        .pool_idle_timeout(Duration::from_secs(30))
        .build_http()
}

/// `MCP_ROUTE_PARAMS=... deploy/render.sh KIND PORT ADDR...` into
/// `dir/KIND.conf`.
fn render(
    kind: Kind,
    port: u16,
    nodes: &[SocketAddr],
    route_params: &[&str],
    dir: &Path,
) -> Result<PathBuf, String> {
    let script = repo_root().join("deploy/render.sh");
    let output = Command::new("bash")
        .env("MCP_ROUTE_PARAMS", route_params.join(","))
        .arg(&script)
        .arg(kind.name())
        .arg(port.to_string())
        .args(nodes.iter().map(ToString::to_string))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !output.status.success() {
        return Err(format!(
            "render.sh failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let config = dir.join(format!("{}.conf", kind.name()));
    std::fs::write(&config, &output.stdout).map_err(|e| format!("writing the config: {e}"))?;
    Ok(config)
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}

/// Waits until `addr` accepts a connection, or the process exits, or a
/// generous bound passes.
fn wait_listening(process: &mut Guard, addr: SocketAddr) -> Result<(), String> {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = process.try_wait() {
            return Err(format!("{} exited ({status})", process.what()));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if Instant::now() >= until {
            return Err(format!("{} not listening on {addr}", process.what()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

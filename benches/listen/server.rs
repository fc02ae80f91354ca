//! A server under measurement: spawned afresh, stopped, and what `/proc`
//! says about it.

use crate::options::Spec;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub name: String,
    child: Option<Child>,
    pub addr: SocketAddr,
    pub pid: u32,
}

impl Server {
    /// Spawns `spec` on a free loopback port (`--addr 127.0.0.1:0` after
    /// its own arguments); its first stdout line must be `listening on
    /// http://ADDR/mcp`.
    pub fn spawn(spec: &Spec) -> Server {
        let mut child = Command::new(&spec.program)
            .args(&spec.args)
            .args(["--addr", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {} ({e})", spec.program.display()));
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line).expect("the server's first line");
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("{}: unexpected first line {line:?}", spec.name))
            .parse()
            .expect("a numeric host:port");
        // Whatever else it prints is read and dropped, so a full pipe never
        // stalls it.
        std::thread::spawn(move || {
            let mut sink = [0u8; 4096];
            while matches!(out.read(&mut sink), Ok(n) if n > 0) {}
        });
        let pid = child.id();
        eprintln!("server {}: {addr} (pid {pid})", spec.name);
        Server {
            name: spec.name.clone(),
            child: Some(child),
            addr,
            pid,
        }
    }

    /// SIGTERM, then SIGKILL after 10 s; once.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Resident set size, bytes (`VmRSS`).
    pub fn rss(&self) -> u64 {
        status(self.pid, "VmRSS") * 1024
    }

    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// User + system CPU time, seconds (`/proc/<pid>/stat`).
    pub fn cpu(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).expect("stat");
        let fields: Vec<&str> = stat[stat.rfind(')').expect("stat") + 2..]
            .split_whitespace()
            .collect();
        let ticks = |i: usize| fields[i].parse::<f64>().expect("ticks");
        (ticks(11) + ticks(12)) / clock_ticks()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn status(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/pid/status");
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

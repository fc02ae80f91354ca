//! One node of the fleet: an `mcp_server` process with its node id, its
//! addresses, its metrics, and the ways it ends (killed, or drained).

use crate::process::Guard;
use http::Method;
use mcp_test_client::{fetch_text, Http};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running node.
pub struct Node {
    /// Its node id: the first two hex digits of the ids it mints.
    pub id: u8,
    /// Where it serves `/mcp`, `/metrics` and `/health/*`.
    pub addr: SocketAddr,
    /// Its admin endpoint (`POST /drain`).
    pub admin: SocketAddr,
    process: Guard,
    /// Its stdout lines after the first two (e.g. `stopped ...`).
    output: Arc<Mutex<Vec<String>>>,
    /// The thread reading them, until the node's stdout closes.
    reader: Option<std::thread::JoinHandle<()>>,
    /// Its log file.
    log: std::path::PathBuf,
}

impl Node {
    /// Starts `binary --node-id id` on loopback ports of its choosing, its
    /// log (stderr) in `log_dir`, with `extra` flags; returns once it
    /// listens.
    pub fn start(binary: &Path, id: u8, log_dir: &Path, extra: &[String]) -> Result<Node, String> {
        let log_path = log_dir.join(format!("node-{id}.log"));
        let log = File::create(&log_path).map_err(|e| format!("node {id}: log file: {e}"))?;
        let mut command = Command::new(binary);
        command
            .args(["--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"])
            .args(["--node-id", &id.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        let mut process = Guard::spawn(command, &format!("node {id}"))
            .map_err(|e| format!("node {id}: cannot start {}: {e}", binary.display()))?;
        let stdout = process.take_stdout().expect("stdout is piped");
        // The first two lines give the addresses; a thread keeps reading
        // the rest so the node never blocks on a full pipe.
        let (tx, rx) = std::sync::mpsc::channel();
        let output = Arc::new(Mutex::new(Vec::new()));
        let rest = Arc::clone(&output);
        let reader = std::thread::spawn(move || {
            for (n, line) in BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .enumerate()
            {
                if n < 2 {
                    let _ = tx.send(line);
                } else {
                    rest.lock().unwrap().push(line);
                }
            }
        });
        let addr_after = |prefix: &str| -> Result<SocketAddr, String> {
            let line = rx
                .recv_timeout(Duration::from_secs(60))
                .map_err(|_| format!("node {id} did not report its address"))?;
            line.strip_prefix(prefix)
                .and_then(|rest| rest.split('/').next())
                .and_then(|addr| addr.parse().ok())
                .ok_or_else(|| format!("node {id}: unexpected line {line:?}"))
        };
        let addr = addr_after("listening on http://")?;
        let admin = addr_after("admin on http://")?;
        Ok(Node {
            id,
            addr,
            admin,
            process,
            output,
            reader: Some(reader),
            log: log_path,
        })
    }

    /// The node's `/mcp` URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Scrapes `/metrics`.
    pub async fn metrics(&self, http: &Http) -> Result<Metrics, String> {
        let url = format!("http://{}/metrics", self.addr);
        match fetch_text(http, Method::GET, &url).await {
            Ok((status, text)) if status.is_success() => Ok(Metrics::parse(&text)),
            Ok((status, _)) => Err(format!("node {}: /metrics answered {status}", self.id)),
            Err(error) => Err(format!("node {}: /metrics: {error}", self.id)),
        }
    }

    /// Starts draining through the admin endpoint.
    pub async fn drain(&self, http: &Http) -> Result<(), String> {
        let url = format!("http://{}/drain", self.admin);
        match fetch_text(http, Method::POST, &url).await {
            Ok((status, _)) if status.is_success() => Ok(()),
            Ok((status, body)) => Err(format!("node {}: drain answered {status}: {body}", self.id)),
            Err(error) => Err(format!("node {}: drain: {error}", self.id)),
        }
    }

    /// Sends SIGHUP: the node re-reads its token, allow-list and key files
    /// (and logs one line for each).
    pub fn reload(&self) -> Result<(), String> {
        self.process
            .signal(libc::SIGHUP)
            .map_err(|e| format!("node {}: SIGHUP: {e}", self.id))
    }

    /// Its log (stderr) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Starts draining with SIGUSR1.
    pub fn drain_by_signal(&self) -> Result<(), String> {
        self.process
            .signal(libc::SIGUSR1)
            .map_err(|e| format!("node {}: SIGUSR1: {e}", self.id))
    }

    /// Kills it at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) -> Result<(), String> {
        self.process
            .kill()
            .map(drop)
            .map_err(|e| format!("node {}: kill: {e}", self.id))
    }

    /// Waits for the node to exit by itself, up to `bound`; its exit
    /// status, or `None` if it is still running then.
    pub async fn wait_exit(&mut self, bound: Duration) -> Option<ExitStatus> {
        let until = tokio::time::Instant::now() + bound;
        loop {
            if let Ok(Some(status)) = self.process.try_wait() {
                // Its stdout is closed now: every line it printed is read
                // once the reader sees the end.
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
                return Some(status);
            }
            if tokio::time::Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// What it printed after its addresses (e.g. `stopped sessions_ended=0`);
    /// complete once [`wait_exit`](Self::wait_exit) has seen it exit.
    pub fn output(&self) -> Vec<String> {
        self.output.lock().unwrap().clone()
    }
}

/// The numbers a node's `/metrics` shows that the fleet reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics {
    /// `sessionreg_node_id`.
    pub node_id: Option<u64>,
    /// `sessionreg_sessions_created_total`.
    pub created: u64,
    /// `sessionreg_sessions_live`.
    pub live: u64,
    /// `sessionreg_sessions_terminated_total`, by reason.
    pub terminated: BTreeMap<String, u64>,
    /// `mcp_server_requests_total`: requests to `/mcp`.
    pub requests: u64,
    /// `mcp_server_foreign_ids_total`, by owner: requests carrying another
    /// node's session id.
    pub foreign: BTreeMap<u8, u64>,
    /// `mcp_server_foreign_task_ids_total`, by owner: `tasks/*` requests
    /// naming another node's task id.
    pub foreign_tasks: BTreeMap<u8, u64>,
    /// `mcp_server_foreign_handle_ids_total`, by owner: `tools/call`s
    /// naming another node's basket in `Mcp-Param-Basket`.
    pub foreign_handles: BTreeMap<u8, u64>,
    /// `sessionreg_handles_minted_total`: baskets made.
    pub handles_minted: u64,
    /// `sessionreg_request_state_rejected_total`, by cause.
    pub states_rejected: BTreeMap<String, u64>,
    /// `sessionreg_tasks_created_total`.
    pub tasks_created: u64,
    /// `sessionreg_tasks_running`: tasks whose work has not ended.
    pub tasks_running: u64,
    /// `sessionreg_tasks_ended_total`, by outcome (`completed`, `failed`,
    /// `cancelled`, `expired`, `abandoned`).
    pub tasks_ended: BTreeMap<String, u64>,
}

impl Metrics {
    /// Reads the Prometheus text of a node.
    pub fn parse(text: &str) -> Metrics {
        let mut metrics = Metrics::default();
        for (name, value) in mcp_test_client::samples(text) {
            // Counters and gauges of whole numbers (f64 holds them exactly).
            let value = value as u64;
            let (base, label) = match name.split_once('{') {
                Some((base, rest)) => (
                    base,
                    rest.split_once("=\"")
                        .map(|(_, v)| v.trim_end_matches("\"}")),
                ),
                None => (name.as_str(), None),
            };
            match (base, label) {
                ("sessionreg_node_id", None) => metrics.node_id = Some(value),
                ("sessionreg_sessions_created_total", None) => metrics.created = value,
                ("sessionreg_sessions_live", None) => metrics.live = value,
                ("sessionreg_sessions_terminated_total", Some(reason)) => {
                    metrics.terminated.insert(reason.to_string(), value);
                }
                ("mcp_server_requests_total", None) => metrics.requests = value,
                ("mcp_server_foreign_ids_total", Some(owner)) => {
                    if let Ok(owner) = owner.parse() {
                        metrics.foreign.insert(owner, value);
                    }
                }
                ("mcp_server_foreign_task_ids_total", Some(owner)) => {
                    if let Ok(owner) = owner.parse() {
                        metrics.foreign_tasks.insert(owner, value);
                    }
                }
                ("mcp_server_foreign_handle_ids_total", Some(owner)) => {
                    if let Ok(owner) = owner.parse() {
                        metrics.foreign_handles.insert(owner, value);
                    }
                }
                ("sessionreg_handles_minted_total", None) => metrics.handles_minted = value,
                ("sessionreg_request_state_rejected_total", Some(cause)) => {
                    metrics.states_rejected.insert(cause.to_string(), value);
                }
                ("sessionreg_tasks_created_total", None) => metrics.tasks_created = value,
                ("sessionreg_tasks_running", None) => metrics.tasks_running = value,
                ("sessionreg_tasks_ended_total", Some(outcome)) => {
                    metrics.tasks_ended.insert(outcome.to_string(), value);
                }
                _ => {}
            }
        }
        metrics
    }

    /// Sessions ended, all reasons.
    pub fn terminated_total(&self) -> u64 {
        self.terminated.values().sum()
    }

    /// Requests that carried a session id of one of `owners`.
    pub fn foreign_from(&self, owners: impl Fn(u8) -> bool) -> u64 {
        sum_of(&self.foreign, owners)
    }

    /// `tasks/*` requests that named a task id of one of `owners`.
    pub fn foreign_tasks_from(&self, owners: impl Fn(u8) -> bool) -> u64 {
        sum_of(&self.foreign_tasks, owners)
    }

    /// `tools/call`s that named a basket of one of `owners`.
    pub fn foreign_handles_from(&self, owners: impl Fn(u8) -> bool) -> u64 {
        sum_of(&self.foreign_handles, owners)
    }

    /// `requestState`s refused, all causes.
    pub fn states_rejected_total(&self) -> u64 {
        self.states_rejected.values().sum()
    }

    /// Tasks ended with `outcome` (`completed`, ...).
    pub fn tasks_ended(&self, outcome: &str) -> u64 {
        self.tasks_ended.get(outcome).copied().unwrap_or(0)
    }
}

fn sum_of(by_owner: &BTreeMap<u8, u64>, owners: impl Fn(u8) -> bool) -> u64 {
    by_owner
        .iter()
        .filter(|(&owner, _)| owners(owner))
        .map(|(_, &n)| n)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::Metrics;

    #[test]
    fn metrics_read_sessions_tasks_and_foreign_ids_by_owner() {
        let text = "sessionreg_node_id 2\n\
                    sessionreg_sessions_created_total 5\n\
                    sessionreg_sessions_live 1\n\
                    sessionreg_sessions_terminated_total{reason=\"deleted\"} 4\n\
                    sessionreg_tasks_created_total 7\n\
                    sessionreg_tasks_running 2\n\
                    sessionreg_tasks_ended_total{outcome=\"completed\"} 5\n\
                    mcp_server_requests_total 30\n\
                    mcp_server_foreign_ids_total{owner=\"1\"} 3\n\
                    mcp_server_foreign_task_ids_total{owner=\"1\"} 4\n\
                    mcp_server_foreign_task_ids_total{owner=\"9\"} 1\n\
                    mcp_server_foreign_handle_ids_total{owner=\"0\"} 6\n\
                    sessionreg_handles_minted_total 8\n\
                    sessionreg_request_state_rejected_total{cause=\"unknown_key\"} 2\n\
                    sessionreg_request_state_rejected_total{cause=\"replayed\"} 1\n";
        let m = Metrics::parse(text);
        assert_eq!(m.node_id, Some(2));
        assert_eq!((m.created, m.live, m.terminated_total()), (5, 1, 4));
        assert_eq!((m.tasks_created, m.tasks_running), (7, 2));
        assert_eq!(
            (m.tasks_ended("completed"), m.tasks_ended("failed")),
            (5, 0)
        );
        assert_eq!(m.requests, 30);
        assert_eq!(m.foreign_from(|o| o == 1), 3);
        assert_eq!(m.foreign_tasks_from(|o| o == 1), 4);
        assert_eq!(m.foreign_tasks_from(|_| true), 5);
        assert_eq!(m.foreign_handles_from(|o| o == 0), 6);
        assert_eq!(m.handles_minted, 8);
        assert_eq!(m.states_rejected.get("unknown_key"), Some(&2));
        assert_eq!(m.states_rejected_total(), 3);
    }
}

//! A fleet of `examples/mcp_server` nodes behind a real nginx or HAProxy,
//! all on loopback: what `examples/fleet` (the demo) and `tests/fleet.rs`
//! (its test) both run.
//!
//! * [`Fleet`]: N nodes ([`Node`], node i with `--node-id i`) and a
//!   [`Balancer`] in front of them, configured by `deploy/render.sh`, in a
//!   work directory of their own (configuration, logs, nginx's prefix).
//! * [`Node`]: one `mcp_server` process, its addresses, its `/metrics`
//!   ([`Metrics`]), and the ways it ends (killed, drained by its admin
//!   endpoint or by SIGUSR1).
//! * [`process`]: child processes that cannot outlive their owner, however
//!   it ends, and the `mcp_server` binary, built by cargo on demand.
//!
//! Everything listens on loopback ports picked at run time. The MCP client
//! is the workspace's one (`mcp-test-client`); [`Balancer::client`] makes
//! one that reaches the fleet through the balancer, on the pool of [`http()`].
//!
//! A dev-dependency of the workspace only (never published).

mod balancer;
mod node;
pub mod process;
pub mod redis;

pub use balancer::{http, Balancer, Kind};
pub use node::{Metrics, Node};
pub use process::WorkDir;
pub use redis::RedisServer;

use std::path::{Path, PathBuf};

/// Nodes behind a balancer. Dropping it kills every process (balancer
/// first), then removes the work directory, unless the thread is panicking:
/// then the directory is kept (for its logs) and its path printed.
pub struct Fleet {
    nodes: Vec<Node>,
    balancer: Option<Balancer>,
    dir: Option<WorkDir>,
}

impl Fleet {
    /// Starts `n` nodes (ids `0..n`, at most 256) of the `mcp_server`
    /// binary ([`process::server_binary`]), each with `flags`, and `kind` in
    /// front of them; returns once all of them listen.
    pub fn start(kind: Kind, n: usize, flags: &[String]) -> Result<Fleet, String> {
        if n > 256 {
            return Err(format!("{n} nodes: node ids are 0..=255"));
        }
        let binary = process::server_binary()?;
        let dir = WorkDir::new(&format!("fleet-{kind}")).map_err(|e| format!("work dir: {e}"))?;
        let mut fleet = Fleet {
            nodes: Vec::new(),
            balancer: None,
            dir: None,
        };
        for id in 0..n {
            let node = Node::start(&binary, id as u8, dir.path(), flags)?;
            fleet.nodes.push(node);
        }
        let addrs: Vec<_> = fleet.nodes.iter().map(|node| node.addr).collect();
        fleet.balancer = Some(Balancer::start(kind, &addrs, &dir)?);
        fleet.dir = Some(dir);
        Ok(fleet)
    }

    /// The nodes, node i at index i.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Node `id`, to kill or wait for.
    pub fn node_mut(&mut self, id: u8) -> &mut Node {
        &mut self.nodes[usize::from(id)]
    }

    /// The balancer in front of them.
    pub fn balancer(&self) -> &Balancer {
        self.balancer.as_ref().expect("started with the fleet")
    }

    /// The work directory: configuration and logs.
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().expect("made with the fleet").path()
    }

    /// Stops every process; then keeps the work directory if `keep_logs`
    /// (and returns its path), or removes it.
    pub fn stop(mut self, keep_logs: bool) -> Option<PathBuf> {
        self.stop_processes();
        let dir = self.dir.take()?;
        keep_logs.then(|| dir.keep())
    }

    /// The processes go first (their guards kill them), then the directory
    /// can.
    fn stop_processes(&mut self) {
        self.balancer.take();
        self.nodes.clear();
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.stop_processes();
        if let Some(dir) = self.dir.take() {
            if std::thread::panicking() {
                eprintln!("fleet logs kept in {}", dir.keep().display());
            }
        }
    }
}

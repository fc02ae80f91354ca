//! A fleet of `examples/mcp_server` nodes behind a real nginx or HAProxy,
//! all on loopback: what `examples/fleet` (the demo) and `tests/fleet.rs`
//! (its test) both run.
//!
//! * [`Fleet`]: N nodes ([`Node`], node i with `--node-id i`, all sharing
//!   one `--request-state-key-file`) and a [`Balancer`] in front of them,
//!   configured by `deploy/render.sh` to route baskets by their
//!   `Mcp-Param-Basket` header ([`ROUTE_PARAMS`]), in a work directory of
//!   their own (configuration, key file, logs, nginx's prefix).
//! * [`Node`]: one `mcp_server` process, its addresses, its `/metrics`
//!   ([`Metrics`]), and the ways it ends (killed, drained by its admin
//!   endpoint or by SIGUSR1).
//! * [`calls`]: 2026-07-28 tool calls with their `Mcp-Param-*` headers,
//!   as the Python SDK sends them (baskets, `confirm`).
//! * [`process`]: child processes that cannot outlive their owner, however
//!   it ends, and the `mcp_server` binary, built by cargo on demand.
//!
//! Everything listens on loopback ports picked at run time. The MCP client
//! is the workspace's one (`mcp-test-client`); [`Balancer::client`] makes
//! one that reaches the fleet through the balancer, on the pool of [`http()`].
//!
//! A dev-dependency of the workspace only (never published).

mod balancer;
pub mod calls;
mod node;
pub mod process;
pub mod redis;

pub use balancer::{http, Balancer, Kind};
pub use node::{Metrics, Node};
pub use process::WorkDir;
pub use redis::RedisServer;

use std::path::{Path, PathBuf};

/// The `x-mcp-header` names the balancer routes a `tools/call` by
/// (`MCP_ROUTE_PARAMS`): `mcp_server`'s baskets.
pub const ROUTE_PARAMS: [&str; 1] = ["Basket"];

/// The key file every node of a fleet is started with, in its work
/// directory.
pub const KEY_FILE: &str = "request-state.keys";

/// The bus key file every node of a fleet on a bus is started with
/// (`--bus-key-file`), in its work directory.
pub const BUS_KEY_FILE: &str = "bus.keys";

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
    /// binary ([`process::server_binary`]), each with `flags` and the
    /// fleet's key file ([`Fleet::key_file`]: one random key, id 1), and
    /// `kind` in front of them, routing by [`ROUTE_PARAMS`] too; returns
    /// once all of them listen.
    pub fn start(kind: Kind, n: usize, flags: &[String]) -> Result<Fleet, String> {
        Fleet::start_in(kind, n, flags, None)
    }

    /// [`Fleet::start`], each node also given `--redis-url REDIS` and the
    /// fleet's bus key file ([`Fleet::bus_key_file`]: one random key, id
    /// 1) when `redis` is given.
    fn start_in(
        kind: Kind,
        n: usize,
        flags: &[String],
        redis: Option<String>,
    ) -> Result<Fleet, String> {
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
        let keys = dir.path().join(KEY_FILE);
        write_key_file(&keys, &format!("1={}\n", process::random_key()?))?;
        let mut flags = flags.to_vec();
        flags.push("--request-state-key-file".into());
        flags.push(keys.display().to_string());
        if let Some(url) = redis {
            let bus_keys = dir.path().join(BUS_KEY_FILE);
            write_key_file(&bus_keys, &format!("1={}\n", process::random_key()?))?;
            flags.extend(["--redis-url".into(), url]);
            flags.extend(["--bus-key-file".into(), bus_keys.display().to_string()]);
        }
        for id in 0..n {
            let node = Node::start(&binary, id as u8, dir.path(), &flags)?;
            fleet.nodes.push(node);
        }
        let addrs: Vec<_> = fleet.nodes.iter().map(|node| node.addr).collect();
        fleet.balancer = Some(Balancer::start(kind, &addrs, &ROUTE_PARAMS, &dir)?);
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

    /// The request-state key file every node was started with (rewrite it
    /// with [`write_key_file`], then [`Node::reload`] each node).
    pub fn key_file(&self) -> PathBuf {
        self.dir().join(KEY_FILE)
    }

    /// The bus key file every node was started with, on a bus
    /// ([`Fleet::start_on_bus`]; rewrite it with [`write_key_file`], then
    /// [`Node::reload`] each node).
    pub fn bus_key_file(&self) -> PathBuf {
        self.dir().join(BUS_KEY_FILE)
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

/// Writes a request-state (or bus) key file (`ID=KEY` lines) readable by
/// its owner only, as a node expects it.
pub fn write_key_file(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
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

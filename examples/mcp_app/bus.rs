//! The fleet's bus of the example servers: `--redis-url redis://HOST:PORT`
//! joins the node to it (feature `redis`): what the application publishes
//! (a basket's updates) reaches the listeners of every node, and single-use
//! `requestState`s are recorded in Redis, so a retry opens on any node of
//! the fleet, once (the nodes must share their sealing keys). Its frames
//! are sealed under the fleet's bus keys (`--bus-key-file`, required with
//! `--redis-url`, re-read on SIGHUP).

use clap::Args;
use sessionreg::http::{self as mcp, App, Publisher};
use std::path::PathBuf;

/// The bus's flags.
#[derive(Args, Debug, Clone, Default)]
pub struct BusFlags {
    /// The fleet's bus: the Redis at this URL (`redis://HOST:PORT`) carries
    /// publications to every node and records used single-use
    /// requestStates; while it is away, listen streams end and new ones
    /// (and single-use retries) get 503. Needs `--features redis` and
    /// `--bus-key-file`.
    #[arg(long, value_name = "URL")]
    pub redis_url: Option<String>,
    /// The keys the bus's frames are sealed and opened with (required with
    /// `--redis-url`; the same on every node): `ID=KEY` lines, ID 0-255 and
    /// KEY 64 hex digits (32 bytes), `#` comments; the first line's key
    /// seals, the others still open (a rotation). A frame not sealed under
    /// one of them is dropped and counted. Re-read on SIGHUP (a bad file
    /// keeps the keys in force, and the reason is logged).
    #[arg(long, value_name = "PATH", requires = "redis_url")]
    pub bus_key_file: Option<PathBuf>,
}

/// A started bus (with the feature), or none.
#[cfg(feature = "redis")]
pub type Bus = mcp::RedisBus;
/// Without the feature there is no bus to have.
#[cfg(not(feature = "redis"))]
#[derive(Clone)]
pub enum Bus {}

impl BusFlags {
    /// Starts the bus for `publisher` if the flags ask for one (inside the
    /// runtime: its task runs there); a URL without the feature, one that
    /// is not a Redis URL, or a bus without its key file is a startup
    /// error.
    pub fn start(&self, publisher: &Publisher) -> Result<Option<Bus>, Box<dyn std::error::Error>> {
        let Some(url) = &self.redis_url else {
            return Ok(None);
        };
        #[cfg(feature = "redis")]
        {
            let Some(path) = &self.bus_key_file else {
                return Err(
                    "--redis-url needs --bus-key-file: the fleet's bus seals its frames \
                            under the fleet's keys (the same file on every node)"
                        .into(),
                );
            };
            let keys = bus_keys(path)?;
            tracing::info!(file = %path.display(), ?keys, "bus keys loaded");
            let bus = mcp::RedisBus::builder(url.as_str())
                .keys(keys)
                .start(publisher)
                .map_err(|e| format!("--redis-url: {e}"))?;
            tracing::info!(url = %redacted(url), "fleet bus: connecting to Redis");
            Ok(Some(bus))
        }
        #[cfg(not(feature = "redis"))]
        {
            let _ = (url, publisher);
            Err("--redis-url needs the `redis` feature: cargo run --features redis --example mcp_server".into())
        }
    }

    /// Re-reads the bus key file into `bus` (on SIGHUP): swapped in whole,
    /// or not at all (what cannot be read is logged, never a key).
    pub fn reload(&self, bus: Option<&Bus>) {
        #[cfg(feature = "redis")]
        if let (Some(bus), Some(path)) = (bus, &self.bus_key_file) {
            match bus_keys(path) {
                Ok(keys) => {
                    tracing::info!(file = %path.display(), ?keys, "bus keys reloaded");
                    bus.set_keys(keys);
                }
                Err(error) => tracing::warn!(%error, "bus keys not reloaded; the old keys stay"),
            }
        }
        #[cfg(not(feature = "redis"))]
        let _ = bus;
    }
}

/// The keys of a `--bus-key-file` (never logged: only their ids).
#[cfg(feature = "redis")]
fn bus_keys(path: &std::path::Path) -> Result<mcp::BusKeys, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let keys = mcp::BusKeys::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    super::ops::warn_if_shared(path, "the bus key file");
    Ok(keys)
}

/// `builder` joined to `bus`, if there is one.
pub fn attach<A: App>(builder: mcp::Builder<A>, bus: Option<Bus>) -> mcp::Builder<A> {
    match bus {
        #[cfg(feature = "redis")]
        Some(bus) => builder.bus(bus),
        #[cfg(not(feature = "redis"))]
        Some(never) => match never {},
        None => builder,
    }
}

/// A URL as the log shows it: without a password.
#[cfg(feature = "redis")]
fn redacted(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://***@{}", &url[at + 1..]),
        _ => url.to_string(),
    }
}

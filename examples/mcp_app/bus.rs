//! The fleet's bus of the example servers: `--redis-url redis://HOST:PORT`
//! joins the node to it (feature `redis`): what the application publishes
//! (a basket's updates) reaches the listeners of every node, and single-use
//! `requestState`s are recorded in Redis, so a retry opens on any node of
//! the fleet, once (the nodes must share their sealing keys).

use clap::Args;
use sessionreg::http::{self as mcp, App, Publisher};

/// The bus's flag.
#[derive(Args, Debug, Clone, Default)]
pub struct BusFlags {
    /// The fleet's bus: the Redis at this URL (`redis://HOST:PORT`) carries
    /// publications to every node and records used single-use
    /// requestStates; while it is away, listen streams end and new ones
    /// (and single-use retries) get 503. Needs `--features redis`.
    #[arg(long, value_name = "URL")]
    pub redis_url: Option<String>,
}

/// A started bus (with the feature), or none.
#[cfg(feature = "redis")]
pub type Bus = mcp::RedisBus;
/// Without the feature there is no bus to have.
#[cfg(not(feature = "redis"))]
pub enum Bus {}

impl BusFlags {
    /// Starts the bus for `publisher` if the flags ask for one (inside the
    /// runtime: its task runs there); a URL without the feature, or one
    /// that is not a Redis URL, is a startup error.
    pub fn start(&self, publisher: &Publisher) -> Result<Option<Bus>, Box<dyn std::error::Error>> {
        let Some(url) = &self.redis_url else {
            return Ok(None);
        };
        #[cfg(feature = "redis")]
        {
            let bus = mcp::RedisBus::builder(url.as_str())
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

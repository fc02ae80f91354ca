//! `server/discover` (2026-07-28): the layer answers it, from what the
//! application says of itself ([`Discovery`], [`App::discovery`]) and the
//! versions the layer serves, so the answer always has its required
//! fields (`supportedVersions`, `capabilities`, `resultType`, `ttlMs`,
//! `cacheScope`) and lists exactly the versions an
//! `UnsupportedProtocolVersionError` lists.
//!
//! [`App::discovery`]: crate::http::App::discovery

use crate::http::wire::meta::META_SERVER_INFO;
use crate::http::wire::protocol::{LEGACY_VERSIONS, MODERN_VERSION};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Who may cache a result (`cacheScope`, SEP-2549).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheScope {
    /// No user-specific data: shared caches may serve it to anyone.
    Public,
    /// Caches must not be shared across authorization contexts (the
    /// default, and what the layer puts on a cacheable result that says
    /// nothing).
    #[default]
    Private,
}

impl CacheScope {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// What an application says of itself to a 2026-07-28 client.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// The server's capabilities (`ServerCapabilities`: `tools`, `prompts`,
    /// `resources`, `completions`, `logging`, `extensions`...). Only what
    /// the application serves at 2026-07-28: a method behind a capability
    /// not listed should answer `-32601`.
    pub capabilities: Value,
    /// `{ "name", "version" }`: put in every result's `_meta` as
    /// `io.modelcontextprotocol/serverInfo`, as the spec asks.
    pub server_info: Option<Value>,
    /// Instructions for the model.
    pub instructions: Option<String>,
    /// How long the answer may be cached (`ttlMs`; default 0).
    pub ttl_ms: u64,
    /// Who may cache it.
    pub cache_scope: CacheScope,
}

/// What the layer keeps of an application's [`Discovery`]: its
/// `server/discover` answer, written once, and the server's identity, which
/// every modern result names.
pub(crate) struct Discovered {
    pub(crate) answer: Value,
    pub(crate) server_info: Option<Arc<ServerInfo>>,
}

/// The server's identity as every 2026-07-28 result names it: the value,
/// and the `_meta` member naming it, written once (not per answer).
#[derive(Debug)]
pub(crate) struct ServerInfo {
    pub(crate) value: Value,
    /// `"_meta":{"io.modelcontextprotocol/serverInfo":VALUE}`.
    pub(crate) meta_member: Box<str>,
}

impl ServerInfo {
    pub(crate) fn new(value: Value) -> ServerInfo {
        // Cannot fail: a `Value`'s map keys are strings.
        let meta = serde_json::to_string(&json!({ META_SERVER_INFO: value })).unwrap_or_default();
        ServerInfo {
            meta_member: format!("\"_meta\":{meta}").into_boxed_str(),
            value,
        }
    }
}

impl Discovered {
    /// From what the application says of itself; `tasks`: the manager
    /// serves the tasks extension, which the capabilities then list.
    pub(crate) fn new(mut discovery: Discovery, tasks: bool) -> Discovered {
        if tasks {
            crate::http::tasks::advertise(&mut discovery.capabilities);
        }
        Discovered {
            answer: result(&discovery),
            server_info: discovery
                .server_info
                .map(|info| Arc::new(ServerInfo::new(info))),
        }
    }
}

/// The versions a modern client is told are served, newest first: the
/// same list an `UnsupportedProtocolVersionError` gives.
pub(crate) fn supported_versions() -> Vec<&'static str> {
    let mut supported = Vec::with_capacity(LEGACY_VERSIONS.len() + 1);
    supported.push(MODERN_VERSION);
    supported.extend(LEGACY_VERSIONS.iter().rev());
    supported
}

/// The `DiscoverResult` for `discovery`.
pub(crate) fn result(discovery: &Discovery) -> Value {
    let mut result = Map::new();
    result.insert("resultType".into(), "complete".into());
    result.insert("supportedVersions".into(), json!(supported_versions()));
    let capabilities = match &discovery.capabilities {
        Value::Object(_) => discovery.capabilities.clone(),
        _ => json!({}),
    };
    result.insert("capabilities".into(), capabilities);
    if let Some(instructions) = &discovery.instructions {
        result.insert("instructions".into(), instructions.clone().into());
    }
    if let Some(info) = &discovery.server_info {
        result.insert("_meta".into(), json!({ META_SERVER_INFO: info }));
    }
    result.insert("ttlMs".into(), discovery.ttl_ms.into());
    result.insert("cacheScope".into(), discovery.cache_scope.as_str().into());
    Value::Object(result)
}

//! A rate limit the application keys ([`KeyedRateLimit`]): any key it
//! derives from a request ([`RateSubject`]: its principal, method, tool,
//! client address, headers), beside the per-principal and per-tool limits
//! (see [`Builder::keyed_rate_limit`](crate::http::Builder::keyed_rate_limit)).

use crate::http::wire::principal::Principal;
use crate::http::wire::rate::Rate;
use http::request::Parts;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

/// A rate limit counted per key, the key derived by the application from
/// each request: `rate` requests per window per key, in bursts of
/// [`burst`](KeyedRateLimit::burst) (one window's worth unless set). A
/// request whose key is `None` is not counted by it. Past it: 429 with
/// `Retry-After` and the `RateLimit-Policy`/`RateLimit` headers under the
/// limit's name, a JSON-RPC error naming it, and
/// `sessionreg_rate_limited_total{limit="NAME"}`; with a fleet's bus the
/// fleet decides it, as the principal's limit. The key is derived on the
/// request's path, before its handler: keep it cheap and never blocking.
/// A key is kept as an 8-byte digest per cell (on one node) or a SHA-256
/// digest (in Redis), whatever its length.
///
/// ```
/// use sessionreg::http::{KeyedRateLimit, Rate};
///
/// // Unauthenticated requests, 50 a second per client address (the
/// // address `serve` puts in the request, or the header a trusted proxy
/// // sets); authenticated ones are left to the principal's limit.
/// let per_address = KeyedRateLimit::new("address", Rate::per_second(50), |request| {
///     match request.principal() {
///         Some(_) => None,
///         None => request.client_addr().map(|addr| addr.ip().to_string()),
///     }
/// })
/// .burst(100);
/// // Each principal's `resources/read`s, 10 a second.
/// let reads = KeyedRateLimit::new("reads", Rate::per_second(10), |request| {
///     (request.method() == "resources/read")
///         .then(|| request.principal().map(|p| p.as_str().to_string()))
///         .flatten()
/// });
/// # let _ = (per_address, reads);
/// ```
#[derive(Clone)]
pub struct KeyedRateLimit {
    pub(crate) name: Arc<str>,
    pub(crate) rate: Rate,
    pub(crate) burst: Option<u32>,
    pub(crate) key: Arc<RateKeyFn>,
}

/// What derives a keyed limit's key from a request.
pub(crate) type RateKeyFn = dyn Fn(&RateSubject<'_>) -> Option<String> + Send + Sync;

impl KeyedRateLimit {
    /// A limit named `name` (in the headers, the error and the metrics:
    /// 1 to 32 of `a-z`, `0-9`, `_`, `-` and `.`, checked at build; not
    /// `principal` or `tool`), `rate` per key, the key `key` derives.
    pub fn new<F>(name: impl Into<Arc<str>>, rate: Rate, key: F) -> KeyedRateLimit
    where
        F: Fn(&RateSubject<'_>) -> Option<String> + Send + Sync + 'static,
    {
        KeyedRateLimit {
            name: name.into(),
            rate,
            burst: None,
            key: Arc::new(key),
        }
    }

    /// The most requests a key may send at once (default: the rate's
    /// count; from 1 to
    /// [`Defaults::RATE_BURST_LIMIT`](crate::http::Defaults::RATE_BURST_LIMIT)).
    pub fn burst(mut self, burst: u32) -> KeyedRateLimit {
        self.burst = Some(burst);
        self
    }

    /// The limit's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `name` is one a limit may have.
    pub(crate) fn is_valid_name(name: &str) -> bool {
        (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.'))
            && name != "principal"
            && name != "tool"
    }
}

impl fmt::Debug for KeyedRateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedRateLimit")
            .field("name", &self.name)
            .field("rate", &self.rate)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

/// What a request offers a [`KeyedRateLimit`]'s key: read once the
/// message is read and well formed, before the handler runs.
pub struct RateSubject<'a> {
    pub(crate) parts: &'a Parts,
    pub(crate) method: &'a str,
    pub(crate) tool: Option<&'a str>,
}

impl RateSubject<'_> {
    /// Who sent it, if the authenticator named someone.
    pub fn principal(&self) -> Option<&Principal> {
        Principal::of(self.parts)
    }

    /// The JSON-RPC method.
    pub fn method(&self) -> &str {
        self.method
    }

    /// The tool a `tools/call` names.
    pub fn tool(&self) -> Option<&str> {
        self.tool
    }

    /// The address the request's connection came from, when the server
    /// put it in the request ([`ClientAddr`]: [`serve`](crate::http::serve)
    /// does when a keyed limit is configured). Behind a balancer it is the
    /// balancer's: read the header it sets from [`parts`](Self::parts)
    /// instead (only a proxy you trust may set it).
    pub fn client_addr(&self) -> Option<SocketAddr> {
        self.parts.extensions.get::<ClientAddr>().map(|addr| addr.0)
    }

    /// The request's head: headers, URI, extensions.
    pub fn parts(&self) -> &Parts {
        self.parts
    }
}

/// The address a request's connection came from, in the request's
/// extensions: [`serve`](crate::http::serve) puts it there when the manager
/// has a [`KeyedRateLimit`]; a server of the application's own may too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub SocketAddr);

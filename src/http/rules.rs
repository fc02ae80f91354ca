//! The header rules of the streamable-HTTP transport: protocol version,
//! `Accept`, `Content-Type`, and the `Origin`/`Host` allow-list that protects
//! local servers from DNS rebinding.

use http::header::{ACCEPT, CONTENT_TYPE, HOST, ORIGIN};
use http::{HeaderMap, Uri};

/// The header naming the session.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// The header naming the protocol version of a request.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// The header a client resumes an SSE stream with.
pub const LAST_EVENT_ID: &str = "last-event-id";

/// Protocol versions with sessions that this layer serves, oldest first.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The newest supported version with sessions: what a server offers when a
/// client asks for one it does not know.
pub const LATEST_VERSION: &str = "2025-11-25";
/// The version assumed when a request has no `MCP-Protocol-Version` header
/// (as the 2025-06-18 and later specs say).
pub const DEFAULT_VERSION: &str = "2025-03-26";
/// The protocol version without sessions: its requests bypass the registry.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// The protocol version a request was sent at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// One of [`SUPPORTED_VERSIONS`]: the request belongs to a session.
    Sessions(&'static str),
    /// [`STATELESS_VERSION`]: no session is looked up, minted or echoed.
    Stateless,
}

impl Version {
    /// The version string.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Sessions(v) => v,
            Version::Stateless => STATELESS_VERSION,
        }
    }
}

/// Reads `MCP-Protocol-Version`: absent means [`DEFAULT_VERSION`]; any
/// supported version is accepted, not only the negotiated one (real clients
/// send an older one on some requests). `Err` carries the unsupported value.
pub fn protocol_version(headers: &HeaderMap) -> Result<Version, String> {
    let Some(value) = headers.get(VERSION_HEADER) else {
        return Ok(Version::Sessions(DEFAULT_VERSION));
    };
    let text = value
        .to_str()
        .map_err(|_| String::from("<non-ASCII>"))?
        .trim();
    if text == STATELESS_VERSION {
        return Ok(Version::Stateless);
    }
    SUPPORTED_VERSIONS
        .iter()
        .find(|v| **v == text)
        .map(|v| Version::Sessions(v))
        .ok_or_else(|| text.to_string())
}

/// The headers a request may carry at most once, with the names refusals
/// give them. A second one is refused (400) before anything reads either:
/// which one counts would be a guess, and a proxy in front that guesses the
/// other way (the last `Authorization`, say) would act on another request
/// than this server does.
pub(crate) const SINGLE_VALUED: [(&str, &str); 4] = [
    (SESSION_HEADER, "MCP-Session-Id"),
    ("authorization", "Authorization"),
    (VERSION_HEADER, "MCP-Protocol-Version"),
    (LAST_EVENT_ID, "Last-Event-ID"),
];

/// The name of the first header of [`SINGLE_VALUED`] that `headers` carry
/// more than once, if any.
pub(crate) fn duplicated(headers: &HeaderMap) -> Option<&'static str> {
    SINGLE_VALUED.iter().find_map(|(name, shown)| {
        let mut all = headers.get_all(*name).iter();
        (all.next().is_some() && all.next().is_some()).then_some(*shown)
    })
}

/// The version a server answers `initialize` with: the client's if it is
/// supported, else the latest (MCP version negotiation).
pub fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| SUPPORTED_VERSIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(LATEST_VERSION)
}

/// Whether the `Accept` headers admit `mime` (`type/subtype`); `*/*` and
/// `type/*` count, a `q=0` entry does not.
pub fn accepts(headers: &HeaderMap, mime: &str) -> bool {
    let (kind, _) = mime.split_once('/').unwrap_or((mime, ""));
    headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|entry| {
            let mut parts = entry.split(';');
            let range = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                let p = p.trim();
                p.starts_with("q=") && p[2..].trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
            });
            if refused {
                return false;
            }
            range == "*/*"
                || range.eq_ignore_ascii_case(mime)
                || range
                    .strip_suffix("/*")
                    .is_some_and(|k| k.eq_ignore_ascii_case(kind))
        })
}

/// Whether `Content-Type` is `application/json` (parameters such as
/// `charset` allowed).
pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// Which `Origin` and `Host` values a server answers (DNS-rebinding
/// protection). A request whose `Origin` or `Host` is not allowed gets 403.
#[derive(Debug, Clone, Default)]
pub struct OriginPolicy {
    /// Exact origins allowed besides loopback ones (e.g. `https://app.example`).
    pub allowed_origins: Vec<String>,
    /// Host names (with or without port) allowed besides loopback ones.
    pub allowed_hosts: Vec<String>,
    /// Restrict to loopback: `Host` must name `localhost`, `127.0.0.1` or
    /// `[::1]` (or an allowed host), and an `Origin`, when present, a
    /// loopback origin (or an allowed one).
    pub loopback_only: bool,
}

/// Why a request was refused by the [`OriginPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forbidden {
    /// The `Origin` header is not allowed.
    Origin,
    /// The `Host` header (or `:authority`) is not allowed.
    Host,
}

impl OriginPolicy {
    /// Whether `origin` is on the allow-list.
    pub fn lists_origin(&self, origin: &str) -> bool {
        self.allowed_origins
            .iter()
            .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin))
    }

    /// Whether `origin` is allowed by name, not merely unrestricted: on the
    /// allow-list, or a loopback origin while the policy is loopback-only.
    /// Only such an origin gets CORS headers.
    pub fn names_origin(&self, origin: &str) -> bool {
        self.lists_origin(origin)
            || (self.loopback_only && origin_host(origin).is_some_and(is_loopback_host))
    }

    /// Checks a request's `Origin` and `Host`.
    ///
    /// A present `Origin` is always checked, whatever the bind and the
    /// rebinding protection (the transport page: servers MUST validate it,
    /// and answer 403 to an invalid one): it must be on the allow-list, or
    /// be a loopback origin while the policy is loopback-only. A request
    /// without one (not from a browser) passes this part. `Host` is
    /// restricted to loopback names (plus the allow-list) when the policy
    /// is loopback-only, to the allow-list when there is one, and not at
    /// all otherwise.
    pub fn check(&self, headers: &HeaderMap, uri: &Uri) -> Result<(), Forbidden> {
        if let Some(origin) = headers.get(ORIGIN) {
            let origin = origin.to_str().map_err(|_| Forbidden::Origin)?.trim();
            if !self.names_origin(origin) {
                return Err(Forbidden::Origin);
            }
        }
        let host = match headers.get(HOST) {
            Some(h) => Some(h.to_str().map_err(|_| Forbidden::Host)?.trim()),
            None => uri.authority().map(|a| a.as_str()),
        };
        if let Some(host) = host {
            let listed = self
                .allowed_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(strip_port(host)));
            let loopback = self.loopback_only && is_loopback_host(strip_port(host));
            let unrestricted = !self.loopback_only && self.allowed_hosts.is_empty();
            if !(listed || loopback || unrestricted) {
                return Err(Forbidden::Host);
            }
        }
        Ok(())
    }
}

/// `host[:port]` → `host` (keeping the brackets of an IPv6 literal).
fn strip_port(authority: &str) -> &str {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => &authority[..=end],
            None => authority,
        };
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

/// The host of an origin `scheme://host[:port]`.
pub(super) fn origin_host(origin: &str) -> Option<&str> {
    let (_, rest) = origin.split_once("://")?;
    Some(strip_port(rest.trim_end_matches('/')))
}

pub(super) fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host == "[::1]"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn accept() {
        let h = headers(&[("accept", "application/json, text/event-stream")]);
        assert!(accepts(&h, "application/json") && accepts(&h, "text/event-stream"));
        let h = headers(&[("accept", "application/json")]);
        assert!(!accepts(&h, "text/event-stream"));
        let h = headers(&[("accept", "*/*")]);
        assert!(accepts(&h, "text/event-stream"));
        let h = headers(&[("accept", "text/*;q=0, application/json")]);
        assert!(!accepts(&h, "text/event-stream"));
        assert!(!accepts(&HeaderMap::new(), "application/json"));
    }

    #[test]
    fn versions() {
        assert_eq!(
            protocol_version(&HeaderMap::new()),
            Ok(Version::Sessions(DEFAULT_VERSION))
        );
        let h = headers(&[("mcp-protocol-version", "2024-11-05")]);
        assert_eq!(protocol_version(&h), Ok(Version::Sessions("2024-11-05")));
        let h = headers(&[("mcp-protocol-version", "2026-07-28")]);
        assert_eq!(protocol_version(&h), Ok(Version::Stateless));
        let h = headers(&[("mcp-protocol-version", "1999-01-01")]);
        assert!(protocol_version(&h).is_err());
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2099-01-01")), LATEST_VERSION);
    }

    #[test]
    fn single_valued_headers_at_most_once() {
        assert_eq!(duplicated(&HeaderMap::new()), None);
        let once = headers(&[
            ("mcp-session-id", "a"),
            ("authorization", "Bearer x"),
            ("mcp-protocol-version", "2025-11-25"),
            ("last-event-id", "0-1"),
        ]);
        assert_eq!(duplicated(&once), None);
        for (name, shown) in SINGLE_VALUED {
            let mut twice = once.clone();
            twice.append(name, HeaderValue::from_static("a"));
            assert_eq!(duplicated(&twice), Some(shown), "{name}");
        }
    }

    #[test]
    fn rebinding() {
        let policy = OriginPolicy {
            loopback_only: true,
            ..OriginPolicy::default()
        };
        let uri = Uri::from_static("/mcp");
        for host in ["localhost:8080", "127.0.0.1:1", "[::1]:3000", "localhost"] {
            let mut h = HeaderMap::new();
            h.insert(HOST, HeaderValue::from_str(host).unwrap());
            assert_eq!(policy.check(&h, &uri), Ok(()), "{host}");
        }
        let h = headers(&[("host", "evil.example.com")]);
        assert_eq!(policy.check(&h, &uri), Err(Forbidden::Host));
        let h = headers(&[
            ("host", "localhost:1"),
            ("origin", "https://evil.example.com"),
        ]);
        assert_eq!(policy.check(&h, &uri), Err(Forbidden::Origin));
        let h = headers(&[("host", "localhost:1"), ("origin", "http://localhost:5173")]);
        assert_eq!(policy.check(&h, &uri), Ok(()));
        let listed = OriginPolicy {
            allowed_origins: vec!["https://app.example".into()],
            ..policy
        };
        let h = headers(&[("host", "localhost:1"), ("origin", "https://app.example")]);
        assert_eq!(listed.check(&h, &uri), Ok(()));
        assert_eq!(
            OriginPolicy::default().check(&headers(&[("host", "x.y")]), &uri),
            Ok(())
        );
        // An Origin is checked by every policy, the open one too.
        let h = headers(&[("host", "x.y"), ("origin", "https://x.y")]);
        assert_eq!(
            OriginPolicy::default().check(&h, &uri),
            Err(Forbidden::Origin)
        );
        let h = headers(&[("host", "x.y"), ("origin", "null")]);
        assert_eq!(
            OriginPolicy::default().check(&h, &uri),
            Err(Forbidden::Origin)
        );
    }
}

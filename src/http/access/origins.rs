//! Which `Origin` and `Host` values the endpoint answers: the allow-lists,
//! the loopback rule of DNS-rebinding protection, and what counts as a
//! loopback name or a public address.

use crate::http::wire::request_headers::RequestHeaders;
use http::header::HeaderValue;
use http::Uri;

/// Which `Origin` and `Host` values a server answers (DNS-rebinding
/// protection). A request whose `Origin` or `Host` is not allowed gets 403.
#[derive(Debug, Clone, Default)]
pub(crate) struct OriginPolicy {
    /// Exact origins allowed besides loopback ones (e.g. `https://app.example`).
    pub(crate) allowed_origins: Vec<String>,
    /// Host names (with or without port) allowed besides loopback ones.
    pub(crate) allowed_hosts: Vec<String>,
    /// Restrict to loopback: `Host` must name `localhost`, `127.0.0.1` or
    /// `[::1]` (or an allowed host), and an `Origin`, when present, a
    /// loopback origin (or an allowed one).
    pub(crate) loopback_only: bool,
}

/// Why a request was refused by the [`OriginPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forbidden {
    /// The `Origin` header is not allowed.
    Origin,
    /// The `Host` header (or `:authority`) is not allowed.
    Host,
    /// The header was given more than once (its name as refusals show
    /// it): which one counts would be a guess, and a proxy in front may
    /// guess the other way.
    Twice(&'static str),
}

impl OriginPolicy {
    /// Whether `origin` is on the allow-list.
    pub(crate) fn lists_origin(&self, origin: &str) -> bool {
        self.allowed_origins
            .iter()
            .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin))
    }

    /// Whether `origin` is allowed by name, not merely unrestricted: on the
    /// allow-list, or a loopback origin while the policy is loopback-only.
    /// Only such an origin gets CORS headers.
    pub(crate) fn names_origin(&self, origin: &str) -> bool {
        self.lists_origin(origin)
            || (self.loopback_only && origin_host(origin).is_some_and(is_loopback_host))
    }

    /// Checks a request's `Origin` and `Host` (as the one pass over its
    /// headers found them).
    ///
    /// A present `Origin` is always checked, whatever the bind and the
    /// rebinding protection (the transport page: servers MUST validate it,
    /// and answer 403 to an invalid one): it must be on the allow-list, or
    /// be a loopback origin while the policy is loopback-only. A request
    /// without one (not from a browser) passes this part. `Host` is
    /// restricted to loopback names (plus the allow-list) when the policy
    /// is loopback-only, to the allow-list when there is one, and not at
    /// all otherwise.
    /// A second `Origin` or `Host` is refused before either is read: a
    /// check of the first would let a component that reads the other act
    /// on a value nobody checked.
    ///
    /// `Ok` holds the request's `Origin`, if it has one: having passed, it
    /// is allowed by name ([`names_origin`](Self::names_origin)), the
    /// origin CORS answers, so nothing looks it up again.
    pub(crate) fn check<'h>(
        &self,
        seen: &RequestHeaders<'h>,
        uri: &Uri,
    ) -> Result<Option<&'h HeaderValue>, Forbidden> {
        let origin = seen.origin.once().map_err(|_| Forbidden::Twice("Origin"))?;
        if let Some(origin) = origin {
            let origin = origin.to_str().map_err(|_| Forbidden::Origin)?.trim();
            if !self.names_origin(origin) {
                return Err(Forbidden::Origin);
            }
        }
        let host = match seen.host.once().map_err(|_| Forbidden::Twice("Host"))? {
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
        Ok(origin)
    }
}

/// `host[:port]` → `host` (keeping the brackets of an IPv6 literal).
///
/// Scans bytes: every request's `Host` comes through here, and the
/// `str` pattern searches cost several times as much.
fn strip_port(authority: &str) -> &str {
    let bytes = authority.as_bytes();
    if bytes.first() == Some(&b'[') {
        return match bytes.iter().position(|&b| b == b']') {
            // `]` is ASCII: `end + 1` is a character boundary.
            Some(end) => &authority[..=end],
            None => authority,
        };
    }
    match bytes.iter().rposition(|&b| b == b':') {
        // `:` is ASCII: `colon` is a character boundary.
        Some(colon) if bytes[colon + 1..].iter().all(u8::is_ascii_digit) => &authority[..colon],
        _ => authority,
    }
}

/// The host of an origin `scheme://host[:port]`.
fn origin_host(origin: &str) -> Option<&str> {
    let (_, rest) = origin.split_once("://")?;
    Some(strip_port(rest.trim_end_matches('/')))
}

/// Whether `host` (without its port) names this machine: `localhost`,
/// `[::1]` or `::1`, or an IPv4 literal in 127.0.0.0/8.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    // `127.0.0.1`, what loopback clients send most, is matched as bytes
    // before the general parse (which costs a request about 150
    // instructions); any other IPv4 loopback literal starts `127.` too (the
    // parser takes no leading zeros), so only those are parsed.
    host == "127.0.0.1"
        || host.eq_ignore_ascii_case("localhost")
        || host == "[::1]"
        || host == "::1"
        || (host.starts_with("127.")
            && host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback()))
}

/// Whether `ip` is routable on the internet: not loopback, unspecified
/// (`0.0.0.0` accepts on every interface, loopback included), private
/// (10/8, 172.16/12, 192.168/16, shared 100.64/10, IPv6 fc00::/7) or
/// link-local (169.254/16, fe80::/10). An IPv4-mapped IPv6 address is
/// judged as its IPv4 one.
pub(crate) fn is_public(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            let shared = a == 100 && (b & 0xc0) == 64;
            !(v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || shared)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            let unique_local = (first & 0xfe00) == 0xfc00;
            let link_local = (first & 0xffc0) == 0xfe80;
            !(v6.is_loopback() || v6.is_unspecified() || unique_local || link_local)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::HOST;
    use http::HeaderMap;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_static(v));
        }
        map
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
            assert_eq!(
                policy.check(&RequestHeaders::scan(&h), &uri),
                Ok(None),
                "{host}"
            );
        }
        let h = headers(&[("host", "evil.example.com")]);
        assert_eq!(
            policy.check(&RequestHeaders::scan(&h), &uri),
            Err(Forbidden::Host)
        );
        let h = headers(&[
            ("host", "localhost:1"),
            ("origin", "https://evil.example.com"),
        ]);
        assert_eq!(
            policy.check(&RequestHeaders::scan(&h), &uri),
            Err(Forbidden::Origin)
        );
        let h = headers(&[("host", "localhost:1"), ("origin", "http://localhost:5173")]);
        // The origin that passed, for CORS to answer.
        assert_eq!(
            policy.check(&RequestHeaders::scan(&h), &uri),
            Ok(Some(&HeaderValue::from_static("http://localhost:5173")))
        );
        let listed = OriginPolicy {
            allowed_origins: vec!["https://app.example".into()],
            ..policy
        };
        let h = headers(&[("host", "localhost:1"), ("origin", "https://app.example")]);
        assert_eq!(
            listed.check(&RequestHeaders::scan(&h), &uri),
            Ok(Some(&HeaderValue::from_static("https://app.example")))
        );
        assert_eq!(
            OriginPolicy::default()
                .check(&RequestHeaders::scan(&headers(&[("host", "x.y")])), &uri),
            Ok(None)
        );
        // An Origin is checked by every policy, the open one too.
        let h = headers(&[("host", "x.y"), ("origin", "https://x.y")]);
        assert_eq!(
            OriginPolicy::default().check(&RequestHeaders::scan(&h), &uri),
            Err(Forbidden::Origin)
        );
        let h = headers(&[("host", "x.y"), ("origin", "null")]);
        assert_eq!(
            OriginPolicy::default().check(&RequestHeaders::scan(&h), &uri),
            Err(Forbidden::Origin)
        );
    }

    #[test]
    fn a_second_origin_or_host_is_refused_whatever_either_says() {
        let policy = OriginPolicy {
            loopback_only: true,
            ..OriginPolicy::default()
        };
        let uri = Uri::from_static("/mcp");
        for (pairs, twice) in [
            (
                [
                    ("host", "localhost:1"),
                    ("origin", "http://localhost:1"),
                    ("origin", "https://evil.example"),
                ],
                "Origin",
            ),
            (
                [
                    ("host", "localhost:1"),
                    ("origin", "http://localhost:1"),
                    ("origin", "http://localhost:1"),
                ],
                "Origin",
            ),
            (
                [
                    ("host", "localhost:1"),
                    ("host", "evil.example"),
                    ("origin", "http://localhost:1"),
                ],
                "Host",
            ),
        ] {
            assert_eq!(
                policy.check(&RequestHeaders::scan(&headers(&pairs)), &uri),
                Err(Forbidden::Twice(twice)),
                "{pairs:?}"
            );
        }
    }

    #[test]
    fn hosts_read_as_bytes_as_the_str_patterns_read_them() {
        // The readings these functions replaced, kept here as the reference.
        fn strip_port_by_patterns(authority: &str) -> &str {
            if authority.starts_with('[') {
                return authority
                    .find(']')
                    .map_or(authority, |end| &authority[..=end]);
            }
            match authority.rsplit_once(':') {
                Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
                _ => authority,
            }
        }
        fn loopback_by_parse(host: &str) -> bool {
            host.eq_ignore_ascii_case("localhost")
                || host == "[::1]"
                || host == "::1"
                || host
                    .parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        for authority in [
            "",
            ":",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.0.0.1:",
            "127.9.8.7:1",
            "127.0.0.01",
            "0127.0.0.1",
            "127.0.0.1.",
            "127.0.0.1x",
            "127.256.0.1",
            "128.0.0.1",
            "1.2.3.4:5",
            "localhost",
            "LocalHost:3000",
            "localhost.",
            "[::1]",
            "[::1]:443",
            "[::1",
            "::1",
            "a:b:80",
            "a:b",
            "évian:80",
            "x:8é",
            "127.0.0.1:80:80",
            "[fe80::1]:9",
            "12.0.0.1",
            "127.",
            "127",
        ] {
            let host = strip_port(authority);
            assert_eq!(host, strip_port_by_patterns(authority), "{authority:?}");
            assert_eq!(is_loopback_host(host), loopback_by_parse(host), "{host:?}");
            assert_eq!(
                is_loopback_host(authority),
                loopback_by_parse(authority),
                "{authority:?}"
            );
        }
    }

    #[test]
    fn only_internet_routable_binds_are_public() {
        for local in [
            "127.0.0.1",
            "0.0.0.0",
            "10.0.0.11",
            "172.16.5.4",
            "172.31.255.255",
            "192.168.1.2",
            "100.64.0.1",
            "100.127.255.254",
            "169.254.1.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd12:3456::1",
            "fc00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(local.parse().unwrap()), "{local}");
        }
        for public in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "192.0.2.7",
            "2001:db8::1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }
}

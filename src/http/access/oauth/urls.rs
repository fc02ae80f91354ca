//! The URLs a resource server deals in, checked once when it is built: its
//! own resource identifier (RFC 8707 §2, RFC 9728 §1.2) and the well-known
//! URI of its metadata (RFC 9728 §3.1); the issuer of its authorization
//! server and where that server's metadata is looked for (RFC 8414 §3.1,
//! OpenID Connect Discovery §4, in the order the MCP authorization page
//! gives).

use super::OAuthConfigError;
use http::uri::{Authority, Scheme, Uri};

/// RFC 9728 §3: the well-known suffix of protected resource metadata.
pub(crate) const RESOURCE_METADATA: &str = "/.well-known/oauth-protected-resource";
/// RFC 8414 §3: the well-known suffix of authorization server metadata.
const AS_METADATA: &str = "/.well-known/oauth-authorization-server";
/// OpenID Connect Discovery 1.0 §4.
const OPENID_CONFIGURATION: &str = "/.well-known/openid-configuration";

/// An absolute `http`/`https` URL with no query, fragment or user info,
/// its scheme and host lowercased (the canonical form, RFC 8707 §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BaseUrl {
    /// `scheme://authority`, lowercased.
    origin: String,
    /// The path as given, without a terminating slash (`""` for none).
    path: String,
    /// Whether its host is a loopback one (`localhost`, `127.0.0.0/8`,
    /// `[::1]`).
    loopback: bool,
    https: bool,
}

impl BaseUrl {
    /// Parses `url` as the `what` of the configuration (named in errors).
    pub(crate) fn parse(what: &'static str, url: &str) -> Result<BaseUrl, OAuthConfigError> {
        let bad = |reason: &'static str| OAuthConfigError::BadUrl {
            what,
            url: url.to_string(),
            reason,
        };
        if url.contains('#') {
            return Err(bad("a fragment is not allowed"));
        }
        if !url.bytes().all(|b| (0x21..=0x7e).contains(&b)) || url.contains(['"', '\\']) {
            return Err(bad("only visible ASCII, without quotes or backslashes"));
        }
        let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
        let https = match uri.scheme() {
            Some(s) if *s == Scheme::HTTPS => true,
            Some(s) if *s == Scheme::HTTP => false,
            _ => return Err(bad("the scheme must be https (or http)")),
        };
        let authority: &Authority = uri.authority().ok_or(bad("no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad("user info is not allowed"));
        }
        if authority.host().is_empty() {
            return Err(bad("no host"));
        }
        if uri.query().is_some() {
            return Err(bad("a query is not allowed"));
        }
        let host = authority.host().to_ascii_lowercase();
        let loopback = host == "localhost"
            || host == "[::1]"
            || host
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback());
        // The path as given (`http::Uri` says "/" for none), less a
        // terminating slash (RFC 9728 §3.1, RFC 8414 §3.1).
        let given = &url[url.find("://").map_or(0, |i| i + 3) + authority.as_str().len()..];
        let path = given.strip_suffix('/').unwrap_or(given).to_string();
        Ok(BaseUrl {
            origin: format!(
                "{}://{}",
                if https { "https" } else { "http" },
                authority.as_str().to_ascii_lowercase()
            ),
            path,
            loopback,
            https,
        })
    }

    /// The URL in canonical form: lowercased scheme and host, the path as
    /// given without a terminating slash.
    pub(crate) fn canonical(&self) -> String {
        format!("{}{}", self.origin, self.path)
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    pub(crate) fn is_https(&self) -> bool {
        self.https
    }

    pub(crate) fn is_loopback(&self) -> bool {
        self.loopback
    }

    /// RFC 9728 §3.1: the path of this resource's metadata, the well-known
    /// suffix inserted between the host and the path.
    pub(crate) fn resource_metadata_path(&self) -> String {
        format!("{RESOURCE_METADATA}{}", self.path)
    }

    /// The URL of this resource's metadata (RFC 9728 §3.1).
    pub(crate) fn resource_metadata_url(&self) -> String {
        format!("{}{}", self.origin, self.resource_metadata_path())
    }

    /// Where an issuer's metadata is looked for, in order: RFC 8414 with
    /// the suffix inserted, OpenID Connect with it inserted, then appended
    /// (the last only for an issuer with a path, where it differs).
    pub(crate) fn issuer_metadata_urls(&self) -> Vec<String> {
        let mut urls = vec![
            format!("{}{AS_METADATA}{}", self.origin, self.path),
            format!("{}{OPENID_CONFIGURATION}{}", self.origin, self.path),
        ];
        if !self.path.is_empty() {
            urls.push(format!(
                "{}{}{OPENID_CONFIGURATION}",
                self.origin, self.path
            ));
        }
        urls
    }
}

/// Checks a URL the authorization server's metadata names (its JWKS, its
/// introspection endpoint): absolute, and https unless plain http is
/// allowed.
pub(crate) fn check_endpoint(
    what: &'static str,
    url: &str,
    allow_http: bool,
) -> Result<(), OAuthConfigError> {
    let parsed = BaseUrl::parse(what, url.split('?').next().unwrap_or(url))?;
    if !parsed.is_https() && !allow_http && !parsed.is_loopback() {
        return Err(OAuthConfigError::BadUrl {
            what,
            url: url.to_string(),
            reason: "plain http to a host that is not loopback (allow it with allow_http)",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_canonical_and_their_metadata_sits_at_the_well_known_path() {
        let url = BaseUrl::parse("resource", "HTTPS://MCP.Example.com:8443/Server/mcp/").unwrap();
        assert_eq!(url.canonical(), "https://mcp.example.com:8443/Server/mcp");
        assert_eq!(
            url.resource_metadata_url(),
            "https://mcp.example.com:8443/.well-known/oauth-protected-resource/Server/mcp"
        );
        let root = BaseUrl::parse("resource", "https://mcp.example.com").unwrap();
        assert_eq!(root.canonical(), "https://mcp.example.com");
        assert_eq!(root.resource_metadata_path(), RESOURCE_METADATA);
        assert!(BaseUrl::parse("resource", "http://127.0.0.2:1/mcp")
            .unwrap()
            .is_loopback());
        assert!(!BaseUrl::parse("resource", "http://10.0.0.1/mcp")
            .unwrap()
            .is_loopback());
        for bad in [
            "mcp.example.com",
            "https://mcp.example.com#x",
            "https://mcp.example.com/?a=1",
            "https://user@mcp.example.com/",
            "ftp://mcp.example.com/",
            "https://mcp.example.com/a b",
            "https://mcp.example.com/\"",
            "https:///mcp",
        ] {
            assert!(BaseUrl::parse("resource", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn issuer_metadata_is_looked_for_in_the_mcp_order() {
        let tenant = BaseUrl::parse("issuer", "https://auth.example.com/tenant1/").unwrap();
        assert_eq!(
            tenant.issuer_metadata_urls(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        let root = BaseUrl::parse("issuer", "https://auth.example.com").unwrap();
        assert_eq!(
            root.issuer_metadata_urls(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert!(check_endpoint("jwks_uri", "http://auth.example.com/jwks", false).is_err());
        assert!(check_endpoint("jwks_uri", "http://auth.example.com/jwks", true).is_ok());
        assert!(check_endpoint("jwks_uri", "http://localhost:9/jwks", false).is_ok());
        assert!(check_endpoint("jwks_uri", "https://auth.example.com/jwks?v=2", false).is_ok());
    }
}

//! Configuring a [`ResourceServer`]: the [`ResourceServerBuilder`], its
//! defaults, and the checks `build` makes once.

use super::cache::TokenCache;
use super::challenge::Challenges;
use super::fetch::Fetcher;
use super::flights::Flights;
use super::introspect::{Credentials, Introspector};
use super::jwks::{Jwks, Refresh, ASYMMETRIC};
use super::metadata::{Document, Published};
use super::needs::{CallScopes, Target};
use super::refusals::Refusals;
use super::stats::OAuthCounters;
use super::urls::{check_endpoint, BaseUrl};
use super::{ResourceCore, ResourceServer};
use jsonwebtoken::{Algorithm, Validation};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How far `exp` and `nbf` may be off (clock skew between this server and
/// the authorization server) unless configured.
pub(crate) const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// How long the key set is trusted after it was last fetched unless
/// configured (it is refreshed in the background from half of it).
pub(crate) const DEFAULT_KEYS_MAX_AGE: Duration = Duration::from_secs(300);
/// The longest `keys_max_age`.
pub(crate) const MAX_KEYS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// The least time between two fetches of the key set (and between two
/// discoveries of the metadata) unless configured.
pub(crate) const DEFAULT_MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(10);
/// How long one exchange with the authorization server may take unless
/// configured.
pub(crate) const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Tokens kept in the cache of accepted tokens unless configured.
pub(crate) const DEFAULT_TOKEN_CACHE: usize = 10_000;
/// How long an introspected token is trusted before it is asked about
/// again unless configured.
pub(crate) const DEFAULT_INTROSPECTION_TTL: Duration = Duration::from_secs(60);
/// Opaque tokens whose refusal is kept unless configured.
pub(crate) const DEFAULT_REFUSAL_CACHE: usize = 10_000;
/// How long an opaque token's refusal is kept unless configured.
pub(crate) const DEFAULT_REFUSAL_TTL: Duration = Duration::from_secs(5);
/// The longest `refusal_ttl`: a refusal kept longer would outlast the
/// time a token may need to become valid where it was issued.
pub(crate) const MAX_REFUSAL_TTL: Duration = Duration::from_secs(60);
/// The largest document (metadata, JWKS, introspection answer) read from
/// the authorization server.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// A configuration that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthConfigError {
    /// A URL that is not usable where it is given.
    BadUrl {
        /// Which setting.
        what: &'static str,
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A scope that is not an RFC 6749 §3.3 scope token (empty, or with a
    /// space, a quote or a backslash).
    BadScope(String),
    /// The TLS client could not be set up (no root certificates for an
    /// https issuer, say).
    Tls(String),
    /// A setting out of its range.
    OutOfRange {
        /// Which setting (its builder method).
        setting: &'static str,
        /// What it allows.
        allowed: &'static str,
    },
}

impl fmt::Display for OAuthConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OAuthConfigError::BadUrl { what, url, reason } => {
                write!(f, "the {what} {url:?} cannot be used: {reason}")
            }
            OAuthConfigError::BadScope(scope) => {
                write!(f, "{scope:?} is not a scope token (RFC 6749 §3.3)")
            }
            OAuthConfigError::Tls(why) => write!(f, "the TLS client cannot be set up: {why}"),
            OAuthConfigError::OutOfRange { setting, allowed } => {
                write!(f, "{setting} is out of range: {allowed}")
            }
        }
    }
}

impl std::error::Error for OAuthConfigError {}

/// Configures a [`ResourceServer`]; from [`ResourceServer::builder`].
#[derive(Debug, Clone)]
pub struct ResourceServerBuilder {
    issuer: String,
    resource: String,
    audiences: Vec<String>,
    required: Vec<String>,
    supported: Vec<String>,
    calls: CallScopes,
    hide_tools: bool,
    jwks_uri: Option<String>,
    introspection: Option<(String, String)>,
    introspection_endpoint: Option<String>,
    introspection_ttl: Duration,
    leeway: Duration,
    max_age: Duration,
    min_interval: Duration,
    fetch_timeout: Duration,
    cache: usize,
    refusal_cache: usize,
    refusal_ttl: Duration,
    allow_http: bool,
    at_jwt: bool,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
}

impl ResourceServer {
    /// Starts configuring the resource server `resource` (the MCP
    /// endpoint's canonical URL, e.g. `https://mcp.example.com/mcp`: the
    /// `aud` its tokens must carry) whose tokens `issuer` issues (exactly
    /// as its tokens' `iss` and its metadata's `issuer` spell it, e.g.
    /// `https://auth.example.com/realms/mcp`).
    pub fn builder(
        issuer: impl Into<String>,
        resource: impl Into<String>,
    ) -> ResourceServerBuilder {
        ResourceServerBuilder {
            issuer: issuer.into(),
            resource: resource.into(),
            audiences: Vec::new(),
            required: Vec::new(),
            supported: Vec::new(),
            calls: CallScopes::default(),
            hide_tools: false,
            jwks_uri: None,
            introspection: None,
            introspection_endpoint: None,
            introspection_ttl: DEFAULT_INTROSPECTION_TTL,
            leeway: DEFAULT_LEEWAY,
            max_age: DEFAULT_KEYS_MAX_AGE,
            min_interval: DEFAULT_MIN_REFRESH_INTERVAL,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            cache: DEFAULT_TOKEN_CACHE,
            refusal_cache: DEFAULT_REFUSAL_CACHE,
            refusal_ttl: DEFAULT_REFUSAL_TTL,
            allow_http: false,
            at_jwt: false,
            resource_name: None,
            resource_documentation: None,
        }
    }
}

impl ResourceServerBuilder {
    /// How far `exp` and `nbf` may be off (clock skew between this server and
    /// the authorization server) unless configured.
    pub const DEFAULT_LEEWAY: Duration = DEFAULT_LEEWAY;
    /// How long the key set is trusted after it was last fetched unless
    /// configured (it is refreshed in the background from half of it).
    pub const DEFAULT_KEYS_MAX_AGE: Duration = DEFAULT_KEYS_MAX_AGE;
    /// The longest `keys_max_age`.
    pub const MAX_KEYS_MAX_AGE: Duration = MAX_KEYS_MAX_AGE;
    /// The least time between two fetches of the key set (and between two
    /// discoveries of the metadata) unless configured.
    pub const DEFAULT_MIN_REFRESH_INTERVAL: Duration = DEFAULT_MIN_REFRESH_INTERVAL;
    /// How long one exchange with the authorization server may take unless
    /// configured.
    pub const DEFAULT_FETCH_TIMEOUT: Duration = DEFAULT_FETCH_TIMEOUT;
    /// Tokens kept in the cache of accepted tokens unless configured.
    pub const DEFAULT_TOKEN_CACHE: usize = DEFAULT_TOKEN_CACHE;
    /// How long an introspected token is trusted before it is asked about
    /// again unless configured.
    pub const DEFAULT_INTROSPECTION_TTL: Duration = DEFAULT_INTROSPECTION_TTL;
    /// Opaque tokens whose refusal is kept unless configured.
    pub const DEFAULT_REFUSAL_CACHE: usize = DEFAULT_REFUSAL_CACHE;
    /// How long an opaque token's refusal is kept unless configured.
    pub const DEFAULT_REFUSAL_TTL: Duration = DEFAULT_REFUSAL_TTL;
    /// The longest `refusal_ttl`.
    pub const MAX_REFUSAL_TTL: Duration = MAX_REFUSAL_TTL;
}

impl ResourceServerBuilder {
    /// A scope every request's token must grant: without it, 403
    /// `insufficient_scope` naming every required scope. Also listed in
    /// the metadata's `scopes_supported` and in the 401 challenge's `scope`.
    pub fn required_scope(mut self, scope: impl Into<String>) -> Self {
        self.required.push(scope.into());
        self
    }

    /// A scope listed in the metadata's `scopes_supported` without being
    /// required (one the application checks itself, through
    /// [`Context::scopes`](crate::http::Context::scopes)).
    pub fn supported_scope(mut self, scope: impl Into<String>) -> Self {
        self.supported.push(scope.into());
        self
    }

    /// A scope a `tools/call` of the tool `tool` needs besides the
    /// required ones (repeat for more): without it, 403
    /// `insufficient_scope` naming every scope the call needs, so the
    /// client steps up to a token that grants it. Listed in the metadata's
    /// `scopes_supported`, not in the 401 challenge (a client asks for it
    /// when a call needs it).
    pub fn tool_scope(mut self, tool: impl Into<String>, scope: impl Into<String>) -> Self {
        self.calls.target(Target::Tool, tool.into(), scope.into());
        self
    }

    /// A scope a `prompts/get` of the prompt `prompt` needs, as
    /// [`tool_scope`](Self::tool_scope) for a tool.
    pub fn prompt_scope(mut self, prompt: impl Into<String>, scope: impl Into<String>) -> Self {
        self.calls
            .target(Target::Prompt, prompt.into(), scope.into());
        self
    }

    /// A scope a `resources/read` of the resource `uri` (compared exactly)
    /// needs, as [`tool_scope`](Self::tool_scope) for a tool.
    pub fn resource_scope(mut self, uri: impl Into<String>, scope: impl Into<String>) -> Self {
        self.calls
            .target(Target::Resource, uri.into(), scope.into());
        self
    }

    /// A scope every request of the JSON-RPC method `method` (`tools/list`,
    /// `tools/call`, …) needs, as [`tool_scope`](Self::tool_scope) for a
    /// tool; a call needs its method's scopes and its target's.
    pub fn method_scope(mut self, method: impl Into<String>, scope: impl Into<String>) -> Self {
        self.calls.method(method.into(), scope.into());
        self
    }

    /// Whether a `tools/list` answer (a result the application returns,
    /// not a stream) leaves out the tools the request's token cannot call
    /// (their [`tool_scope`](Self::tool_scope)s, and `tools/call`'s
    /// [`method_scope`](Self::method_scope)s). Off by default: clients see
    /// every tool and step up when they call one (the MCP authorization
    /// page's model); on, a client sees only what its token can call, and
    /// a listing cached by a client goes stale when its token changes.
    pub fn hide_tools_without_scope(mut self, hide: bool) -> Self {
        self.hide_tools = hide;
        self
    }

    /// Also accepts tokens whose `aud` names `audience` (an authorization
    /// server that cannot put the resource's URL there: an Auth0 API
    /// identifier, an Entra ID App ID URI chosen before). The resource's own
    /// URL is always accepted.
    ///
    /// Not an OAuth client's id: the authorization server puts that in
    /// the `aud` of the ID tokens it issues to the client. ID tokens are
    /// refused by their claims (`nonce`, `at_hash`, `c_hash`), but an
    /// audience that other tokens of the issuer also carry lets those in
    /// unless a scope only access tokens for this resource grant is
    /// required ([`required_scope`](Self::required_scope)), or
    /// [`require_at_jwt`](Self::require_at_jwt) is on; `build` warns of an
    /// extra audience without a required scope.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// Takes the keys from this JWKS URL instead of the one the issuer's
    /// metadata names (no discovery, unless introspection needs its
    /// endpoint).
    pub fn jwks_uri(mut self, url: impl Into<String>) -> Self {
        self.jwks_uri = Some(url.into());
        self
    }

    /// Accepts opaque (non-JWT) tokens by asking the authorization
    /// server's introspection endpoint (RFC 7662) about them, as the
    /// client `client_id` with `client_secret` (HTTP Basic). Answers are
    /// trusted for [`introspection_ttl`](Self::introspection_ttl) at most.
    pub fn introspection(
        mut self,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        self.introspection = Some((client_id.into(), client_secret.into()));
        self
    }

    /// The introspection endpoint, instead of the metadata's
    /// `introspection_endpoint`.
    pub fn introspection_endpoint(mut self, url: impl Into<String>) -> Self {
        self.introspection_endpoint = Some(url.into());
        self
    }

    /// How long an introspected token is trusted before the endpoint is
    /// asked again (default [`ResourceServerBuilder::DEFAULT_INTROSPECTION_TTL`]): a revoked
    /// token keeps working for at most this long.
    pub fn introspection_ttl(mut self, ttl: Duration) -> Self {
        self.introspection_ttl = ttl;
        self
    }

    /// How far `exp` and `nbf` may be off (default [`ResourceServerBuilder::DEFAULT_LEEWAY`]).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// How long the key set is trusted after it was last fetched (default
    /// [`ResourceServerBuilder::DEFAULT_KEYS_MAX_AGE`]): a key the
    /// authorization server withdrew is trusted for at most this long.
    /// The set is fetched again in the background once it is half this
    /// old; if the authorization server does not give it until it is this
    /// old, every JWT gets 503 (with a `Retry-After`) until it does. So an
    /// outage of the authorization server costs nothing for between half
    /// of it and all of it. From [`min_refresh_interval`](Self::min_refresh_interval)
    /// (not zero) to [`ResourceServerBuilder::MAX_KEYS_MAX_AGE`].
    pub fn keys_max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// The least time between two fetches of the key set, and between two
    /// discoveries of the authorization server's metadata (default
    /// [`ResourceServerBuilder::DEFAULT_MIN_REFRESH_INTERVAL`]): tokens naming keys nobody knows,
    /// or opaque tokens while the metadata cannot be read, cost the
    /// authorization server at most one fetch (or discovery) per interval.
    /// At most [`keys_max_age`](Self::keys_max_age).
    pub fn min_refresh_interval(mut self, interval: Duration) -> Self {
        self.min_interval = interval;
        self
    }

    /// How long one exchange with the authorization server may take
    /// (default [`ResourceServerBuilder::DEFAULT_FETCH_TIMEOUT`]).
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// Tokens kept in the cache of accepted tokens (default
    /// [`ResourceServerBuilder::DEFAULT_TOKEN_CACHE`]; 0: none, every request verifies its
    /// token).
    pub fn token_cache(mut self, tokens: usize) -> Self {
        self.cache = tokens;
        self
    }

    /// Opaque tokens whose refusal by the introspection endpoint is kept
    /// (default [`ResourceServerBuilder::DEFAULT_REFUSAL_CACHE`]; 0: none,
    /// every request with a refused token asks again).
    pub fn refusal_cache(mut self, tokens: usize) -> Self {
        self.refusal_cache = tokens;
        self
    }

    /// How long an opaque token's refusal is kept (default
    /// [`ResourceServerBuilder::DEFAULT_REFUSAL_TTL`]): the same token is
    /// refused without asking the introspection endpoint for this long,
    /// so a flood of one inactive token costs one introspection per TTL,
    /// and a token that becomes valid meanwhile (an authorization server
    /// whose replicas had not all seen it) waits this long at most. Not
    /// zero; at most [`ResourceServerBuilder::MAX_REFUSAL_TTL`].
    pub fn refusal_ttl(mut self, ttl: Duration) -> Self {
        self.refusal_ttl = ttl;
        self
    }

    /// Allows plain-http URLs for the authorization server on hosts that
    /// are not loopback (off by default: keys fetched in the clear can be
    /// swapped by anyone on the path; loopback hosts are allowed always).
    pub fn allow_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// Requires a JWT's header to say it is an access token, `typ:
    /// at+jwt` (or `application/at+jwt`), as RFC 9068 §4 asks of a
    /// resource server; any other `typ`, or none, gets 401 `invalid_token`.
    /// Off by default: many authorization servers still issue access
    /// tokens typed `JWT` (Keycloak unless a client is set to `at+jwt`,
    /// Auth0's default token profile, Entra ID); turn it on where the
    /// authorization server types them (Auth0's RFC 9068 profile, say).
    pub fn require_at_jwt(mut self, require: bool) -> Self {
        self.at_jwt = require;
        self
    }

    /// The metadata's `resource_name`.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// The metadata's `resource_documentation` URL.
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// Checks the configuration and builds the resource server. Nothing is
    /// fetched yet: the keys are fetched with the first token (or by
    /// [`ResourceServer::refresh`]).
    pub fn build(self) -> Result<ResourceServer, OAuthConfigError> {
        self.check_ranges()?;
        let resource_url = BaseUrl::parse("resource", &self.resource)?;
        let issuer_url = BaseUrl::parse("issuer", &self.issuer)?;
        let insecure = |url: &BaseUrl| !url.is_https() && !url.is_loopback() && !self.allow_http;
        if insecure(&issuer_url) {
            return Err(OAuthConfigError::BadUrl {
                what: "issuer",
                url: self.issuer.clone(),
                reason: "plain http to a host that is not loopback (allow it with allow_http)",
            });
        }
        for (what, url) in [
            ("jwks_uri", &self.jwks_uri),
            ("introspection endpoint", &self.introspection_endpoint),
            ("resource documentation", &self.resource_documentation),
        ] {
            if let Some(url) = url {
                check_endpoint(
                    what,
                    url,
                    self.allow_http || what == "resource documentation",
                )?;
            }
        }
        let mut scopes = self.required.clone();
        for scope in self.supported.iter().chain(self.calls.all()) {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        for scope in &scopes {
            let token_char = |c: char| matches!(c, '\x21' | '\x23'..='\x5b' | '\x5d'..='\x7e');
            if scope.is_empty() || !scope.chars().all(token_char) {
                return Err(OAuthConfigError::BadScope(scope.clone()));
            }
        }
        let resource = resource_url.canonical();
        let mut audiences = vec![resource.clone()];
        audiences.extend(self.audiences.iter().cloned());
        if !self.audiences.is_empty() && self.required.is_empty() {
            tracing::warn!(
                audiences = ?self.audiences,
                "tokens for an extra audience are accepted and no scope is required: any token \
                 of the issuer for that audience passes (an ID token, if it is a client id); \
                 require a scope only access tokens for this resource grant"
            );
        }

        let fetcher = Fetcher::new(
            self.fetch_timeout,
            MAX_DOCUMENT_BYTES,
            issuer_url.is_https(),
        )?;
        let mut template = Validation::new(Algorithm::RS256);
        template.set_issuer(&[&self.issuer]);
        template.set_audience(&audiences);
        template.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        template.leeway = self.leeway.as_secs();
        template.validate_exp = true;
        template.validate_nbf = true;
        template.validate_aud = true;
        let stats = Arc::new(OAuthCounters::default());
        let jwks = Jwks::new(
            fetcher.clone(),
            self.issuer.clone(),
            issuer_url,
            self.allow_http,
            self.jwks_uri.clone(),
            template,
            ASYMMETRIC.to_vec(),
            Refresh {
                max_age: self.max_age,
                min_interval: self.min_interval,
            },
            Arc::clone(&stats),
        );

        let metadata_url = resource_url.resource_metadata_url();
        let document = Document {
            resource: &resource,
            authorization_servers: [&self.issuer],
            scopes_supported: &scopes,
            bearer_methods_supported: ["header"],
            resource_name: self.resource_name.as_deref(),
            resource_documentation: self.resource_documentation.as_deref(),
        };
        let published = Published::new(
            &document,
            resource_url.resource_metadata_path(),
            !resource_url.path().is_empty(),
        );
        let required = self.required.join(" ");
        let introspector = self.introspection.as_ref().map(|(id, secret)| {
            Introspector::new(Credentials::new(id, secret), self.fetch_timeout)
        });
        Ok(ResourceServer {
            inner: Arc::new(ResourceCore {
                challenges: Challenges::new(&metadata_url, &required),
                issuer: self.issuer,
                resource,
                metadata_url,
                audiences,
                required: self.required,
                calls: self.calls,
                hide_tools: self.hide_tools,
                published,
                jwks: Arc::new(jwks),
                cache: TokenCache::new(self.cache),
                refusals: Refusals::new(self.refusal_cache, self.refusal_ttl),
                flights: Flights::default(),
                introspector,
                introspection_endpoint: self.introspection_endpoint,
                introspection_ttl: self.introspection_ttl.as_secs(),
                leeway: self.leeway.as_secs(),
                at_jwt: self.at_jwt,
                retry_after: self.min_interval.as_secs().max(1),
                fetcher,
                stats,
            }),
        })
    }
}

impl ResourceServerBuilder {
    /// The durations' ranges: those that bound how long something is
    /// trusted, or how often the authorization server is asked.
    fn check_ranges(&self) -> Result<(), OAuthConfigError> {
        let out = |setting, allowed| Err(OAuthConfigError::OutOfRange { setting, allowed });
        if self.max_age.is_zero() || self.max_age > MAX_KEYS_MAX_AGE {
            return out("keys_max_age", "more than zero, at most a day");
        }
        if self.min_interval > self.max_age {
            return out(
                "min_refresh_interval",
                "at most keys_max_age (the keys must be fetched again before they are too old)",
            );
        }
        if self.refusal_ttl.is_zero() || self.refusal_ttl > MAX_REFUSAL_TTL {
            return out("refusal_ttl", "more than zero, at most 60 s");
        }
        Ok(())
    }
}

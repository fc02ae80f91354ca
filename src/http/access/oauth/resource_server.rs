//! The resource server ([`ResourceServer`]): the endpoint's metadata, its
//! challenges, and each request's token settled (cached, verified,
//! introspected) into a [`Grant`].

use super::cache::TokenCache;
use super::challenge::Challenges;
use super::fetch::Fetcher;
use super::flights::Flights;
use super::introspect::{Introspector, Verdict};
use super::jwks::Jwks;
use super::metadata::Published;
use super::refusals::Refusals;
use super::verify::Invalid;
use super::{cache, challenge, needs, stats, urls, verify, OAuthStats, RefreshError};
use crate::http::access::auth::{self, AuthError, Authenticator};
use crate::http::access::scopes::Scopes;
use crate::http::access::validity::Validity;
use crate::http::wire::body::Body;
use crate::http::wire::jsonrpc::Message;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use http::header::AUTHORIZATION;
use http::request::Parts;
use http::{Method, Response};
use std::fmt;
use std::sync::Arc;

/// An OAuth 2.1 resource server: the MCP endpoint's metadata, challenges
/// and token checks (see the [module docs](super)). Cheap to clone: clones
/// share the keys, the cache and the counters. Built with
/// [`ResourceServer::builder`]; mounted with
/// [`Builder::resource_server`](crate::http::Builder::resource_server).
#[derive(Clone)]
pub struct ResourceServer {
    pub(super) inner: Arc<ResourceCore>,
}

pub(super) struct ResourceCore {
    pub(super) issuer: String,
    /// The canonical resource URL.
    pub(super) resource: String,
    pub(super) metadata_url: String,
    /// The `aud` values accepted: the resource first.
    pub(super) audiences: Vec<String>,
    pub(super) required: Vec<String>,
    /// What each tool, prompt, resource and method needs besides.
    pub(super) calls: needs::CallScopes,
    /// `tools/list` answers leave out the tools the token cannot call.
    pub(super) hide_tools: bool,
    pub(super) challenges: Challenges,
    pub(super) published: Published,
    pub(super) jwks: Arc<Jwks>,
    pub(super) cache: TokenCache,
    /// Opaque tokens refused moments ago.
    pub(super) refusals: Refusals,
    /// Introspections in flight, by token.
    pub(super) flights: Flights<Option<Grant>>,
    pub(super) introspector: Option<Introspector>,
    pub(super) introspection_endpoint: Option<String>,
    /// Seconds an introspected token is trusted.
    pub(super) introspection_ttl: u64,
    /// Seconds `exp`/`nbf` may be off.
    pub(super) leeway: u64,
    /// A JWT's `typ` must be `at+jwt` (RFC 9068).
    pub(super) at_jwt: bool,
    /// The `Retry-After` (seconds) of a token that cannot be checked now:
    /// when the keys may be fetched again.
    pub(super) retry_after: u64,
    pub(super) fetcher: Fetcher,
    pub(super) stats: Arc<stats::OAuthCounters>,
}

/// What an accepted token grants.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    pub(crate) principal: Principal,
    pub(crate) scopes: Scopes,
    /// The token's `exp` (unix seconds; `u64::MAX` for an introspected
    /// token without one).
    pub(crate) expires_at: u64,
}

/// How a token that the synchronous checks could not settle goes on.
enum Slow<'a> {
    /// A JWT whose `kid` no key in force has: refresh the keys, then
    /// verify again.
    UnknownKey(&'a str),
    /// A JWT, and keys past their maximum age: refresh them, then verify
    /// (or, still past it, refuse as unverifiable).
    StaleKeys(&'a str),
    /// An opaque token: introspect it.
    Opaque(&'a str),
}

/// Why a token was not accepted.
enum Refusal {
    /// 401 `invalid_token`.
    Invalid,
    /// 503: it cannot be checked now (the keys are past their maximum age
    /// and the authorization server does not give them again).
    Unavailable,
}

impl ResourceServer {
    /// The resource's canonical URL (lowercased scheme and host, no
    /// terminating slash): the `resource` of the metadata, the `aud` its
    /// tokens carry.
    pub fn resource(&self) -> &str {
        &self.inner.resource
    }

    /// The issuer, as configured.
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// The URL of the resource's metadata (RFC 9728 §3.1), as the 401
    /// challenge's `resource_metadata` names it.
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The paths the metadata is served at: the RFC 9728 one (the
    /// well-known suffix inserted before the resource's path), then, for a
    /// resource with a path, the root well-known path.
    pub fn metadata_paths(&self) -> Vec<&str> {
        let published = &self.inner.published;
        let mut paths = vec![published.path.as_str()];
        if published.at_root {
            paths.push(urls::RESOURCE_METADATA);
        }
        paths
    }

    /// The metadata document (JSON).
    pub fn metadata_document(&self) -> &[u8] {
        &self.inner.published.json
    }

    /// The answer to a `GET` of the metadata (200, JSON, any origin), for a
    /// router that serves it itself.
    pub fn metadata_response(&self) -> Response<Body> {
        self.inner.published.answer(&Method::GET)
    }

    /// Fetches the authorization server's keys now (its metadata first,
    /// the first time), as the first token would: e.g. at start, to find
    /// a misconfiguration before a client does. Refused
    /// ([`RefreshError::TooSoon`]) when a fetch (or a discovery) started
    /// less than the minimum refresh interval ago. Returns how many keys
    /// are in force.
    pub async fn refresh(&self) -> Result<usize, RefreshError> {
        self.inner.jwks.refresh().await
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> OAuthStats {
        self.inner.stats.snapshot(self.inner.jwks.current_len())
    }

    /// The answer to a request for the metadata, if `path` is one of its
    /// well-known paths (the manager's router asks first).
    pub(crate) fn metadata_answer(&self, method: &Method, path: &str) -> Option<Response<Body>> {
        self.inner
            .published
            .serves(path)
            .then(|| self.inner.published.answer(method))
    }

    /// The router's authentication step: the principal and scopes of the
    /// request's token put into its extensions (with its validity: until
    /// its `exp` plus the leeway), or the refusal. `first`,
    /// the manager's [`Authenticator`] if it has one, is asked before.
    pub(crate) async fn admit(
        &self,
        first: Option<&dyn Authenticator>,
        parts: &mut Parts,
    ) -> Result<(), Reject> {
        if let Some(authenticator) = first {
            match authenticator.authenticate_with_validity(parts) {
                Ok((principal, validity)) => {
                    auth::record(parts, principal, validity);
                    return Ok(());
                }
                Err(AuthError::Forbidden) => return Err(Reject::Forbidden),
                Err(AuthError::Unauthorized { .. }) => {}
            }
        }
        let inner = &*self.inner;
        let Some(token) = bearer(parts) else {
            inner.stats.missing();
            return Err(Reject::Unauthorized(inner.challenges.missing.clone()));
        };
        let now = unix_now();
        let digest = crate::http::access::digest::digest(token);
        let settled = match self.settle(token, &digest, now) {
            Ok(grant) => Ok(grant),
            Err(Some(slow)) => {
                // Boxed: the manager's routing future stays small for the
                // requests that never get here (all but a few).
                Box::pin(self.settle_slowly(slow, &digest, now)).await
            }
            Err(None) => Err(Refusal::Invalid),
        };
        let grant = match settled {
            Ok(grant) => grant,
            Err(Refusal::Invalid) => {
                inner.stats.invalid();
                return Err(Reject::Unauthorized(inner.challenges.invalid.clone()));
            }
            Err(Refusal::Unavailable) => {
                inner.stats.unavailable();
                return Err(Reject::AuthorizationUnavailable {
                    retry_after: inner.retry_after,
                });
            }
        };
        if !grant
            .scopes
            .contains_all(inner.required.iter().map(String::as_str))
        {
            inner.stats.insufficient_scope();
            return Err(Reject::InsufficientScope(
                inner.challenges.insufficient_scope.clone(),
            ));
        }
        // A stream the token opens ends when the token would be refused:
        // at its `exp`, plus the leeway it is verified with.
        let validity = Validity::of_token(grant.expires_at, inner.leeway);
        auth::record(parts, grant.principal, validity);
        if inner.hide_tools {
            parts.extensions.insert(ToolListFilter {
                server: self.clone(),
                scopes: grant.scopes.clone(),
            });
        }
        parts.extensions.insert(grant.scopes);
        Ok(())
    }

    /// The check of a call's own scopes (its tool's, prompt's, resource's
    /// or method's, see `needs.rs`), once its message is read: the 403
    /// `insufficient_scope` naming every scope it needs, or `-32602` for
    /// params that name no target readably. A request without scopes in
    /// its extensions (admitted by the manager's authenticator) passes.
    pub(crate) fn authorize_call(&self, parts: &Parts, message: &Message) -> Result<(), Reject> {
        let inner = &*self.inner;
        let Some(scopes) = Scopes::of(parts) else {
            return Ok(());
        };
        match inner.calls.check(&inner.required, scopes, message) {
            Ok(None) => Ok(()),
            Ok(Some(shortfall)) => {
                inner.stats.insufficient_scope();
                Err(Reject::InsufficientScope(challenge::step_up(
                    &inner.metadata_url,
                    &shortfall.needed,
                    &shortfall.what,
                )))
            }
            Err(error) => Err(Reject::Malformed(error)),
        }
    }

    /// What can be decided without I/O: a cached token, an opaque token
    /// refused moments ago, a JWT of a known key. `Err(Some(..))`: it needs
    /// I/O; `Err(None)`: refused.
    fn settle<'t>(
        &self,
        token: &'t str,
        digest: &cache::Digest,
        now: u64,
    ) -> Result<Grant, Option<Slow<'t>>> {
        let inner = &*self.inner;
        let keys = inner.jwks.current();
        let epoch = keys.trusted.then_some(keys.set.epoch);
        if let Some(grant) = inner.cache.get(digest, now, epoch) {
            inner.stats.accepted(true);
            return Ok(grant);
        }
        if !is_jwt(token) {
            return match inner.introspector {
                Some(_) if inner.refusals.holds(digest, coarsetime::Instant::now()) => {
                    inner.stats.refusal_cached();
                    Err(None)
                }
                Some(_) => Err(Some(Slow::Opaque(token))),
                None => Err(None),
            };
        }
        if !keys.trusted {
            return Err(Some(Slow::StaleKeys(token)));
        }
        match verify::verify(&keys.set, token, &inner.issuer, inner.at_jwt) {
            Ok(grant) => {
                inner
                    .cache
                    .put(*digest, &grant, u64::MAX, Some(keys.set.epoch), now);
                inner.stats.accepted(false);
                Ok(grant)
            }
            Err(Invalid::UnknownKey) => Err(Some(Slow::UnknownKey(token))),
            Err(why) => {
                inner.refused(why);
                Err(None)
            }
        }
    }

    /// What needs I/O: the keys refreshed for an unknown `kid` or because
    /// they are past their age (once per interval at most, whoever asks),
    /// or an introspection (one per token in flight).
    async fn settle_slowly(
        &self,
        slow: Slow<'_>,
        digest: &cache::Digest,
        now: u64,
    ) -> Result<Grant, Refusal> {
        let inner = &*self.inner;
        match slow {
            Slow::UnknownKey(token) | Slow::StaleKeys(token) => {
                match inner.jwks.refresh().await {
                    Ok(_) | Err(RefreshError::TooSoon) => {}
                    Err(error) => tracing::warn!(
                        %error,
                        "refreshing the authorization server's keys failed; the known ones stay in force until they are keys_max_age old"
                    ),
                }
                let keys = inner.jwks.current();
                if !keys.trusted {
                    return Err(Refusal::Unavailable);
                }
                match verify::verify(&keys.set, token, &inner.issuer, inner.at_jwt) {
                    Ok(grant) => {
                        inner
                            .cache
                            .put(*digest, &grant, u64::MAX, Some(keys.set.epoch), now);
                        inner.stats.accepted(false);
                        Ok(grant)
                    }
                    Err(why) => {
                        inner.refused(why);
                        Err(Refusal::Invalid)
                    }
                }
            }
            Slow::Opaque(token) => {
                let Some(introspector) = &inner.introspector else {
                    return Err(Refusal::Invalid);
                };
                let (answer, asked) = inner
                    .flights
                    .join(*digest, || {
                        self.introspect(introspector, token, digest, now)
                    })
                    .await;
                if !asked {
                    // Answered by another request's introspection.
                    match answer {
                        Some(_) => inner.stats.accepted(true),
                        None => inner.stats.refusal_cached(),
                    }
                }
                answer.ok_or(Refusal::Invalid)
            }
        }
    }

    /// Asks about an opaque token (unless a flight that just landed left
    /// its answer in the caches), and keeps the answer: a grant until the
    /// introspection TTL, a refusal until the refusal TTL.
    async fn introspect(
        &self,
        introspector: &Introspector,
        token: &str,
        digest: &cache::Digest,
        now: u64,
    ) -> Option<Grant> {
        let inner = &*self.inner;
        if inner.refusals.holds(digest, coarsetime::Instant::now()) {
            inner.stats.refusal_cached();
            return None;
        }
        if let Some(grant) = inner.cache.get(digest, now, None) {
            inner.stats.accepted(true);
            return Some(grant);
        }
        let endpoint = match &inner.introspection_endpoint {
            Some(endpoint) => endpoint.clone(),
            None => match inner.jwks.endpoints().await {
                Ok(endpoints) => endpoints.introspection?,
                // Another request's discovery failed moments ago.
                Err(RefreshError::TooSoon) => return None,
                Err(error) => {
                    tracing::warn!(%error, "no introspection endpoint");
                    return None;
                }
            },
        };
        inner.stats.introspected();
        let verdict = introspector
            .introspect(
                &inner.fetcher,
                &endpoint,
                token,
                &inner.issuer,
                &inner.audiences,
                inner.leeway,
                now,
            )
            .await;
        match verdict {
            Verdict::Active(grant) => {
                inner.cache.put(
                    *digest,
                    &grant,
                    now.saturating_add(inner.introspection_ttl),
                    None,
                    now,
                );
                inner.stats.accepted(false);
                Some(grant)
            }
            Verdict::Refused => {
                inner.refusals.put(*digest, coarsetime::Instant::now());
                None
            }
            Verdict::Unknown => None,
        }
    }
}

/// What a `tools/list` answer leaves out when the resource server hides
/// the tools a token cannot call
/// ([`ResourceServerBuilder::hide_tools_without_scope`]): put into the
/// request's extensions with its scopes, applied to the application's
/// result by `run/dispatch.rs`.
#[derive(Clone)]
pub(crate) struct ToolListFilter {
    server: ResourceServer,
    scopes: Scopes,
}

impl ToolListFilter {
    /// Drops from `result.tools` every tool the token cannot call (a tool
    /// without a `name` string stays: the application's to answer for).
    pub(crate) fn apply(&self, result: &mut serde_json::Value) {
        let calls = &self.server.inner.calls;
        if let Some(tools) = result.get_mut("tools").and_then(|t| t.as_array_mut()) {
            tools.retain(|tool| match tool.get("name").and_then(|n| n.as_str()) {
                Some(name) => calls.allows_tool(&self.scopes, name),
                None => true,
            });
        }
    }
}

impl ResourceCore {
    /// A JWT refused: logged (no token in it) and counted by cause where
    /// the stats tell the cause apart.
    fn refused(&self, why: Invalid) {
        tracing::debug!(?why, "access token refused");
        match why {
            Invalid::IdToken => self.stats.id_token(),
            Invalid::TokenType => self.stats.wrong_type(),
            _ => {}
        }
    }
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("issuer", &self.inner.issuer)
            .field("resource", &self.inner.resource)
            .field("required_scopes", &self.inner.required)
            .finish_non_exhaustive()
    }
}

/// Not part of the API: what `benches/oauth.rs` times, compiled only with
/// the feature `bench-hooks`.
#[cfg(feature = "bench-hooks")]
#[doc(hidden)]
pub mod __bench {
    use super::ResourceServer;

    /// Puts the keys of a JWKS document in force without fetching it;
    /// returns how many.
    pub fn install_keys(server: &ResourceServer, jwks: &str) -> usize {
        server.inner.jwks.install(jwks).expect("a JWKS document")
    }

    /// What a request with `token` costs before it reaches the
    /// application, without I/O: its digest, the cache lookup, and, on a
    /// miss, the verification with a key in force (and the cache insert).
    /// Returns whether the token was accepted.
    pub fn check(server: &ResourceServer, token: &str) -> bool {
        let now = super::unix_now();
        let digest = crate::http::access::digest::digest(token);
        server.settle(token, &digest, now).is_ok()
    }
}

/// The token of `Authorization: Bearer TOKEN` (the scheme is
/// case-insensitive, RFC 9110 §11.1), if there is one.
fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_at_checked(7)?;
    let token = token.trim_ascii();
    (scheme.eq_ignore_ascii_case("bearer ") && !token.is_empty()).then_some(token)
}

/// Whether a token has the shape of a JWS (three dot-separated parts).
fn is_jwt(token: &str) -> bool {
    token.bytes().filter(|b| *b == b'.').count() == 2
}

/// Seconds since the epoch, from the coarse clock (a few ns).
fn unix_now() -> u64 {
    coarsetime::Clock::now_since_epoch().as_secs()
}

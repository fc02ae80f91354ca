//! An OAuth 2.1 resource server, as the MCP authorization page asks of a
//! server on the open network (every revision since 2025-06-18, 2026-07-28
//! included), beside the static tokens of
//! [`BearerTokens`](crate::http::BearerTokens) (feature `oauth`).
//!
//! * It publishes its **Protected Resource Metadata** (RFC 9728) at the
//!   well-known URL of the endpoint (the endpoint's path after
//!   `/.well-known/oauth-protected-resource`; also at the root well-known
//!   path), naming its authorization server and its scopes.
//! * A request **without a valid token** gets 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="<metadata URL>"` (and
//!   `scope="…"` when scopes are required; `error="invalid_token"` when a
//!   token was given), so an OAuth-capable client (the official SDKs'
//!   `OAuthClientProvider`s) finds out where and how to get one; a valid
//!   token **without a required scope** gets 403 with
//!   `error="insufficient_scope"`. A tool, prompt, resource or method may
//!   need **scopes of its own** ([`ResourceServerBuilder::tool_scope`] and
//!   its siblings, `needs.rs`): a call without them gets the same 403, its
//!   `scope` naming every scope the call needs, so the client steps up;
//!   the 401 names only the required ones.
//! * **JWT access tokens** are verified locally, against the authorization
//!   server's keys (JWKS), found through its RFC 8414 or OpenID Connect
//!   metadata and cached (`jwks.rs`: refreshed when a token names an
//!   unknown key, at most once per interval, and in the background when
//!   old; a known key's token is verified without I/O, lock or wait):
//!   asymmetric algorithms only, `iss` the issuer, `aud` the resource (RFC
//!   8707), `exp`/`nbf` with a small leeway; an ID token (`nonce`,
//!   `at_hash` or `c_hash` among its claims) is not an access token, and
//!   RFC 9068's `typ: at+jwt` may be required (`verify.rs`). **Opaque
//!   tokens** are introspected (RFC 7662) when the server has credentials
//!   for it (`introspect.rs`; requests with one token share one
//!   introspection in flight, `flights.rs`). Accepted tokens are cached
//!   until their `exp` at most (`cache.rs`); opaque tokens the
//!   authorization server refused, for a few seconds (`refusals.rs`).
//! * The request's **principal** is the token's issuer and subject,
//!   `ISSUER#SUBJECT` (see [`Principal`](crate::http::Principal)): sessions, tasks, handles,
//!   single-use states, listen streams and per-principal shares are bound
//!   to it as to any principal. Its **scopes** are in the request's
//!   extensions, read with [`Context::scopes`](crate::http::Context::scopes).
//! * An **authorization server that is down** costs the tokens of known
//!   keys nothing while the keys are younger than `keys_max_age` (they are
//!   refreshed in the background from half of it); past it, every JWT
//!   gets 503 with `Retry-After` until a refresh succeeds, so a key
//!   withdrawn meanwhile is not trusted longer. A token of an unknown key
//!   gets 401, never a 500. What the server asks of it is bounded however
//!   many requests need it: one key refresh and one discovery of its
//!   metadata per `min_refresh_interval` (`paced.rs`), one introspection
//!   per token in flight, and none for a token it refused within
//!   `refusal_ttl`.
//!
//! ```no_run
//! use sessionreg::http::oauth::ResourceServer;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let oauth = ResourceServer::builder(
//!     "https://auth.example.com/realms/mcp", // the tokens' `iss`
//!     "https://mcp.example.com/mcp",         // this endpoint: their `aud`
//! )
//! .required_scope("mcp:tools")
//! .build()?;
//! // SessionManager::builder(app).resource_server(oauth.clone()).build()
//! # Ok(()) }
//! ```
//!
//! Mounted with [`Builder::resource_server`](crate::http::Builder::resource_server),
//! the manager answers the metadata's well-known paths itself wherever a
//! request for them reaches it: through [`serve`](crate::http::serve) given
//! the manager as its service, or a router that sends those paths to it
//! (`examples/mcp_server.rs`; in axum, `route_service` of
//! [`ResourceServer::metadata_paths`] to the manager, as
//! `examples/axum_server.rs` does). [`ResourceServer::metadata_response`]
//! answers them for a router of any other kind.
//!
//! With an [`Authenticator`](crate::http::Authenticator) configured too, it is asked first: a principal
//! it finds is taken (static tokens, say), its 403 stands, and its 401
//! hands the request on to the resource server.

mod builder;
mod cache;
mod challenge;
mod fetch;
mod flights;
mod introspect;
mod jwks;
mod metadata;
mod needs;
mod paced;
mod refusals;
mod resource_server;
mod stats;
mod urls;
mod verify;

pub use builder::{OAuthConfigError, ResourceServerBuilder};
pub use jwks::RefreshError;
pub use resource_server::ResourceServer;
pub use stats::OAuthStats;

#[cfg(feature = "bench-hooks")]
#[doc(hidden)]
pub use resource_server::__bench;
pub(crate) use resource_server::{Grant, ToolListFilter};

use resource_server::ResourceCore;

//! The pipeline every request goes through, in order (with feature `oauth`,
//! a request for the resource server's metadata is answered before it):
//!
//! 1. **access** (`access/`): a foreign `Origin` or `Host` gets 403;
//! 2. **CORS** (`access/cors.rs`): a preflight is answered here; an origin
//!    allowed by name gets CORS headers on whatever the rest answers;
//! 3. **single headers** (`header_rules.rs`): a header that may come once, given
//!    twice, gets 400 (before the authenticator reads `Authorization`);
//! 4. **auth** (`access/auth.rs`, and `access/oauth/` with feature
//!    `oauth`): the authenticator's or the resource server's 401/403, or
//!    the principal (and a token's scopes) put into the request's
//!    extensions, with what the credential is good for
//!    (`access/validity.rs`: a stream the request opens holds it);
//! 5. **version** (`header_rules.rs`): an unsupported `MCP-Protocol-Version` gets
//!    400 with the versions served;
//! 6. **era**: a modern request (2026-07-28) goes to `modern/`, a legacy
//!    one to `legacy/`;
//! 7. **method**, in the era's module.

use crate::http::access::{auth, cors};
use crate::http::app::App;
use crate::http::legacy;
use crate::http::modern;
use crate::http::run::hub::Hub;
use crate::http::wire::body::Body;
use crate::http::wire::body::SendBody;
use crate::http::wire::header_rules;
use crate::http::wire::message;
use crate::http::wire::protocol::Version;
use crate::http::wire::reject::{self, Reject};
use crate::http::wire::request_headers::{HeaderFindings, RequestHeaders};
use http::request::Parts;
use http::{Method, Response};
use std::future::Future;
use std::sync::Arc;

/// Routes one request through the pipeline.
#[allow(clippy::manual_async_fn)] // on purpose: see `modern::serve::serve`
pub(crate) fn route<'a, A, B>(
    hub: &'a Arc<Hub<A>>,
    request: http::Request<B>,
) -> impl Future<Output = Response<Body>> + 'a
where
    A: App,
    B: SendBody,
{
    async move {
        #[cfg(feature = "oauth")]
        if let Some(metadata) = hub
            .resource_server
            .as_ref()
            .and_then(|server| server.metadata_answer(request.method(), request.uri().path()))
        {
            // Public, for any origin: before the access checks.
            return metadata;
        }
        let config = &hub.config;
        // The headers every step below reads, found once; what is read
        // after this block is taken out owned (the request moves on).
        let seen = RequestHeaders::scan(request.headers());
        let origin = match hub.access.check(&seen, request.uri()) {
            Ok(origin) => origin,
            Err(reject) => return reject.respond(None, config),
        };
        if cors::is_preflight(request.method(), request.headers()) {
            return match origin {
                Some(origin) => cors::preflight(origin, request.headers(), allowed_methods(hub)),
                None => Reject::CrossOriginPreflight.respond(None, config),
            };
        }
        // Held here, lent to the steps below (not moved into each one's
        // future in turn).
        let findings = HeaderFindings::of(&seen, request.headers(), request.method());
        let mut response = match authenticated(hub, request, &findings).await {
            Ok(response) => response,
            Err(refused) => refused,
        };
        if let Some(origin) = origin {
            cors::decorate(&mut response, origin);
        }
        response
    }
}

/// Step 4: the principal (and, from an access token, its scopes) put into
/// the request's extensions, with what the credential is good for, or the
/// refusal.
async fn authenticate<A: App>(hub: &Hub<A>, parts: &mut Parts) -> Result<(), Reject> {
    #[cfg(feature = "oauth")]
    if let Some(server) = &hub.resource_server {
        return server.admit(hub.authenticator.as_deref(), parts).await;
    }
    if let Some(authenticator) = &hub.authenticator {
        let (principal, validity) = authenticator.authenticate_with_validity(parts)?;
        auth::record(parts, principal, validity);
    }
    Ok(())
}

/// The methods the endpoint answers, for `Allow` and CORS.
fn allowed_methods<A: App>(hub: &Hub<A>) -> &'static str {
    legacy::allowed_methods(hub)
}

/// Steps 3 to 7; `Err` is a refusal, answered as it is.
#[allow(clippy::manual_async_fn)] // on purpose: see `modern::serve::serve`
fn authenticated<'a, A, B>(
    hub: &'a Arc<Hub<A>>,
    request: http::Request<B>,
    findings: &'a HeaderFindings,
) -> impl Future<Output = Result<Response<Body>, Response<Body>>> + 'a
where
    A: App,
    B: SendBody,
{
    async move {
        let (mut parts, body) = request.into_parts();
        let config = &hub.config;
        if let Some(name) = header_rules::duplicated(&parts.headers) {
            // Before the authenticator reads `Authorization`: two of them may
            // name two principals.
            return Err(Reject::DuplicateHeader(name).respond(None, config));
        }
        if let Err(refusal) = authenticate(hub, &mut parts).await {
            return Err(refusal.respond(None, config));
        }
        let modern = config.modern;
        let version = match &findings.version {
            Ok(Version::Modern) if !modern => {
                Err(crate::http::wire::protocol::MODERN_VERSION.to_string())
            }
            other => other.clone(),
        };
        let version = match version {
            Ok(version) => version,
            Err(requested) => {
                // The error carries the request's id when the body has one
                // (the 2026-07-28 schema's example does).
                let id = match parts.method == Method::POST {
                    true => {
                        message::request_id(body, config.max_body_bytes, config.body_read_timeout)
                            .await
                    }
                    false => None,
                };
                let reject = Reject::UnsupportedVersion {
                    requested: reject::bounded(&requested),
                    modern,
                };
                return Err(reject.respond(id.as_ref(), config));
            }
        };
        let request = http::Request::from_parts(parts, body);
        Ok(match version {
            Version::Modern => modern::serve(hub, request, findings.post, &findings.mcp).await,
            Version::Legacy(version) => legacy::serve(hub, request, version, findings.post).await,
        })
    }
}

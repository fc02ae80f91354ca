//! Authentication: who sent a request ([`Principal`]), the hook that decides
//! it ([`Authenticator`]), and the answers to a refused request.
//!
//! With an authenticator configured ([`Builder::authenticator`]), every
//! request to the endpoint (stateless 2026-07-28 ones too) is authenticated
//! before anything else is looked at, except the origin checks and a CORS
//! preflight (browsers send no credentials on those). A refusal is answered
//! 401 with the authenticator's `WWW-Authenticate` challenge, or 403.
//!
//! A session is bound to the principal that opened it: a request that
//! carries its id from another principal gets the same 404 as an unknown id
//! (no oracle: a leaked id is worth nothing to anyone else), counted as
//! [`Miss::Principal`](crate::Miss::Principal); its `DELETE` ends
//! nothing.
//!
//! The principal is put into the request's extensions, so the application
//! reads it where it reads everything else about the request:
//! [`Principal::of`] on the `http::request::Parts` that [`App::open`] gets,
//! or [`Context::principal`] in [`App::handle`]. Beside it goes what the
//! credential is good for ([`Validity`]: until when, and whether it has
//! been withdrawn), when the authenticator says
//! ([`Authenticator::authenticate_with_validity`]): a stream the request
//! opens (a listen stream, a legacy session's `GET` stream) ends when the
//! credential runs out, as its next request would be refused.
//!
//! The hook is synchronous and runs on every request. Verification that
//! needs I/O (token introspection, a JWKS fetch) belongs in a tower/axum
//! middleware in front of the manager, which puts its result into the
//! request's extensions; the authenticator then reads it from there.
//!
//! [`Builder::authenticator`]: crate::http::Builder::authenticator
//! [`App::open`]: crate::http::App::open
//! [`App::handle`]: crate::http::App::handle
//! [`Context::principal`]: crate::http::Context::principal

use super::validity::Validity;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use http::header::HeaderValue;
use http::request::Parts;

/// Why an [`Authenticator`] refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No (valid) credentials: 401 with this `WWW-Authenticate` challenge
    /// (RFC 9110 §11.6.1 requires one on every 401).
    Unauthorized {
        /// The `WWW-Authenticate` header value, e.g. `Bearer realm="mcp"`.
        challenge: HeaderValue,
    },
    /// Valid credentials that are not allowed here: 403.
    Forbidden,
}

impl AuthError {
    /// 401 with a bearer-token challenge (RFC 6750 §3): `Bearer realm="mcp"`,
    /// plus `error="invalid_token"` when a token was presented but is not
    /// valid, so a client knows to get a new one rather than to add one.
    pub fn bearer(token_presented: bool) -> AuthError {
        let challenge = if token_presented {
            r#"Bearer realm="mcp", error="invalid_token""#
        } else {
            r#"Bearer realm="mcp""#
        };
        AuthError::Unauthorized {
            challenge: HeaderValue::from_static(challenge),
        }
    }
}

impl From<AuthError> for Reject {
    fn from(refusal: AuthError) -> Reject {
        match refusal {
            AuthError::Unauthorized { challenge } => Reject::Unauthorized(challenge),
            AuthError::Forbidden => Reject::Forbidden,
        }
    }
}

/// Decides who sent a request, or refuses it; see [`Builder::authenticator`].
///
/// Implemented for every `Fn(&Parts) -> Result<Principal, AuthError>`:
///
/// ```
/// use sessionreg::http::{Principal, AuthError};
///
/// // A user name that an auth middleware in front of the manager put into
/// // the request's extensions (what axum/tower middleware do).
/// #[derive(Clone)]
/// struct User(String);
///
/// let authenticator = |request: &http::request::Parts| match request.extensions.get::<User>() {
///     Some(User(name)) => Ok(Principal::new(name.as_str())),
///     None => Err(AuthError::bearer(false)),
/// };
/// # let _ = authenticator;
/// ```
///
/// [`Builder::authenticator`]: crate::http::Builder::authenticator
pub trait Authenticator: Send + Sync + 'static {
    /// The principal the request comes from, or why it is refused. Called
    /// once per request, on the request path: keep it short; it must not
    /// block.
    fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError>;

    /// [`authenticate`](Authenticator::authenticate), and what the
    /// request's credential is good for: until when (a token's expiry),
    /// and the [`Withdrawal`](crate::http::Withdrawal) that withdraws it. The
    /// manager calls this one (once per request, in place of
    /// `authenticate`); a stream the request opens ends when the validity
    /// runs out. The default: `authenticate`'s principal, and the
    /// [`Validity`] a middleware in front of the manager put into the
    /// request's extensions (good for ever without one).
    ///
    /// ```
    /// use sessionreg::http::{AuthError, Authenticator, Principal, Validity};
    /// use std::time::{Duration, SystemTime};
    ///
    /// struct Signed;
    ///
    /// impl Authenticator for Signed {
    ///     fn authenticate(&self, request: &http::request::Parts) -> Result<Principal, AuthError> {
    ///         self.authenticate_with_validity(request).map(|(principal, _)| principal)
    ///     }
    ///
    ///     fn authenticate_with_validity(
    ///         &self,
    ///         request: &http::request::Parts,
    ///     ) -> Result<(Principal, Validity), AuthError> {
    ///         // A credential checked here, good for an hour.
    ///         let expires = SystemTime::now() + Duration::from_secs(3600);
    ///         Ok((Principal::new("ada"), Validity::new().until(expires)))
    ///     }
    /// }
    /// # let (parts, ()) = http::Request::new(()).into_parts();
    /// # assert!(Signed.authenticate_with_validity(&parts).unwrap().1.expires_at().is_some());
    /// ```
    fn authenticate_with_validity(
        &self,
        request: &Parts,
    ) -> Result<(Principal, Validity), AuthError> {
        let principal = self.authenticate(request)?;
        Ok((
            principal,
            Validity::of(request).cloned().unwrap_or_default(),
        ))
    }
}

/// Puts what authentication found into the request's extensions: the
/// principal, and its credential's validity (none kept when it is good for
/// ever, so most requests pay no insert for it).
pub(crate) fn record(request: &mut Parts, principal: Principal, validity: Validity) {
    request.extensions.insert(principal);
    if validity.is_forever() {
        request.extensions.remove::<Validity>();
    } else {
        request.extensions.insert(validity);
    }
}

impl<F> Authenticator for F
where
    F: Fn(&Parts) -> Result<Principal, AuthError> + Send + Sync + 'static,
{
    fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError> {
        self(request)
    }
}

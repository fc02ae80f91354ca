//! A JWT access token checked against the keys in force: synchronous, no
//! I/O. The signature by the key its header names, with an algorithm that
//! key may verify (asymmetric only: `none` does not parse, and an HMAC
//! `alg` matches no key, whatever its "secret" was, the public key's bytes
//! included); then the claims: `iss` the issuer, `aud` the resource (a
//! string, or an array holding it; RFC 8707), `exp` and `nbf` within the
//! leeway, `sub` present. The checks are the JWS crate's, on one
//! `Validation` per key built when the keys were read.
//!
//! Only access tokens are access tokens. An OpenID Connect ID token is
//! signed by the same keys and names the same issuer; what tells it apart
//! is its audience (the client's id, which a resource server may have been
//! told to accept) and the claims only an ID token carries: `nonce`,
//! `at_hash`, `c_hash` (OpenID Connect Core §2, §3.1.3.6, §3.3.2.11). A
//! token with any of them is refused. Where the authorization server
//! follows RFC 9068, the header's `typ` says it outright (`at+jwt`), and
//! the server may require it (§4; `ResourceServerBuilder::require_at_jwt`).

use super::jwks::KeySet;
use super::Grant;
use crate::http::access::scopes::Scopes;
use crate::http::wire::principal::Principal;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::Algorithm;
use serde::{Deserialize, Deserializer};

/// Why a JWT was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Invalid {
    /// Not a JWS of three parts with a header that parses (`alg: none`
    /// included), or claims that are not what they must be.
    Malformed,
    /// An algorithm no key may verify (HMAC, or not the key's).
    Algorithm,
    /// No key of the set has the token's `kid`.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// `exp` has passed (beyond the leeway).
    Expired,
    /// `nbf` is still to come (beyond the leeway).
    NotYetValid,
    /// `aud` does not name this resource.
    Audience,
    /// `iss` is not the issuer.
    Issuer,
    /// A required claim is missing.
    MissingClaim,
    /// A claim only an ID token carries (`nonce`, `at_hash`, `c_hash`):
    /// an ID token, not an access token.
    IdToken,
    /// The header's `typ` is not `at+jwt`, where it is required.
    TokenType,
}

/// The claims read besides those the JWS crate checks.
#[derive(Deserialize)]
struct Claims {
    sub: String,
    exp: u64,
    /// RFC 9068 / RFC 8693: a space-separated list.
    #[serde(default)]
    scope: Option<ScopeClaim>,
    /// Entra ID, Okta: `scp`, a list or a space-separated string.
    #[serde(default)]
    scp: Option<ScopeClaim>,
    /// The claims of an ID token: never in an access token.
    #[serde(default)]
    nonce: Present,
    #[serde(default)]
    at_hash: Present,
    #[serde(default)]
    c_hash: Present,
}

/// Whether a claim is there, whatever its value (`null` included).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(value: D) -> Result<Present, D::Error> {
        serde::de::IgnoredAny::deserialize(value).map(|_| Present(true))
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    List(String),
    Items(Vec<String>),
}

impl ScopeClaim {
    fn names(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match self {
            ScopeClaim::List(list) => Box::new(list.split(' ')),
            ScopeClaim::Items(items) => Box::new(items.iter().map(String::as_str)),
        }
    }
}

/// Verifies `token` with the key its header names; `issuer` is the
/// principal's first half (the `iss` the checks required); `at_jwt`: the
/// header's `typ` must say `at+jwt`.
pub(crate) fn verify(
    set: &KeySet,
    token: &str,
    issuer: &str,
    at_jwt: bool,
) -> Result<Grant, Invalid> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| Invalid::Malformed)?;
    if matches!(
        header.alg,
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
    ) {
        return Err(Invalid::Algorithm);
    }
    let key = set
        .find(header.kid.as_deref(), header.alg)
        .ok_or(Invalid::UnknownKey)?;
    if !key.validation.algorithms.contains(&header.alg) {
        return Err(Invalid::Algorithm);
    }
    let data = jsonwebtoken::decode::<Claims>(token, &key.decoding, &key.validation)
        .map_err(|error| refusal(error.kind()))?;
    let claims = data.claims;
    if at_jwt && !is_at_jwt(header.typ.as_deref()) {
        return Err(Invalid::TokenType);
    }
    if claims.nonce.0 || claims.at_hash.0 || claims.c_hash.0 {
        return Err(Invalid::IdToken);
    }
    if claims.sub.is_empty() {
        return Err(Invalid::MissingClaim);
    }
    let scopes = match (&claims.scope, &claims.scp) {
        (Some(scope), _) | (None, Some(scope)) => Scopes::new(scope.names()),
        (None, None) => Scopes::default(),
    };
    Ok(Grant {
        principal: principal(issuer, &claims.sub),
        scopes,
        expires_at: claims.exp,
    })
}

/// RFC 9068 §2.1: `at+jwt`, or `application/at+jwt`; in any case (a
/// media type is case-insensitive, RFC 7515 §4.1.9).
fn is_at_jwt(typ: Option<&str>) -> bool {
    let Some(typ) = typ else {
        return false;
    };
    let bare = match typ.get(..12) {
        Some(prefix) if prefix.eq_ignore_ascii_case("application/") => &typ[12..],
        _ => typ,
    };
    bare.eq_ignore_ascii_case("at+jwt")
}

/// The principal of a token: its issuer and subject, as `ISSUER#SUBJECT`.
/// Unambiguous: an issuer has no fragment (it is checked to have none), so
/// the first `#` ends it; stable: the same for every token of the subject.
pub(crate) fn principal(issuer: &str, subject: &str) -> Principal {
    let mut name = String::with_capacity(issuer.len() + 1 + subject.len());
    name.push_str(issuer);
    name.push('#');
    name.push_str(subject);
    Principal::new(name)
}

fn refusal(kind: &ErrorKind) -> Invalid {
    match kind {
        ErrorKind::InvalidSignature => Invalid::Signature,
        ErrorKind::ExpiredSignature => Invalid::Expired,
        ErrorKind::ImmatureSignature => Invalid::NotYetValid,
        ErrorKind::InvalidAudience => Invalid::Audience,
        ErrorKind::InvalidIssuer => Invalid::Issuer,
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => Invalid::Algorithm,
        ErrorKind::MissingRequiredClaim(_) => Invalid::MissingClaim,
        _ => Invalid::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_jwt_is_told_by_its_media_type_in_any_case() {
        for typ in [
            "at+jwt",
            "AT+JWT",
            "application/at+jwt",
            "Application/At+Jwt",
        ] {
            assert!(is_at_jwt(Some(typ)), "{typ}");
        }
        for typ in [
            "JWT",
            "jwt",
            "at+jwt2",
            "application/jwt",
            "application/",
            "x",
            "",
        ] {
            assert!(!is_at_jwt(Some(typ)), "{typ}");
        }
        assert!(!is_at_jwt(None));
    }

    #[test]
    fn id_token_claims_are_seen_whatever_their_value() {
        let read = |json: &str| serde_json::from_str::<Claims>(json).ok().unwrap();
        let plain = read(r#"{"sub":"a","exp":1}"#);
        assert!(!plain.nonce.0 && !plain.at_hash.0 && !plain.c_hash.0);
        for json in [
            r#"{"sub":"a","exp":1,"nonce":"n"}"#,
            r#"{"sub":"a","exp":1,"nonce":null}"#,
            r#"{"sub":"a","exp":1,"at_hash":{"x":[1]}}"#,
            r#"{"sub":"a","exp":1,"c_hash":7}"#,
        ] {
            let claims = read(json);
            assert!(
                claims.nonce.0 || claims.at_hash.0 || claims.c_hash.0,
                "{json}"
            );
        }
    }

    #[test]
    fn a_principal_is_issuer_hash_subject() {
        // The subject as it is, `#` and all: the issuer (checked to have no
        // fragment) ends at the first `#`.
        let p = principal("https://as.example/realms/mcp", "a#b c");
        assert_eq!(p.as_str(), "https://as.example/realms/mcp#a#b c");
        let (issuer, subject) = p.as_str().split_once('#').unwrap();
        assert_eq!(
            (issuer, subject),
            ("https://as.example/realms/mcp", "a#b c")
        );
    }
}

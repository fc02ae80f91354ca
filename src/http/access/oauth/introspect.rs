//! Opaque access tokens, asked about at the authorization server's
//! introspection endpoint (RFC 7662), when the resource server is
//! configured with credentials for it. A token that is not a JWT goes
//! there; the answer must say `active: true`, name this resource in `aud`
//! (RFC 8707: required here, as the MCP authorization page requires the
//! audience checked), name the issuer in `iss` when it names one, carry a
//! `sub`, and be within `exp`/`nbf` (with the leeway). The result is
//! cached (`cache.rs`) for at most the introspection TTL, so a revoked
//! token stops working within it; a refusal, for the refusal TTL
//! (`refusals.rs`). A failure to ask is neither.
//!
//! Introspections in flight are bounded: past the bound a request waits
//! for a place, up to the fetch timeout, then gets 401.

use super::fetch::Fetcher;
use super::verify::principal;
use super::Grant;
use crate::http::access::scopes::Scopes;
use base64::Engine as _;
use serde::Deserialize;
use std::fmt;
use std::time::Duration;
use tokio::sync::Semaphore;

/// Introspections in flight at most.
const IN_FLIGHT: usize = 64;

/// The resource server's credentials at the introspection endpoint
/// (`client_secret_basic`, RFC 6749 §2.3.1).
#[derive(Clone)]
pub(crate) struct Credentials {
    /// The `Authorization: Basic …` value.
    basic: String,
}

impl Credentials {
    pub(crate) fn new(client_id: &str, client_secret: &str) -> Credentials {
        let pair = format!("{}:{}", form_encode(client_id), form_encode(client_secret));
        Credentials {
            basic: format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            ),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credentials(..)")
    }
}

/// RFC 7662 §2.2: the members read.
#[derive(Deserialize)]
struct Introspected {
    active: bool,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    aud: Option<AudClaim>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    nbf: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AudClaim {
    One(String),
    Many(Vec<String>),
}

impl AudClaim {
    fn names(&self, audience: &[String]) -> bool {
        match self {
            AudClaim::One(one) => audience.contains(one),
            AudClaim::Many(many) => many.iter().any(|a| audience.contains(a)),
        }
    }
}

/// What the endpoint said of a token.
pub(crate) enum Verdict {
    /// Active, for this resource: what it grants.
    Active(Grant),
    /// Inactive, or not one this resource accepts.
    Refused,
    /// No answer (no place in time, the endpoint down or answering
    /// nonsense): it may be good.
    Unknown,
}

/// The introspection client.
pub(crate) struct Introspector {
    credentials: Credentials,
    places: Semaphore,
    wait: Duration,
}

impl Introspector {
    pub(crate) fn new(credentials: Credentials, wait: Duration) -> Introspector {
        Introspector {
            credentials,
            places: Semaphore::new(IN_FLIGHT),
            wait,
        }
    }

    /// What the endpoint says of an opaque token.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn introspect(
        &self,
        fetcher: &Fetcher,
        endpoint: &str,
        token: &str,
        issuer: &str,
        audience: &[String],
        leeway: u64,
        now: u64,
    ) -> Verdict {
        let Ok(Ok(_place)) = tokio::time::timeout(self.wait, self.places.acquire()).await else {
            return Verdict::Unknown;
        };
        let form = format!("token={}&token_type_hint=access_token", form_encode(token));
        let answer: Introspected = match fetcher
            .post_form(endpoint, form, Some(&self.credentials.basic))
            .await
        {
            Ok(answer) => answer,
            Err(error) => {
                tracing::warn!(%error, endpoint, "token introspection failed");
                return Verdict::Unknown;
            }
        };
        match accept(answer, issuer, audience, leeway, now) {
            Some(grant) => Verdict::Active(grant),
            None => Verdict::Refused,
        }
    }
}

/// The checks of an introspection's answer.
fn accept(
    answer: Introspected,
    issuer: &str,
    audience: &[String],
    leeway: u64,
    now: u64,
) -> Option<Grant> {
    if !answer.active
        || !answer.aud.as_ref().is_some_and(|aud| aud.names(audience))
        || answer.iss.as_deref().is_some_and(|iss| iss != issuer)
        || answer
            .exp
            .is_some_and(|exp| now > exp.saturating_add(leeway))
        || answer
            .nbf
            .is_some_and(|nbf| now.saturating_add(leeway) < nbf)
    {
        return None;
    }
    let sub = answer.sub.filter(|sub| !sub.is_empty())?;
    Some(Grant {
        principal: principal(issuer, &sub),
        scopes: answer
            .scope
            .as_deref()
            .map(Scopes::parse)
            .unwrap_or_default(),
        expires_at: answer.exp.unwrap_or(u64::MAX),
    })
}

/// `application/x-www-form-urlencoded` (WHATWG URL §5.2): unreserved bytes
/// as they are, a space as `+`, every other byte `%XX`.
fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(char::from(byte))
            }
            b' ' => out.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(char::from(HEX[usize::from(byte >> 4)]));
                out.push(char::from(HEX[usize::from(byte & 15)]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: serde_json::Value) -> Introspected {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn only_active_tokens_for_this_resource_pass() {
        let audience = ["https://mcp.example/mcp".to_string()];
        let iss = "https://as.example";
        let good = serde_json::json!({
            "active": true, "sub": "ada", "aud": ["x", "https://mcp.example/mcp"],
            "iss": iss, "exp": 1000, "scope": "a b",
        });
        let grant = accept(answer(good.clone()), iss, &audience, 30, 900).unwrap();
        assert_eq!(grant.principal.as_str(), "https://as.example#ada");
        assert!(grant.scopes.contains("b"));
        assert_eq!(grant.expires_at, 1000);
        let with = |key: &str, value: serde_json::Value| {
            let mut json = good.clone();
            json[key] = value;
            accept(answer(json), iss, &audience, 30, 900)
        };
        assert!(with("active", false.into()).is_none());
        assert!(with("aud", "https://other/mcp".into()).is_none());
        assert!(with("iss", "https://evil".into()).is_none());
        assert!(with("exp", 800.into()).is_none());
        assert!(with("exp", 880.into()).is_some(), "within the leeway");
        assert!(with("nbf", 1000.into()).is_none());
        assert!(with("sub", "".into()).is_none());
        let mut no_aud = good.clone();
        no_aud.as_object_mut().unwrap().remove("aud");
        assert!(accept(answer(no_aud), iss, &audience, 30, 900).is_none());
    }

    #[test]
    fn forms_are_encoded() {
        assert_eq!(form_encode("a b+c/é~"), "a+b%2Bc%2F%C3%A9%7E");
        assert_eq!(
            Credentials::new("id", "s:ecret").basic,
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("id:s%3Aecret")
            )
        );
    }
}

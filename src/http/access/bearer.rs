//! A ready-made [`Authenticator`]: static bearer tokens, each naming its
//! principal, replaceable at run time (token rotation without a restart).
//!
//! Tokens are kept only as SHA-256 digests, and a presented token is
//! hashed and compared, in constant time ([`subtle`]), with every
//! configured digest: the comparisons are of fixed-length values, so
//! neither which token matched, nor how much of one did, nor any token's
//! length shows in their timing (hashing the presented token takes time
//! in its own length, which its sender knows). Tokens are never logged or
//! printed: `Debug` shows the principals' names only, and
//! [`TokenFileError`] names a line, not its content.
//!
//! Each token has a [`Withdrawal`], handed with its principal to every
//! request that presents it ([`Validity`]): a replacement of the set that
//! drops a token (or gives it to another principal) withdraws it, and every
//! stream opened with it ends. A token the new set keeps for the same
//! principal keeps its withdrawal, so what it opened stays open.

use super::auth::{AuthError, Authenticator};
use super::digest::{digest, Digest};
use super::validity::{Validity, Withdrawal};
use crate::http::wire::principal::Principal;
use arc_swap::ArcSwap;
use http::header::AUTHORIZATION;
use http::request::Parts;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// Bearer tokens, each bound to a principal: an [`Authenticator`] that
/// reads `Authorization: Bearer TOKEN`. Tokens are kept as SHA-256 digests
/// and compared in constant time against every configured one, and never
/// logged (`Debug` shows the principals only). Cheap to clone: clones share the token set, so the clone handed to
/// [`Builder::authenticator`](crate::http::Builder::authenticator) sees every
/// [`replace`](BearerTokens::replace) made through another.
///
/// ```
/// use sessionreg::http::{Authenticator, BearerTokens, AuthError};
///
/// let tokens = BearerTokens::new(BearerTokens::parse("ada=s3cret-1\nbob=s3cret-2\n")?)?;
/// let (parts, ()) = http::Request::get("/mcp")
///     .header("authorization", "Bearer s3cret-2")
///     .body(())
///     .unwrap()
///     .into_parts();
/// assert_eq!(tokens.authenticate(&parts).unwrap().as_str(), "bob");
///
/// tokens.replace(BearerTokens::parse("ada=rotated")?)?;
/// assert_eq!(tokens.authenticate(&parts), Err(AuthError::bearer(true)));
/// # Ok::<(), sessionreg::http::TokenFileError>(())
/// ```
#[derive(Clone)]
pub struct BearerTokens {
    set: Arc<ArcSwap<Vec<Token>>>,
}

struct Token {
    principal: Principal,
    /// SHA-256 of the token: the token itself is not kept.
    digest: Digest,
    /// Withdraws what the token opened, when a replacement drops it.
    withdrawal: Withdrawal,
}

/// A token list that cannot be used, and why (never showing a token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFileError {
    /// The 1-based line of the text, when the problem is on one line.
    pub line: Option<usize>,
    /// What is wrong.
    pub reason: &'static str,
}

impl fmt::Display for TokenFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.reason),
            None => f.write_str(self.reason),
        }
    }
}

impl std::error::Error for TokenFileError {}

impl BearerTokens {
    /// A set of `(principal name, token)` pairs; see
    /// [`replace`](BearerTokens::replace) for what is refused.
    pub fn new(
        tokens: impl IntoIterator<Item = (String, String)>,
    ) -> Result<BearerTokens, TokenFileError> {
        Ok(BearerTokens {
            set: Arc::new(ArcSwap::from_pointee(validate(tokens)?)),
        })
    }

    /// Reads `NAME=TOKEN` lines (blank lines and `#` comments skipped), as
    /// in a `--bearer-token-file`.
    pub fn parse(text: &str) -> Result<Vec<(String, String)>, TokenFileError> {
        let mut pairs = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |reason| TokenFileError {
                line: Some(n + 1),
                reason,
            };
            let (name, token) = line.split_once('=').ok_or(at("expected NAME=TOKEN"))?;
            let (name, token) = (name.trim(), token.trim());
            if name.is_empty() || token.is_empty() {
                return Err(at("empty name or token"));
            }
            pairs.push((name.to_string(), token.to_string()));
        }
        Ok(pairs)
    }

    /// Swaps in a new token set for every clone. A token the new set
    /// drops, or gives to another principal, is withdrawn: the streams it
    /// opened (listen streams, legacy `GET` streams) end, and its next
    /// request gets 401; a token kept for the same principal keeps what it
    /// opened. Refused, keeping the old set: an empty set (it would lock
    /// everyone out: say so by other means), a token that is not visible
    /// ASCII, or one token given to two names. Returns how many tokens are
    /// now in force.
    pub fn replace(
        &self,
        tokens: impl IntoIterator<Item = (String, String)>,
    ) -> Result<usize, TokenFileError> {
        let fresh = validate(tokens)?;
        let count = fresh.len();
        let kept: HashSet<(&Digest, &Principal)> =
            fresh.iter().map(|t| (&t.digest, &t.principal)).collect();
        // Whatever set is in force when the swap lands (another replace
        // may race this one): its kept tokens carry their withdrawals
        // over, and the others are withdrawn once it is out of force.
        let previous = self.set.rcu(|current| {
            let carried: HashMap<(&Digest, &Principal), &Withdrawal> = current
                .iter()
                .map(|t| ((&t.digest, &t.principal), &t.withdrawal))
                .collect();
            let next: Vec<Token> = fresh
                .iter()
                .map(|t| Token {
                    principal: t.principal.clone(),
                    digest: t.digest,
                    withdrawal: carried
                        .get(&(&t.digest, &t.principal))
                        .map_or_else(|| t.withdrawal.clone(), |w| (*w).clone()),
                })
                .collect();
            Arc::new(next)
        });
        for token in previous
            .iter()
            .filter(|t| !kept.contains(&(&t.digest, &t.principal)))
        {
            token.withdrawal.withdraw();
        }
        Ok(count)
    }

    /// The principals that have a token now, in order.
    pub fn principals(&self) -> Vec<Principal> {
        self.set
            .load()
            .iter()
            .map(|t| t.principal.clone())
            .collect()
    }

    /// The principal whose token `presented` is, and the token's
    /// withdrawal, comparing its digest with every token's in constant
    /// time.
    fn find(&self, presented: &[u8]) -> Option<(Principal, Withdrawal)> {
        let presented = digest(presented);
        let tokens = self.set.load();
        // 1-based index of the match; 0 for none. Selected without a branch
        // on any comparison's outcome; every comparison is of 32 bytes.
        let mut found = 0u32;
        for (i, token) in tokens.iter().enumerate() {
            let index = u32::try_from(i + 1).unwrap_or(u32::MAX);
            found.conditional_assign(&index, token.digest.ct_eq(&presented));
        }
        let index = usize::try_from(found).ok()?.checked_sub(1)?;
        tokens
            .get(index)
            .map(|t| (t.principal.clone(), t.withdrawal.clone()))
    }
}

fn validate(
    tokens: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<Token>, TokenFileError> {
    let mut seen = HashSet::new();
    let mut set = Vec::new();
    for (name, token) in tokens {
        let refuse = |reason| TokenFileError { line: None, reason };
        if name.is_empty() {
            return Err(refuse("a token has an empty name"));
        }
        if token.is_empty() || !token.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return Err(refuse(
                "a token is empty or has characters other than visible ASCII",
            ));
        }
        let digest = digest(token.as_bytes());
        if !seen.insert(digest) {
            return Err(refuse("the same token is given twice"));
        }
        set.push(Token {
            principal: Principal::new(name),
            digest,
            withdrawal: Withdrawal::new(),
        });
    }
    if set.is_empty() {
        return Err(TokenFileError {
            line: None,
            reason: "no tokens",
        });
    }
    Ok(set)
}

impl Authenticator for BearerTokens {
    /// `Authorization: Bearer TOKEN` (the scheme is case-insensitive, RFC
    /// 9110 §11.1); anything else is 401 with a `Bearer` challenge.
    fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError> {
        self.authenticate_with_validity(request)
            .map(|(principal, _)| principal)
    }

    /// The token's principal, and its validity: no expiry, withdrawn when a
    /// [`replace`](BearerTokens::replace) drops the token.
    fn authenticate_with_validity(
        &self,
        request: &Parts,
    ) -> Result<(Principal, Validity), AuthError> {
        let Some(value) = request.headers.get(AUTHORIZATION) else {
            return Err(AuthError::bearer(false));
        };
        let presented = value
            .as_bytes()
            .split_at_checked(7)
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case(b"bearer "))
            .map(|(_, token)| token.trim_ascii());
        match presented {
            Some(token) if !token.is_empty() => {
                let (principal, withdrawal) = self.find(token).ok_or(AuthError::bearer(true))?;
                Ok((principal, Validity::new().withdrawn_by(withdrawal)))
            }
            _ => Err(AuthError::bearer(false)),
        }
    }
}

impl fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerTokens")
            .field("principals", &self.principals())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(authorization: Option<&str>) -> Parts {
        let mut request = http::Request::get("/mcp");
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn tokens_name_their_principal() {
        let tokens =
            BearerTokens::new(BearerTokens::parse("# ops\nada = t-a\n\nbob=t-b").unwrap()).unwrap();
        let who = |auth| tokens.authenticate(&parts(auth)).map(|p| p.to_string());
        assert_eq!(who(Some("Bearer t-a")), Ok("ada".into()));
        assert_eq!(who(Some("bearer  t-b ")), Ok("bob".into()));
        assert_eq!(who(Some("Bearer t-c")), Err(AuthError::bearer(true)));
        assert_eq!(who(Some("Bearer t-")), Err(AuthError::bearer(true)));
        assert_eq!(who(Some("Basic t-a")), Err(AuthError::bearer(false)));
        assert_eq!(who(Some("Bearer ")), Err(AuthError::bearer(false)));
        assert_eq!(who(None), Err(AuthError::bearer(false)));
    }

    #[test]
    fn bad_sets_are_refused_and_keep_the_old_one() {
        let tokens = BearerTokens::new([("ada".to_string(), "t-a".to_string())]).unwrap();
        assert_eq!(BearerTokens::parse("ada").unwrap_err().line, Some(1));
        assert_eq!(BearerTokens::parse("x=1\n=t").unwrap_err().line, Some(2));
        for bad in [
            vec![],
            vec![("a".into(), "same".into()), ("b".into(), "same".into())],
            vec![("a".into(), "has space".into())],
        ] {
            assert!(tokens.replace(bad).is_err());
        }
        assert_eq!(
            tokens
                .authenticate(&parts(Some("Bearer t-a")))
                .unwrap()
                .as_str(),
            "ada"
        );
        // Debug never shows a token.
        assert!(!format!("{tokens:?}").contains("t-a"));
    }

    /// `subtle`'s slice comparison returns early when the lengths differ,
    /// so comparing presented tokens with kept ones would show each kept
    /// token's length: only fixed-length digests are kept and compared.
    /// Tokens of any length, and tokens that share a
    /// prefix, still find their principal and only theirs. (The property
    /// itself is about timing, which no test here measures.)
    #[test]
    fn tokens_are_kept_and_compared_as_digests() {
        let long = "t".repeat(4096);
        let tokens = BearerTokens::new([
            ("short".to_string(), "x".to_string()),
            ("prefix".to_string(), "xy".to_string()),
            ("long".to_string(), long.clone()),
        ])
        .unwrap();
        let who = |token: &str| tokens.find(token.as_bytes()).map(|(p, _)| p.to_string());
        assert_eq!(who("x").as_deref(), Some("short"));
        assert_eq!(who("xy").as_deref(), Some("prefix"));
        assert_eq!(who(&long).as_deref(), Some("long"));
        assert_eq!(who("xyz"), None);
        assert_eq!(who(&long[1..]), None);
        for token in tokens.set.load().iter() {
            assert_eq!(token.digest.len(), 32);
            assert_ne!(&token.digest[..1], b"x");
        }
        assert_eq!(
            std::mem::size_of::<Token>(),
            std::mem::size_of::<Principal>() + 32 + std::mem::size_of::<Withdrawal>()
        );
    }

    /// A replacement withdraws the tokens it drops, and a token it gives
    /// to another principal; a token it keeps for the same principal keeps
    /// its withdrawal (what it opened stays open), through any number of
    /// replacements.
    #[test]
    fn a_replacement_withdraws_the_tokens_it_drops_and_no_other() {
        let pairs = |text: &str| BearerTokens::parse(text).unwrap();
        let tokens = BearerTokens::new(pairs("ada=t-a\nbob=t-b\neve=t-e")).unwrap();
        let validity = |token: &str| {
            tokens
                .authenticate_with_validity(&parts(Some(&format!("Bearer {token}"))))
                .unwrap()
                .1
        };
        let (ada, bob, eve) = (validity("t-a"), validity("t-b"), validity("t-e"));
        assert!(ada.expires_at().is_none());
        tokens.replace(pairs("bob=t-b\neve=t-a")).unwrap();
        assert!(ada.is_withdrawn(), "t-a went to another principal");
        assert!(eve.is_withdrawn(), "t-e was dropped");
        assert!(!bob.is_withdrawn(), "t-b was kept for bob");
        tokens.replace(pairs("bob=t-b\nada=t-new")).unwrap();
        assert!(!bob.is_withdrawn(), "kept again");
        assert!(!validity("t-b").is_withdrawn());
        // A refused replacement withdraws nothing.
        assert!(tokens.replace(pairs("")).is_err());
        assert!(!validity("t-b").is_withdrawn() && !validity("t-new").is_withdrawn());
    }
}

//! What a resource server counts ([`OAuthStats`]), and its Prometheus text.

use crate::striped::Striped;
use crate::sync::AtomicU64;
use std::fmt::Write;

/// A snapshot of a [`ResourceServer`](super::ResourceServer)'s counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OAuthStats {
    /// Tokens accepted (signature and claims checked, or introspected).
    pub accepted: u64,
    /// Of those, answered from the cache of verified tokens (or by
    /// another request's introspection of the same token).
    pub cached: u64,
    /// Requests without a bearer token (401).
    pub missing: u64,
    /// Tokens refused (401): bad signature, unknown key, expired, another
    /// audience or issuer, malformed, inactive.
    pub invalid: u64,
    /// Valid tokens without a required scope (403).
    pub insufficient_scope: u64,
    /// JWTs that could not be checked (503): the key set is older than
    /// `keys_max_age` and could not be fetched again.
    pub unavailable: u64,
    /// Key set fetches that succeeded.
    pub refreshes: u64,
    /// Key set fetches that failed (the known keys stayed in force).
    pub refresh_failures: u64,
    /// Introspection requests made (RFC 7662).
    pub introspections: u64,
    /// Keys in force now.
    pub keys: u64,
    /// Of the tokens refused, ID tokens: JWTs carrying a claim only an
    /// OpenID Connect ID token has (`nonce`, `at_hash`, `c_hash`).
    pub id_tokens: u64,
    /// Of the tokens refused, JWTs whose `typ` is not `at+jwt`, where it
    /// is required.
    pub wrong_type: u64,
    /// Of the tokens refused, opaque tokens refused without asking the
    /// authorization server: within the refusal TTL of its refusal, or
    /// while it was being asked about for another request.
    pub refusals_cached: u64,
    /// Discoveries of the authorization server's metadata that found it.
    pub discoveries: u64,
    /// Discoveries that did not (at most one starts per minimum refresh
    /// interval).
    pub discovery_failures: u64,
}

impl OAuthStats {
    /// Appends the counters in Prometheus text format:
    /// `sessionreg_oauth_tokens_total{outcome}` (`accepted`, `cached`,
    /// `missing`, `invalid`, `insufficient_scope`, `unavailable`),
    /// `sessionreg_oauth_invalid_total{cause}` (some causes of `invalid`:
    /// `id_token`, `token_type`, `refusal_cached`),
    /// `sessionreg_oauth_key_refreshes_total{outcome}` (`ok`, `failed`),
    /// `sessionreg_oauth_discoveries_total{outcome}` (`ok`, `failed`),
    /// `sessionreg_oauth_introspections_total` and `sessionreg_oauth_keys`.
    pub fn write_metrics(&self, out: &mut String) {
        out.push_str("# TYPE sessionreg_oauth_tokens_total counter\n");
        for (outcome, n) in [
            ("accepted", self.accepted),
            ("cached", self.cached),
            ("missing", self.missing),
            ("invalid", self.invalid),
            ("insufficient_scope", self.insufficient_scope),
            ("unavailable", self.unavailable),
        ] {
            let _ = writeln!(
                out,
                "sessionreg_oauth_tokens_total{{outcome=\"{outcome}\"}} {n}"
            );
        }
        out.push_str("# TYPE sessionreg_oauth_invalid_total counter\n");
        for (cause, n) in [
            ("id_token", self.id_tokens),
            ("token_type", self.wrong_type),
            ("refusal_cached", self.refusals_cached),
        ] {
            let _ = writeln!(
                out,
                "sessionreg_oauth_invalid_total{{cause=\"{cause}\"}} {n}"
            );
        }
        out.push_str("# TYPE sessionreg_oauth_key_refreshes_total counter\n");
        let _ = writeln!(
            out,
            "sessionreg_oauth_key_refreshes_total{{outcome=\"ok\"}} {}",
            self.refreshes
        );
        let _ = writeln!(
            out,
            "sessionreg_oauth_key_refreshes_total{{outcome=\"failed\"}} {}",
            self.refresh_failures
        );
        out.push_str("# TYPE sessionreg_oauth_discoveries_total counter\n");
        for (outcome, n) in [
            ("ok", self.discoveries),
            ("failed", self.discovery_failures),
        ] {
            let _ = writeln!(
                out,
                "sessionreg_oauth_discoveries_total{{outcome=\"{outcome}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# TYPE sessionreg_oauth_introspections_total counter\nsessionreg_oauth_introspections_total {}",
            self.introspections
        );
        let _ = writeln!(
            out,
            "# TYPE sessionreg_oauth_keys gauge\nsessionreg_oauth_keys {}",
            self.keys
        );
    }
}

/// One thread's tallies.
#[derive(Default)]
pub(crate) struct OAuthStripe {
    accepted: AtomicU64,
    cached: AtomicU64,
    missing: AtomicU64,
    invalid: AtomicU64,
    insufficient_scope: AtomicU64,
    refreshes: AtomicU64,
    refresh_failures: AtomicU64,
    introspections: AtomicU64,
    id_tokens: AtomicU64,
    wrong_type: AtomicU64,
    unavailable: AtomicU64,
    refusals_cached: AtomicU64,
    discoveries: AtomicU64,
    discovery_failures: AtomicU64,
}

/// The live counters, striped by thread as the registry's are
/// (`src/striped.rs`): a request's bump is no contended cache line.
pub(crate) struct OAuthCounters(Striped<OAuthStripe>);

impl Default for OAuthCounters {
    fn default() -> OAuthCounters {
        let threads = std::thread::available_parallelism().map_or(8, |n| n.get());
        OAuthCounters(Striped::new((4 * threads).clamp(8, 256)))
    }
}

impl OAuthCounters {
    pub(crate) fn accepted(&self, cached: bool) {
        self.0.bump(|s| &s.accepted);
        if cached {
            self.0.bump(|s| &s.cached);
        }
    }
    pub(crate) fn missing(&self) {
        self.0.bump(|s| &s.missing);
    }
    pub(crate) fn invalid(&self) {
        self.0.bump(|s| &s.invalid);
    }
    pub(crate) fn insufficient_scope(&self) {
        self.0.bump(|s| &s.insufficient_scope);
    }
    pub(crate) fn refreshed(&self) {
        self.0.bump(|s| &s.refreshes);
    }
    pub(crate) fn refresh_failed(&self) {
        self.0.bump(|s| &s.refresh_failures);
    }
    pub(crate) fn introspected(&self) {
        self.0.bump(|s| &s.introspections);
    }
    pub(crate) fn id_token(&self) {
        self.0.bump(|s| &s.id_tokens);
    }
    pub(crate) fn wrong_type(&self) {
        self.0.bump(|s| &s.wrong_type);
    }
    pub(crate) fn unavailable(&self) {
        self.0.bump(|s| &s.unavailable);
    }
    pub(crate) fn refusal_cached(&self) {
        self.0.bump(|s| &s.refusals_cached);
    }
    pub(crate) fn discovered(&self) {
        self.0.bump(|s| &s.discoveries);
    }
    pub(crate) fn discovery_failed(&self) {
        self.0.bump(|s| &s.discovery_failures);
    }

    pub(crate) fn snapshot(&self, keys: usize) -> OAuthStats {
        OAuthStats {
            accepted: self.0.sum(|s| &s.accepted),
            cached: self.0.sum(|s| &s.cached),
            missing: self.0.sum(|s| &s.missing),
            invalid: self.0.sum(|s| &s.invalid),
            insufficient_scope: self.0.sum(|s| &s.insufficient_scope),
            refreshes: self.0.sum(|s| &s.refreshes),
            refresh_failures: self.0.sum(|s| &s.refresh_failures),
            introspections: self.0.sum(|s| &s.introspections),
            keys: keys as u64,
            id_tokens: self.0.sum(|s| &s.id_tokens),
            wrong_type: self.0.sum(|s| &s.wrong_type),
            unavailable: self.0.sum(|s| &s.unavailable),
            refusals_cached: self.0.sum(|s| &s.refusals_cached),
            discoveries: self.0.sum(|s| &s.discoveries),
            discovery_failures: self.0.sum(|s| &s.discovery_failures),
        }
    }
}

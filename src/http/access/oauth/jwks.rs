//! The authorization server's signing keys: found through its metadata
//! (RFC 8414, or OpenID Connect Discovery), fetched from its `jwks_uri`,
//! kept in memory and swapped whole on a refresh.
//!
//! * **Reading** a key is a lock-free load of the current set
//!   ([`ArcSwap`]) and a map lookup: a known key's request never waits,
//!   fetches or locks.
//! * **Refreshing** happens when a token names a key the set does not have
//!   (its request waits for that one refresh), and in the background once
//!   the set is half its maximum age (no request waits). Either way at
//!   most one refresh runs at a time, and a refresh starts at most once
//!   per `min_interval`, however many unknown keys arrive (a flood of
//!   made-up `kid`s costs the authorization server one fetch per interval,
//!   and its senders 401s): `paced.rs`. **Discovery** (the metadata, read
//!   once for the `jwks_uri` and the introspection endpoint) is under a
//!   bound of its own of the same interval, so requests that need the
//!   endpoints while the metadata is down cost it one discovery per
//!   interval, not one each.
//! * **Failing** keeps what was known, for a while: a set that cannot be
//!   fetched or read leaves the current one in force until it is
//!   `max_age` old (since it was last fetched), so an authorization server
//!   that is down for less than half that costs nothing to tokens of known
//!   keys. Past `max_age` the set is no longer trusted (a key the server
//!   withdrew meanwhile would still be in it): every JWT is refused as
//!   unverifiable (the resource server answers 503) until a refresh
//!   succeeds. A set that is read is authoritative: a key it no longer
//!   lists is gone.
//!
//! Only asymmetric keys are kept, each with the algorithms it may verify:
//! its JWK's `alg` if it names one, else those of its type and curve (RSA:
//! RS*/PS*; P-256: ES256; P-384: ES384; Ed25519: EdDSA), within the allowed
//! ones. Symmetric (`oct`) keys, encryption keys (`use: enc`) and keys
//! that do not parse are skipped.

use super::fetch::{FetchError, Fetcher};
use super::paced::Paced;
use super::urls::{check_endpoint, BaseUrl};
use arc_swap::{ArcSwap, Guard};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The keys in force, as a request sees them.
pub(crate) struct Current {
    /// The set: a guard, not a clone (no shared count is written).
    pub(crate) set: Guard<Arc<KeySet>>,
    /// Whether it may be trusted: fetched less than `max_age` ago (or
    /// never fetched, and empty).
    pub(crate) trusted: bool,
}

/// One verification key.
pub(crate) struct Key {
    pub(crate) decoding: DecodingKey,
    /// The claim checks, with this key's algorithms.
    pub(crate) validation: Validation,
}

/// The keys in force.
pub(crate) struct KeySet {
    by_kid: HashMap<String, Key>,
    /// Keys whose JWK has no `kid`.
    anonymous: Vec<Key>,
    /// Changes whenever the keys do: a verification cached under another
    /// epoch is not trusted (its key may be gone).
    pub(crate) epoch: u64,
    /// The keys' JWKs as read, sorted: what tells a changed set.
    fingerprint: Vec<String>,
    /// When the set was fetched; `None` for the empty set before the first.
    fetched_at: Option<coarsetime::Instant>,
}

impl KeySet {
    fn empty() -> KeySet {
        KeySet {
            by_kid: HashMap::new(),
            anonymous: Vec::new(),
            epoch: 0,
            fingerprint: Vec::new(),
            fetched_at: None,
        }
    }

    /// The key a token's header names: by `kid`; without one, the only key
    /// that verifies `alg`.
    pub(crate) fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<&Key> {
        match kid {
            Some(kid) => self.by_kid.get(kid),
            None => {
                let mut fitting = self
                    .by_kid
                    .values()
                    .chain(&self.anonymous)
                    .filter(|key| key.validation.algorithms.contains(&alg));
                let only = fitting.next()?;
                fitting.next().is_none().then_some(only)
            }
        }
    }

    /// How many keys are in force.
    pub(crate) fn len(&self) -> usize {
        self.by_kid.len() + self.anonymous.len()
    }
}

/// Why a refresh did not bring a new key set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshError {
    /// A refresh (or, the endpoints not known yet, a discovery of the
    /// metadata) started less than the minimum interval ago (see
    /// [`ResourceServerBuilder::min_refresh_interval`](super::ResourceServerBuilder::min_refresh_interval)).
    TooSoon,
    /// No metadata document of the issuer was found at any of its
    /// well-known URLs, or none named this issuer and a `jwks_uri`.
    NoMetadata {
        /// What each URL tried answered.
        tried: Vec<(String, String)>,
    },
    /// The metadata names an endpoint that is not allowed (plain http to a
    /// host that is not loopback, say).
    BadEndpoint(String),
    /// The JWKS could not be fetched or read.
    Jwks {
        /// Its URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
}

impl fmt::Display for RefreshError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefreshError::TooSoon => {
                f.write_str("the authorization server was asked moments ago; not again yet")
            }
            RefreshError::NoMetadata { tried } => {
                f.write_str("no authorization server metadata for the issuer")?;
                for (url, answer) in tried {
                    write!(f, "; {url}: {answer}")?;
                }
                Ok(())
            }
            RefreshError::BadEndpoint(why) => write!(f, "the metadata names a bad endpoint: {why}"),
            RefreshError::Jwks { url, reason } => write!(f, "the JWKS at {url}: {reason}"),
        }
    }
}

impl std::error::Error for RefreshError {}

/// The endpoints of the authorization server this resource server uses.
#[derive(Debug, Clone, Default)]
pub(crate) struct Endpoints {
    pub(crate) jwks_uri: Option<String>,
    pub(crate) introspection: Option<String>,
}

/// The part of RFC 8414 / OpenID Connect metadata read here.
#[derive(Deserialize)]
struct ServerMetadata {
    issuer: String,
    #[serde(default)]
    jwks_uri: Option<String>,
    #[serde(default)]
    introspection_endpoint: Option<String>,
}

/// A JWKS, its keys read one at a time (one that does not parse does not
/// cost the others).
#[derive(Deserialize)]
struct RawSet {
    keys: Vec<serde_json::Value>,
}

/// The refresh policy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refresh {
    /// A set older than this (since it was last fetched) is not trusted;
    /// one older than half of it is refreshed in the background.
    pub(crate) max_age: Duration,
    /// Refreshes start at most this often; so do discoveries.
    pub(crate) min_interval: Duration,
}

/// The key store of one issuer.
pub(crate) struct Jwks {
    set: ArcSwap<KeySet>,
    fetcher: Fetcher,
    issuer: String,
    issuer_url: BaseUrl,
    allow_http: bool,
    /// The JWKS URL given by the configuration (no discovery for it).
    jwks_uri: Option<String>,
    /// The endpoints discovery found (once).
    endpoints: Mutex<Option<Endpoints>>,
    /// The claim checks every key's validation starts from.
    template: Validation,
    allowed: Vec<Algorithm>,
    /// How long a set is trusted.
    max_age: coarsetime::Duration,
    /// One refresh at a time, one start per interval.
    refreshes: Paced,
    /// One discovery at a time, one start per interval.
    discoveries: Paced,
    /// A background refresh is spawned or running.
    background: AtomicBool,
    pub(crate) stats: Arc<super::stats::OAuthCounters>,
}

impl Jwks {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        fetcher: Fetcher,
        issuer: String,
        issuer_url: BaseUrl,
        allow_http: bool,
        jwks_uri: Option<String>,
        template: Validation,
        allowed: Vec<Algorithm>,
        policy: Refresh,
        stats: Arc<super::stats::OAuthCounters>,
    ) -> Jwks {
        Jwks {
            set: ArcSwap::from_pointee(KeySet::empty()),
            fetcher,
            issuer,
            issuer_url,
            allow_http,
            jwks_uri,
            endpoints: Mutex::new(None),
            template,
            allowed,
            max_age: policy.max_age.into(),
            refreshes: Paced::new(policy.min_interval),
            discoveries: Paced::new(policy.min_interval),
            background: AtomicBool::new(false),
            stats,
        }
    }

    /// The keys in force, and whether they may be trusted. Starts a
    /// background refresh once they are half their maximum age.
    pub(crate) fn current(self: &Arc<Self>) -> Current {
        let set = self.set.load();
        let age = set.fetched_at.map(|at| at.elapsed());
        if age.is_some_and(|age| age > self.max_age / 2) {
            self.refresh_in_background();
        }
        Current {
            set,
            trusted: age.is_none_or(|age| age <= self.max_age),
        }
    }

    /// How many keys are in force: none once the set is past its maximum
    /// age.
    pub(crate) fn current_len(&self) -> usize {
        let set = self.set.load();
        match set.fetched_at {
            Some(at) if at.elapsed() > self.max_age => 0,
            _ => set.len(),
        }
    }

    /// Spawns one refresh, unless one is spawned already, the rate bound
    /// would refuse it, or there is no runtime to spawn it on.
    fn refresh_in_background(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // Acquire: pairs with the task's Release store below (a cheap look
        // before the rate bound's lock; the swap decides).
        if self.background.load(Ordering::Acquire) || !self.refreshes.may_start() {
            return;
        }
        // Acquire/Release: the flag hands the store over to the task; one
        // task at a time.
        if self.background.swap(true, Ordering::AcqRel) {
            return;
        }
        let jwks = Arc::clone(self);
        runtime.spawn(async move {
            if let Err(error) = jwks.refresh().await {
                if error != RefreshError::TooSoon {
                    tracing::warn!(%error, "refreshing the authorization server's keys failed; the known ones stay in force until they are keys_max_age old");
                }
            }
            jwks.background.store(false, Ordering::Release);
        });
    }

    /// Fetches the keys now, unless a refresh started less than the
    /// minimum interval ago. A refresh already running is waited for
    /// first (it may bring the key the caller looks for). Returns how many
    /// keys are in force after it.
    pub(crate) async fn refresh(&self) -> Result<usize, RefreshError> {
        let turn = self.refreshes.turn().await;
        if !turn.start() {
            return Err(RefreshError::TooSoon);
        }
        let outcome = self.fetch_and_swap().await;
        match &outcome {
            Ok(_) => self.stats.refreshed(),
            Err(_) => self.stats.refresh_failed(),
        }
        outcome
    }

    async fn fetch_and_swap(&self) -> Result<usize, RefreshError> {
        let url = match &self.jwks_uri {
            Some(given) => given.clone(),
            None => self.endpoints().await?.jwks_uri.ok_or_else(|| {
                RefreshError::BadEndpoint(
                    "the authorization server's metadata names no jwks_uri".to_string(),
                )
            })?,
        };
        let raw: RawSet =
            self.fetcher
                .get_json(&url)
                .await
                .map_err(|error| RefreshError::Jwks {
                    url: url.clone(),
                    reason: error.to_string(),
                })?;
        let old = self.set.load_full();
        let set = self.build(raw, &old);
        let count = set.len();
        if set.epoch != old.epoch {
            tracing::info!(keys = count, %url, "the authorization server's keys changed");
        }
        self.set.store(Arc::new(set));
        Ok(count)
    }

    /// Puts the keys of `jwks` (a JWKS document) in force, as a fetch
    /// would: for the bench, which has no authorization server.
    #[cfg(feature = "bench-hooks")]
    pub(crate) fn install(&self, jwks: &str) -> Result<usize, serde_json::Error> {
        let raw: RawSet = serde_json::from_str(jwks)?;
        let set = self.build(raw, &self.set.load_full());
        let count = set.len();
        self.set.store(Arc::new(set));
        Ok(count)
    }

    /// The endpoints the issuer's metadata names: found before, or now. A
    /// discovery in progress is waited for; a new one starts only when the
    /// last started at least the minimum interval ago
    /// ([`RefreshError::TooSoon`] otherwise).
    pub(crate) async fn endpoints(&self) -> Result<Endpoints, RefreshError> {
        if let Some(known) = self.known_endpoints() {
            return Ok(known);
        }
        let turn = self.discoveries.turn().await;
        // The discovery waited for may have found them.
        if let Some(known) = self.known_endpoints() {
            return Ok(known);
        }
        if !turn.start() {
            return Err(RefreshError::TooSoon);
        }
        match self.discover().await {
            Ok(found) => {
                self.stats.discovered();
                *self.endpoints.lock().unwrap_or_else(|e| e.into_inner()) = Some(found.clone());
                Ok(found)
            }
            Err(error) => {
                self.stats.discovery_failed();
                Err(error)
            }
        }
    }

    fn known_endpoints(&self) -> Option<Endpoints> {
        self.endpoints
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Reads the issuer's metadata from the first well-known URL that has
    /// a document for this issuer (its `issuer` identical to the one
    /// configured: RFC 8414 §3.3).
    async fn discover(&self) -> Result<Endpoints, RefreshError> {
        let mut tried = Vec::new();
        for url in self.issuer_url.issuer_metadata_urls() {
            match self.fetcher.get_json::<ServerMetadata>(&url).await {
                Ok(metadata) if metadata.issuer == self.issuer => {
                    for endpoint in [&metadata.jwks_uri, &metadata.introspection_endpoint]
                        .into_iter()
                        .flatten()
                    {
                        check_endpoint("an endpoint of the metadata", endpoint, self.allow_http)
                            .map_err(|e| RefreshError::BadEndpoint(e.to_string()))?;
                    }
                    return Ok(Endpoints {
                        jwks_uri: metadata.jwks_uri,
                        introspection: metadata.introspection_endpoint,
                    });
                }
                Ok(metadata) => {
                    tried.push((url, format!("names another issuer, {:?}", metadata.issuer)))
                }
                // The next URL may have it (a 404 is the usual answer of
                // the kinds a server does not publish).
                Err(error @ (FetchError::Status(_) | FetchError::Json(_))) => {
                    tried.push((url, error.to_string()))
                }
                // Unreachable: the others are on the same host.
                Err(error) => {
                    tried.push((url, error.to_string()));
                    break;
                }
            }
        }
        Err(RefreshError::NoMetadata { tried })
    }

    /// The key set of a fetched JWKS; the old set's epoch if its keys are
    /// the same.
    fn build(&self, raw: RawSet, old: &KeySet) -> KeySet {
        let mut set = KeySet::empty();
        for value in raw.keys {
            let Ok(jwk) = serde_json::from_value::<Jwk>(value.clone()) else {
                continue;
            };
            let Some((decoding, algorithms)) = self.usable(&jwk) else {
                continue;
            };
            let mut validation = self.template.clone();
            validation.algorithms = algorithms;
            let key = Key {
                decoding,
                validation,
            };
            set.fingerprint.push(value.to_string());
            match jwk.common.key_id {
                Some(kid) => {
                    set.by_kid.insert(kid, key);
                }
                None => set.anonymous.push(key),
            }
        }
        set.fingerprint.sort_unstable();
        set.epoch = if set.fingerprint == old.fingerprint {
            old.epoch
        } else {
            old.epoch.wrapping_add(1)
        };
        set.fetched_at = Some(coarsetime::Instant::now());
        set
    }

    /// A JWK's decoding key and the allowed algorithms it verifies, if it
    /// is an asymmetric signing key.
    fn usable(&self, jwk: &Jwk) -> Option<(DecodingKey, Vec<Algorithm>)> {
        if matches!(
            jwk.common.public_key_use,
            Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
        ) {
            return None;
        }
        let of_type: &[Algorithm] = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => &[
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
            ],
            AlgorithmParameters::EllipticCurve(params) => match params.curve {
                EllipticCurve::P256 => &[Algorithm::ES256],
                EllipticCurve::P384 => &[Algorithm::ES384],
                _ => return None,
            },
            AlgorithmParameters::OctetKeyPair(params) => match params.curve {
                EllipticCurve::Ed25519 => &[Algorithm::EdDSA],
                _ => return None,
            },
            // Symmetric: never (a resource server that knew the secret
            // could mint tokens itself).
            AlgorithmParameters::OctetKey(_) => return None,
        };
        let named = match jwk.common.key_algorithm {
            None => None,
            Some(named) => Some(signing_algorithm(named)?),
        };
        let algorithms: Vec<Algorithm> = of_type
            .iter()
            .copied()
            .filter(|alg| named.is_none_or(|named| named == *alg))
            .filter(|alg| self.allowed.contains(alg))
            .collect();
        if algorithms.is_empty() {
            return None;
        }
        let decoding = DecodingKey::from_jwk(jwk).ok()?;
        Some((decoding, algorithms))
    }
}

/// The signing algorithm a JWK's `alg` names; `None` for the others (HMAC,
/// encryption).
fn signing_algorithm(named: KeyAlgorithm) -> Option<Algorithm> {
    Some(match named {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

/// Every asymmetric algorithm the JWS crate verifies: the default allowed.
pub(crate) const ASYMMETRIC: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

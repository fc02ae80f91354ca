//! Sealing a 2026-07-28 `requestState` (multi-round-trip requests,
//! SEP-2322): what the server hands the client with an `input_required`
//! answer and gets back, unchanged, on the retry.
//!
//! The spec asks servers to treat `requestState` as attacker-controlled,
//! to protect its integrity when it matters (it always may here: it
//! carries the application's own state), and to bind it to the principal,
//! a short expiry and the originating request. A sealed state is
//!
//! ```text
//! base64url( kid (1) | nonce (12) | AES-256-GCM(key[kid], nonce, payload, aad = kid) )
//! payload = version (1: 2, or 3 with a link) | expires, ms since the Unix epoch (8)
//!         | principal (16) | request (16) | flags (1) | [link (24), version 3]
//!         | [single-use id (24)] | the application's state
//! flags   = 1: single use | 2: recorded by the fleet (then the fleet record's epoch (8)
//!           follows, in place of the id)
//! link    = the trace id (16) and span id (8) of the request that asked for input, when
//!           its span is exported: the retry's span links to it, and nothing else reads it
//! ```
//!
//! * **Confidential and authenticated**: AEAD, so a client can neither read
//!   the application's state nor change one bit of any of it (the tag
//!   fails: `tampered`).
//! * **Bound**: `principal` is the first 16 bytes of SHA-256 of the
//!   principal's name (zeros without one); `request` the first 16 of
//!   SHA-256 of an unambiguous encoding of the principal, the method and
//!   the request's params of any JSON type (an object without `_meta`,
//!   `inputResponses` and `requestState`): length-prefixed fields and
//!   canonical JSON (`binding.rs`). A state presented by another
//!   principal, or with another request, is refused (`principal`,
//!   `request`). Truncated digests are enough inside an AEAD: forging a
//!   match needs a second request with the same 128-bit digest.
//! * **Short-lived**: `expires` (wall clock, so that the nodes of a fleet
//!   that share keys agree) is checked on opening (`expired`).
//! * **Single use**, where the application asks: the payload names an entry
//!   of a registry of used states, inserted when sealing and expiring with
//!   the state; opening ends that entry through its terminate CAS, so of
//!   two retries with one state exactly one wins (`replayed`). The record
//!   is bounded in all and per principal (`single_use.rs`). On a node with
//!   a fleet's bus (`used.rs`), the state is sealed as the fleet's instead:
//!   no local entry, and its retry, on any node, is recorded as used by one
//!   atomic set-if-absent in the fleet's record (Redis), which expires
//!   with the state; a record that cannot be reached refuses the retry
//!   (`unavailable`: fail closed) and leaves the state unused. The
//!   record's epoch is sealed in too: a state of an earlier epoch (the
//!   record may have lost keys since: a Redis flushed, restarted from
//!   older data or failed over) is refused as `expired`, so a state never
//!   opens twice.
//! * **Rotatable keys**: each key has a one-byte id; the current one seals,
//!   the previous ones still open until they are dropped
//!   ([`RequestStateKeys`]), swapped without a lock on the request path.

pub(crate) use super::binding::Binding;
use super::binding::DIGEST;
pub(crate) use super::single_use::Refused;
use super::single_use::{SingleUse, Unused};
use super::used::{Redeemed, UsedKey, UsedStates};
use crate::http::wire::config::Config;
use crate::http::wire::config_error::ConfigError;
use crate::http::wire::principal::Principal;
use crate::http::wire::unix_time::unix_ms;
use crate::{Registry, SessionId};
use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use arc_swap::ArcSwap;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The payload's version: 2 since the request digest's encoding changed
/// (`binding.rs`); a state of version 1 is refused as malformed.
const VERSION: u8 = 2;
/// Version 2 with a link after the flags: only a state sealed while the
/// asking request's span is exported is one (so a node that does not know
/// it refuses it as malformed rather than read the link as the state).
const VERSION_LINKED: u8 = 3;
/// A link: a trace id and a span id.
pub(crate) const LINK: usize = 16 + 8;
const NONCE: usize = 12;
const TAG: usize = 16;
/// A token's clear head: the key id and the nonce.
const HEAD: usize = 1 + NONCE;
/// version, expires, principal, request, flags.
const FIXED: usize = 1 + 8 + DIGEST + DIGEST + 1;
const SINGLE_USE: u8 = 1;
/// With `SINGLE_USE`: recorded by the fleet's record of used states, not
/// by an entry of the sealing node's (no id in the payload).
const SHARED: u8 = 2;
const ID: usize = SessionId::TEXT_LEN / 2;
/// The fleet record's epoch, in a shared single-use state.
const EPOCH: usize = 8;

/// Why a `requestState` was refused (the label of
/// `sessionreg_request_state_rejected_total{cause}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StateRejection {
    /// Not a sealed state at all (not base64, too short).
    Malformed,
    /// Sealed with a key this server does not hold (rotated out, or never
    /// its own).
    UnknownKey,
    /// Changed, or not sealed by this server: the tag does not verify.
    Tampered,
    /// Past its expiry; or, single use in a fleet, sealed before the
    /// fleet's record of used states last changed its epoch (a Redis
    /// flushed, restarted or failed over: it may have lost used states).
    Expired,
    /// Presented by another principal than the one it was sealed for.
    Principal,
    /// Presented with another request than the one it was sealed for.
    Request,
    /// A single-use state presented again (or its record expired).
    Replayed,
    /// A single-use state whose use could not be recorded: the fleet's
    /// record of used states (Redis) is unreachable, or this node has none
    /// (a state sealed by a node of a fleet with a bus). Refused with 503
    /// and `Retry-After`; the state stays unused.
    Unavailable,
}

impl StateRejection {
    /// Every cause, in declaration order.
    pub const ALL: [StateRejection; 8] = [
        StateRejection::Malformed,
        StateRejection::UnknownKey,
        StateRejection::Tampered,
        StateRejection::Expired,
        StateRejection::Principal,
        StateRejection::Request,
        StateRejection::Replayed,
        StateRejection::Unavailable,
    ];

    /// The metric label.
    pub const fn as_str(self) -> &'static str {
        match self {
            StateRejection::Malformed => "malformed",
            StateRejection::UnknownKey => "unknown_key",
            StateRejection::Tampered => "tampered",
            StateRejection::Expired => "expired",
            StateRejection::Principal => "principal",
            StateRejection::Request => "request",
            StateRejection::Replayed => "replayed",
            StateRejection::Unavailable => "unavailable",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for StateRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The keys that seal and open `requestState`s: the current one (which
/// seals) and those still accepted for opening (previous ones, during a
/// rotation). Each has a one-byte id, written into every state it seals.
#[derive(Clone)]
pub struct RequestStateKeys {
    current: u8,
    keys: Vec<(u8, [u8; 32])>,
}

impl fmt::Debug for RequestStateKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the keys.
        let ids: Vec<u8> = self.keys.iter().map(|(id, _)| *id).collect();
        f.debug_struct("RequestStateKeys")
            .field("current", &self.current)
            .field("ids", &ids)
            .finish()
    }
}

impl RequestStateKeys {
    /// One key, `id`, that seals and opens.
    pub fn new(id: u8, key: [u8; 32]) -> RequestStateKeys {
        RequestStateKeys {
            current: id,
            keys: vec![(id, key)],
        }
    }

    /// A key drawn from a CSPRNG seeded by the operating system (the
    /// default: states sealed by one process open only in it), the
    /// fork-aware one ids are drawn from.
    pub fn random() -> RequestStateKeys {
        let mut key = [0u8; 32];
        crate::secret::fill_random(&mut key);
        RequestStateKeys::new(0, key)
    }

    /// These keys, with `id` made the one that seals; the keys already
    /// held still open (the oldest beyond `keep` in all are dropped). A
    /// rotation: seal with the new key at once, open the old key's states
    /// until they would have expired anyway.
    pub fn rotated(mut self, id: u8, key: [u8; 32], keep: usize) -> RequestStateKeys {
        self.keys.retain(|(old, _)| *old != id);
        self.keys.insert(0, (id, key));
        self.keys.truncate(keep.max(1));
        self.current = id;
        self
    }

    /// The id of the key that seals, and every key held (the bus's keys
    /// are kept as these: `bus/keys.rs`).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn held(&self) -> (u8, &[(u8, [u8; 32])]) {
        (self.current, &self.keys)
    }

    /// Reads `ID=KEY` lines, KEY 64 hex digits (blank lines and `#`
    /// comments skipped); the first line's key seals, the others open.
    pub fn parse(text: &str) -> Result<RequestStateKeys, &'static str> {
        let mut keys = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (id, hex) = line.split_once('=').ok_or("expected ID=KEY")?;
            let id: u8 = id.trim().parse().map_err(|_| "the key id is not 0-255")?;
            let hex = hex.trim();
            if hex.len() != 64 {
                return Err("a key is 64 hex digits");
            }
            let mut key = [0u8; 32];
            for (i, byte) in key.iter_mut().enumerate() {
                *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)
                    .map_err(|_| "a key is 64 hex digits")?;
            }
            if keys.iter().any(|(other, _)| *other == id) {
                return Err("a key id is given twice");
            }
            keys.push((id, key));
        }
        let current = keys.first().ok_or("no keys")?.0;
        Ok(RequestStateKeys { current, keys })
    }
}

/// The keys in force, each with its cipher built once (the AES key
/// schedule and the GHASH key), not once per seal or open.
struct Keyring {
    keys: RequestStateKeys,
    ciphers: Vec<(u8, Aes256Gcm)>,
}

impl Keyring {
    fn new(keys: RequestStateKeys) -> Keyring {
        let ciphers = keys
            .keys
            .iter()
            .map(|(id, key)| (*id, Aes256Gcm::new(key.into())))
            .collect();
        Keyring { keys, ciphers }
    }

    fn cipher(&self, id: u8) -> Option<&Aes256Gcm> {
        self.ciphers
            .iter()
            .find(|(kid, _)| *kid == id)
            .map(|(_, cipher)| cipher)
    }
}

/// A state opened and verified: the application's bytes, and the span of
/// the request that asked for input, if it was sealed with one (for a
/// span link, and nothing else: it is only as true as the asking
/// request's trace context was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opened {
    pub(crate) state: Vec<u8>,
    pub(crate) link: Option<[u8; LINK]>,
}

/// A state opened and verified, and what is left to do before it may be
/// used.
#[must_use]
#[derive(Debug)]
pub(crate) enum Opening {
    /// Ready (a single-use state of this node's record is used up already).
    Opened(Opened),
    /// A single-use state of the fleet's record: [`Sealer::redeem`] it
    /// first (the one step of a request that waits for the fleet's record,
    /// taken only by a retry that carries such a state).
    Redeem(Redeem),
}

/// A fleet's single-use state, verified, not yet recorded as used.
#[derive(Debug)]
pub(crate) struct Redeem {
    opened: Opened,
    key: UsedKey,
    /// The fleet record's epoch it was sealed in.
    epoch: u64,
    /// The state's remaining life: how long the record keeps its key.
    ttl: Duration,
}

/// Seals and opens the states of one endpoint.
pub(crate) struct Sealer {
    keys: ArcSwap<Keyring>,
    ttl: Duration,
    /// Single-use states not used yet (`single_use.rs`), without a fleet's
    /// record.
    single_use: SingleUse,
    /// The fleet's record of used states (`used.rs`), with a bus.
    used: Option<Arc<dyn UsedStates>>,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sealer")
            .field("keys", &self.keys.load().keys)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer with `keys`, states living `config.request_state_ttl`, and
    /// the record of single-use states `config` bounds; with `used`, the
    /// fleet's record of used states instead, for every state it seals.
    pub(crate) fn new(
        keys: RequestStateKeys,
        config: &Config,
        used: Option<Arc<dyn UsedStates>>,
    ) -> Result<Sealer, ConfigError> {
        Ok(Sealer {
            keys: ArcSwap::from_pointee(Keyring::new(keys)),
            ttl: config.request_state_ttl,
            single_use: SingleUse::new(config)?,
            used,
        })
    }

    /// Swaps in new keys (the ones in force are replaced whole).
    pub(crate) fn set_keys(&self, keys: RequestStateKeys) {
        self.keys.store(Arc::new(Keyring::new(keys)));
    }

    /// The record of unused single-use states (swept by the reaper).
    pub(crate) fn unused(&self) -> &Registry<Unused> {
        self.single_use.unused()
    }

    /// Seals the application's `state` for `binding`, with `link` (the
    /// asking request's span) if there is one; `single_use` records it (as
    /// `owner`'s) so that it opens once only; that record may be refused
    /// (the principal's share, or the whole record, full). With the fleet's
    /// record, nothing is recorded now (its retry is).
    pub(crate) fn seal(
        &self,
        binding: &Binding,
        state: &[u8],
        single_use: bool,
        owner: Option<&Principal>,
        link: Option<&[u8; LINK]>,
    ) -> Result<String, Refused> {
        let keys = self.keys.load();
        let kid = keys.keys.current;
        let cipher = keys.cipher(kid).expect("the current key is held");
        let expires = unix_ms().saturating_add(self.ttl.as_millis() as u64);
        // One buffer: the token's head (kid, nonce), the payload sealed in
        // place after it, then the tag.
        let mut token = Vec::with_capacity(HEAD + FIXED + LINK + ID + state.len() + TAG);
        token.push(kid);
        // From the ids' fork-aware generator: a forked child reseeds before
        // it draws, so it never seals with its parent's next nonce (the same
        // nonce twice under one key gives AES-GCM's authentication key away).
        let mut nonce = [0u8; NONCE];
        crate::secret::fill_random(&mut nonce);
        token.extend_from_slice(&nonce);
        token.push(if link.is_some() {
            VERSION_LINKED
        } else {
            VERSION
        });
        token.extend_from_slice(&expires.to_be_bytes());
        token.extend_from_slice(&binding.principal);
        token.extend_from_slice(&binding.request);
        let flags = token.len();
        token.push(0);
        if let Some(link) = link {
            token.extend_from_slice(link);
        }
        if let Some(used) = self.used.as_ref().filter(|_| single_use) {
            token[flags] = SINGLE_USE | SHARED;
            token.extend_from_slice(&used.epoch().to_be_bytes());
        } else if single_use {
            let id = self.single_use.record(owner)?;
            token[flags] = SINGLE_USE;
            token.extend_from_slice(&id.to_bytes());
        }
        token.extend_from_slice(state);
        let tag = cipher
            .encrypt_in_place_detached(Nonce::from_slice(&nonce), &[kid], &mut token[HEAD..])
            .expect("AES-GCM seals any payload of this size");
        token.extend_from_slice(&tag);
        Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token))
    }

    /// Opens a state presented with a request bound as `binding`, checking
    /// its tag, expiry, principal and request, and using it up if it is
    /// single-use in this node's record; one of the fleet's record is
    /// handed back to be [redeemed](Sealer::redeem).
    pub(crate) fn open(&self, token: &str, binding: &Binding) -> Result<Opening, StateRejection> {
        let mut raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.trim())
            .map_err(|_| StateRejection::Malformed)?;
        if raw.len() < HEAD + TAG + FIXED {
            return Err(StateRejection::Malformed);
        }
        let kid = raw[0];
        let keys = self.keys.load();
        let cipher = keys.cipher(kid).ok_or(StateRejection::UnknownKey)?;
        let (head, sealed) = raw.split_at_mut(HEAD);
        let (payload, tag) = sealed.split_at_mut(sealed.len() - TAG);
        cipher
            .decrypt_in_place_detached(
                Nonce::from_slice(&head[1..]),
                &[kid],
                payload,
                (&*tag).into(),
            )
            .map_err(|_| StateRejection::Tampered)?;
        let (head, tag) = (&*head, &*tag);
        let payload = &*payload;
        if payload.len() < FIXED || !matches!(payload[0], VERSION | VERSION_LINKED) {
            return Err(StateRejection::Malformed);
        }
        let expires = u64::from_be_bytes(payload[1..9].try_into().expect("8 bytes"));
        if unix_ms() > expires {
            return Err(StateRejection::Expired);
        }
        if payload[9..9 + DIGEST] != binding.principal {
            return Err(StateRejection::Principal);
        }
        if payload[9 + DIGEST..9 + 2 * DIGEST] != binding.request {
            return Err(StateRejection::Request);
        }
        let mut rest = &payload[FIXED..];
        let flags = payload[FIXED - 1];
        let mut link = None;
        if payload[0] == VERSION_LINKED {
            let Some((linked, after)) = rest.split_first_chunk::<LINK>() else {
                return Err(StateRejection::Malformed);
            };
            link = Some(*linked);
            rest = after;
        }
        if flags & (SINGLE_USE | SHARED) == SINGLE_USE | SHARED {
            if self.used.is_none() {
                // Sealed by a node of a fleet with a bus: this node cannot
                // tell whether it was used. Fail closed.
                return Err(StateRejection::Unavailable);
            }
            let Some((epoch, state)) = rest.split_first_chunk::<EPOCH>() else {
                return Err(StateRejection::Malformed);
            };
            let remaining = expires.saturating_sub(unix_ms()).max(1);
            return Ok(Opening::Redeem(Redeem {
                opened: Opened {
                    state: state.to_vec(),
                    link,
                },
                key: used_key(head, tag),
                epoch: u64::from_be_bytes(*epoch),
                ttl: Duration::from_millis(remaining),
            }));
        }
        if flags & SHARED != 0 {
            return Err(StateRejection::Malformed);
        }
        if flags & SINGLE_USE != 0 {
            let Some((id, state)) = rest.split_first_chunk::<ID>() else {
                return Err(StateRejection::Malformed);
            };
            let id = SessionId::from_bytes(*id);
            // The one terminate CAS decides which retry uses the state.
            if !self.single_use.redeem(&id) {
                return Err(StateRejection::Replayed);
            }
            rest = state;
        }
        Ok(Opening::Opened(Opened {
            state: rest.to_vec(),
            link,
        }))
    }

    /// Records a fleet's single-use state as used, in the fleet's record:
    /// the state if this is its first use; `replayed` if it was used
    /// before, `expired` if it is of an earlier epoch of the record,
    /// `unavailable` if the record cannot say (the state stays unused).
    pub(crate) async fn redeem(&self, redeem: Redeem) -> Result<Opened, StateRejection> {
        let Some(used) = &self.used else {
            return Err(StateRejection::Unavailable);
        };
        match used.redeem(redeem.key, redeem.ttl, redeem.epoch).await {
            Redeemed::First => Ok(redeem.opened),
            Redeemed::Again => Err(StateRejection::Replayed),
            Redeemed::Stale => Err(StateRejection::Expired),
            Redeemed::Unavailable => Err(StateRejection::Unavailable),
        }
    }
}

/// The fleet's key of a sealed state: its key id and nonce (`head`) and its
/// tag, hashed.
fn used_key(head: &[u8], tag: &[u8]) -> UsedKey {
    let digest = Sha256::new()
        .chain_update(b"sessionreg single-use requestState\0")
        .chain_update(head)
        .chain_update(tag)
        .finalize();
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest[..16]);
    UsedKey(key)
}

/// Not part of the API: the layer's own sealer, for `benches/sealing.rs`
/// only (what the bench times is this module's code, not a copy of it).
/// Each method forwards to the crate-private one of the same name;
/// `BenchSealer::binding` is `Binding::new`, which the layer computes at
/// most once per request, when it opens or seals a state (a retry's
/// binding serves both). Re-exported, hidden, as
/// `sessionreg::http::modern::__bench_sealing`.
#[cfg(feature = "bench-hooks")]
#[doc(hidden)]
pub mod bench {
    use super::{Binding, RequestStateKeys, Sealer, StateRejection};
    use std::time::Duration;

    /// `Sealer`, for the bench.
    pub struct BenchSealer(Sealer);

    /// `Binding`, for the bench.
    pub struct BenchBinding(Binding);

    impl BenchSealer {
        /// `Sealer::new`.
        pub fn new(keys: RequestStateKeys, ttl: Duration, single_use: usize) -> BenchSealer {
            let config = crate::http::wire::config::Config {
                request_state_ttl: ttl,
                single_use_states: single_use,
                ..Default::default()
            };
            BenchSealer(Sealer::new(keys, &config, None).expect("a bench's own settings"))
        }

        /// `Binding::new`.
        pub fn binding(
            principal: Option<&str>,
            method: &str,
            params: &serde_json::Value,
        ) -> BenchBinding {
            BenchBinding(Binding::new(principal, method, params))
        }

        /// `Sealer::seal`; `None` where it is refused (the record of
        /// single-use states is full).
        pub fn seal(
            &self,
            binding: &BenchBinding,
            state: &[u8],
            single_use: bool,
        ) -> Option<String> {
            self.0.seal(&binding.0, state, single_use, None, None).ok()
        }

        /// `Sealer::open`: the application's bytes.
        pub fn open(&self, token: &str, binding: &BenchBinding) -> Result<Vec<u8>, StateRejection> {
            match self.0.open(token, &binding.0)? {
                super::Opening::Opened(opened) => Ok(opened.state),
                // The bench's sealer has no fleet's record.
                super::Opening::Redeem(_) => Err(StateRejection::Unavailable),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sealer(ttl: Duration) -> Sealer {
        sealer_of(RequestStateKeys::new(7, [9; 32]), ttl, 4)
    }

    fn sealer_of(keys: RequestStateKeys, ttl: Duration, single_use_states: usize) -> Sealer {
        let config = Config {
            request_state_ttl: ttl,
            single_use_states,
            ..Config::default()
        };
        Sealer::new(keys, &config, None).unwrap()
    }

    impl Sealer {
        /// `open`, for a sealer without the fleet's record: always opened
        /// at once.
        fn open_here(&self, token: &str, binding: &Binding) -> Result<Opened, StateRejection> {
            match self.open(token, binding)? {
                Opening::Opened(opened) => Ok(opened),
                Opening::Redeem(redeem) => panic!("no fleet's record here: {redeem:?}"),
            }
        }
    }

    fn binding(who: Option<&str>, name: &str) -> Binding {
        Binding::new(
            who,
            "tools/call",
            &json!({ "name": name, "arguments": { "a": 1 } }),
        )
    }

    #[test]
    fn a_link_travels_sealed_and_costs_nothing_without_one() {
        let s = sealer(Duration::from_secs(60));
        let b = binding(Some("ada"), "t");
        let link = [7u8; LINK];
        for single_use in [false, true] {
            let linked = s
                .seal(&b, b"linked", single_use, None, Some(&link))
                .unwrap();
            let opened = s.open_here(&linked, &b).unwrap();
            assert_eq!(opened.state, b"linked");
            assert_eq!(opened.link, Some(link));
        }
        let linked = s.seal(&b, b"linked", false, None, Some(&link)).unwrap();
        let plain = s.seal(&b, b"plain!", false, None, None).unwrap();
        let opened = s.open_here(&plain, &b).unwrap();
        assert_eq!(opened.state, b"plain!");
        assert_eq!(opened.link, None);
        // 24 bytes more, only with a link (base64: 32 characters).
        assert_eq!(linked.len(), plain.len() + 32);
    }

    /// A fleet's record that is always at epoch 42 (never asked here).
    struct FleetAt42;

    impl UsedStates for FleetAt42 {
        fn epoch(&self) -> u64 {
            42
        }

        fn redeem(&self, _: UsedKey, _: Duration, _: u64) -> super::super::used::Redemption {
            Box::pin(async { Redeemed::First })
        }
    }

    #[test]
    fn a_fleets_single_use_state_keeps_its_link_before_its_epoch() {
        let config = Config {
            request_state_ttl: Duration::from_secs(60),
            ..Config::default()
        };
        let keys = RequestStateKeys::new(7, [9; 32]);
        let s = Sealer::new(keys, &config, Some(Arc::new(FleetAt42))).unwrap();
        let b = binding(Some("ada"), "t");
        let link = [5u8; LINK];
        let token = s.seal(&b, b"fleet", true, None, Some(&link)).unwrap();
        match s.open(&token, &b).unwrap() {
            Opening::Redeem(redeem) => {
                assert_eq!(redeem.epoch, 42);
                assert_eq!(redeem.opened.state, b"fleet");
                assert_eq!(redeem.opened.link, Some(link));
            }
            Opening::Opened(opened) => panic!("not the fleet's: {opened:?}"),
        }
    }

    #[test]
    fn a_state_opens_for_its_own_request_and_principal_only() {
        let s = sealer(Duration::from_secs(60));
        let b = binding(Some("ada"), "t");
        let token = s.seal(&b, b"round 1", false, None, None).unwrap();
        assert_eq!(s.open_here(&token, &b).unwrap().state, b"round 1");
        // Again: not single-use.
        assert_eq!(s.open_here(&token, &b).unwrap().state, b"round 1");
        assert_eq!(
            s.open_here(&token, &binding(Some("bob"), "t")),
            Err(StateRejection::Principal)
        );
        assert_eq!(
            s.open_here(&token, &binding(None, "t")),
            Err(StateRejection::Principal)
        );
        assert_eq!(
            s.open_here(&token, &binding(Some("ada"), "u")),
            Err(StateRejection::Request)
        );
        // The params' `_meta`, `inputResponses` and `requestState`, and the
        // order of the keys, are not the request's own.
        let retry = Binding::new(
            Some("ada"),
            "tools/call",
            &json!({ "arguments": { "a": 1 }, "name": "t", "_meta": {}, "inputResponses": {}, "requestState": "x" }),
        );
        assert_eq!(s.open_here(&token, &retry).unwrap().state, b"round 1");
    }

    #[test]
    fn tampered_foreign_malformed_and_expired_states_are_refused() {
        let s = sealer(Duration::from_secs(60));
        let b = binding(None, "t");
        let token = s.seal(&b, b"x", false, None, None).unwrap();
        assert_eq!(
            s.open_here(&format!("{token}-TAMPERED"), &b),
            Err(StateRejection::Malformed)
        );
        let mut raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&token)
            .unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        let flipped = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw);
        assert_eq!(s.open_here(&flipped, &b), Err(StateRejection::Tampered));
        raw[last] ^= 1;
        raw[0] = 8;
        let other_key = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw);
        assert_eq!(s.open_here(&other_key, &b), Err(StateRejection::UnknownKey));
        assert_eq!(s.open_here("", &b), Err(StateRejection::Malformed));
        let foreign = sealer_of(
            RequestStateKeys::new(7, [1; 32]),
            Duration::from_secs(60),
            1,
        );
        assert_eq!(foreign.open_here(&token, &b), Err(StateRejection::Tampered));
        let short = sealer(Duration::ZERO);
        let token = short.seal(&b, b"x", false, None, None).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(short.open_here(&token, &b), Err(StateRejection::Expired));
    }

    #[test]
    fn a_single_use_state_opens_once_and_its_record_is_bounded() {
        let s = sealer(Duration::from_secs(60));
        let b = binding(None, "t");
        let token = s.seal(&b, b"once", true, None, None).unwrap();
        assert_eq!(s.unused().len(), 1);
        assert_eq!(s.open_here(&token, &b).unwrap().state, b"once");
        assert_eq!(s.open_here(&token, &b), Err(StateRejection::Replayed));
        assert!(s.unused().is_empty());
        // Four unused at most (this sealer's room); used ones free theirs.
        for _ in 0..4 {
            s.seal(&b, b"", true, None, None).unwrap();
        }
        assert!(matches!(
            s.seal(&b, b"", true, None, None),
            Err(Refused::Full { limit: 4, .. })
        ));
        assert!(s.seal(&b, b"", false, None, None).is_ok());
    }

    /// A state sealed before the request digest's encoding changed (payload
    /// version 1) no longer opens: its digest was of the old, ambiguous
    /// encoding.
    #[test]
    fn a_state_of_the_old_version_no_longer_opens() {
        let s = sealer(Duration::from_secs(60));
        let b = binding(None, "t");
        let token = s.seal(&b, b"x", false, None, None).unwrap();
        let mut raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&token)
            .unwrap();
        let cipher = Aes256Gcm::new((&[9u8; 32]).into());
        let (head, sealed) = raw.split_at_mut(HEAD);
        let (payload, tag) = sealed.split_at_mut(sealed.len() - TAG);
        let nonce = *Nonce::from_slice(&head[1..]);
        cipher
            .decrypt_in_place_detached(&nonce, &[7], payload, (&*tag).into())
            .unwrap();
        assert_eq!(payload[0], VERSION);
        payload[0] = 1;
        let tag = cipher
            .encrypt_in_place_detached(&nonce, &[7], payload)
            .unwrap();
        let len = raw.len();
        raw[len - TAG..].copy_from_slice(&tag);
        let old = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw);
        assert_eq!(s.open_here(&old, &b), Err(StateRejection::Malformed));
        assert_eq!(s.open_here(&token, &b).unwrap().state, b"x");
    }

    #[test]
    fn rotated_keys_seal_with_the_new_and_open_the_old() {
        let s = sealer(Duration::from_secs(60));
        let b = binding(None, "t");
        let old = s.seal(&b, b"old", false, None, None).unwrap();
        s.set_keys(RequestStateKeys::new(7, [9; 32]).rotated(8, [3; 32], 2));
        let new = s.seal(&b, b"new", false, None, None).unwrap();
        assert_eq!(s.open_here(&old, &b).unwrap().state, b"old");
        assert_eq!(s.open_here(&new, &b).unwrap().state, b"new");
        s.set_keys(RequestStateKeys::new(8, [3; 32]));
        assert_eq!(s.open_here(&old, &b), Err(StateRejection::UnknownKey));
        let parsed = RequestStateKeys::parse(
            "# keys\n8 = 0303030303030303030303030303030303030303030303030303030303030303\n",
        )
        .unwrap();
        assert_eq!(parsed.current, 8);
        assert!(RequestStateKeys::parse("8=00").is_err());
        assert!(!format!("{parsed:?}").contains("0303"));
    }
}

//! What a sealed `requestState` is bound to ([`Binding`]): the principal
//! that may present it, and a digest of the request it may be presented
//! with, over an encoding in which two different requests can never be
//! written alike.
//!
//! The request digest is SHA-256 over, in order:
//!
//! ```text
//! "sessionreg/request-state/request/2"      a label (the encoding's version)
//! principal   0x00, or 0x01 | len (8, BE) | the principal's name (UTF-8)
//! method      len (8, BE) | the method's name (UTF-8)
//! params      canonical JSON | len (8, BE)  (the last field: its length after it)
//! ```
//!
//! The params' canonical JSON is their JSON text as serde_json writes it
//! (compact, strings and keys escaped, so a key cannot carry a raw quote or
//! U+0000), with every object's members in the order serde_json's `Map`
//! keeps them (keys sorted by their bytes) at every depth, whatever order
//! the client sent (and whichever order serde_json's `preserve_order`
//! feature would keep). Params of every JSON type are bound: an object
//! without the members a retry adds to the request it repeats
//! (`requestState`, `inputResponses`) and without its `_meta` (per-request
//! metadata a client may vary between rounds: a progress token, trace
//! context, the capabilities it declares), anything else as it is. JSON text
//! is self-delimiting, so the whole is a prefix-free encoding of (principal,
//! method, params): equal digests need equal requests, or a SHA-256
//! collision.
//!
//! A delimited encoding (`method \0 key \0 json(value) \0 ...`, keys as raw
//! bytes) would not do: one key carrying U+0000s could spell another
//! request's members, and a state sealed for tool A with harmless arguments
//! would open for A with `{"path": "/etc/passwd"}`, or for tool B; and
//! params that are not an object must be bound too.

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use std::io::{self, Write};

/// The bytes kept of each digest: 128 bits (truncated digests are enough
/// inside an AEAD: forging a match needs a second request with the same
/// 128-bit digest).
pub(crate) const DIGEST: usize = 16;

/// The members of a retry's params that are not the request's own.
const NOT_BOUND: [&str; 3] = ["_meta", "inputResponses", "requestState"];

const REQUEST_LABEL: &[u8] = b"sessionreg/request-state/request/2";
const PRINCIPAL_LABEL: &[u8] = b"sessionreg/request-state/principal/2";

/// What a state is bound to: its principal and its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binding {
    /// SHA-256 of a label and the principal's name (zeros without one).
    pub(super) principal: [u8; DIGEST],
    /// The request digest of the module docs.
    pub(super) request: [u8; DIGEST],
}

impl Binding {
    /// The binding of a request: the principal's name (if any), the
    /// method, and the params that are the request's own.
    pub(crate) fn new(principal: Option<&str>, method: &str, params: &Value) -> Binding {
        let mut p = [0u8; DIGEST];
        if let Some(name) = principal {
            let mut hash = Sha256::new();
            hash.update(PRINCIPAL_LABEL);
            hash.update(name.as_bytes());
            p.copy_from_slice(&hash.finalize()[..DIGEST]);
        }
        let mut hash = Sha256::new();
        hash.update(REQUEST_LABEL);
        match principal {
            None => hash.update([0]),
            Some(name) => {
                hash.update([1]);
                field(&mut hash, name.as_bytes());
            }
        }
        field(&mut hash, method.as_bytes());
        let mut out = CountingHash {
            hash: &mut hash,
            len: 0,
        };
        let written = match params {
            Value::Object(map) => canonical_object(&mut out, map, &NOT_BOUND),
            other => canonical(&mut out, other),
        };
        // Writing into a hash cannot fail; JSON of a `Value` always
        // serializes (its keys are strings, its numbers finite).
        debug_assert!(written.is_ok(), "a JSON value writes into a hash");
        let len = out.len;
        hash.update(len.to_be_bytes());
        let mut r = [0u8; DIGEST];
        r.copy_from_slice(&hash.finalize()[..DIGEST]);
        Binding {
            principal: p,
            request: r,
        }
    }
}

/// A length-prefixed field.
fn field(hash: &mut Sha256, bytes: &[u8]) {
    hash.update((bytes.len() as u64).to_be_bytes());
    hash.update(bytes);
}

/// The hash, counting what is written into it (the params' length).
struct CountingHash<'a> {
    hash: &'a mut Sha256,
    len: u64,
}

impl Write for CountingHash<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.hash.update(buf);
        self.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `value`'s canonical JSON: serde_json's text of it, with every object's
/// keys sorted by their bytes. Recursion is bounded by serde_json's parse
/// depth (128): a `Value` of the wire is never deeper.
fn canonical(out: &mut CountingHash<'_>, value: &Value) -> io::Result<()> {
    match value {
        Value::Object(map) => canonical_object(out, map, &[]),
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                canonical(out, item)?;
            }
            out.write_all(b"]")
        }
        // Strings escaped, numbers and literals as serde_json writes them.
        scalar => serde_json::to_writer(&mut *out, scalar).map_err(io::Error::other),
    }
}

/// An object's canonical JSON, without the members named in `skip`.
fn canonical_object(
    out: &mut CountingHash<'_>,
    map: &Map<String, Value>,
    skip: &[&str],
) -> io::Result<()> {
    let mut members: Vec<(&String, &Value)> = map
        .iter()
        .filter(|(key, _)| !skip.contains(&key.as_str()))
        .collect();
    // Byte order, as serde_json's sorted `Map` (a `BTreeMap<String, _>`)
    // keeps them; a no-op there, the canonical order under
    // `preserve_order`.
    members.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.write_all(b"{")?;
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, key).map_err(io::Error::other)?;
        out.write_all(b":")?;
        canonical(out, value)?;
    }
    out.write_all(b"}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(params: Value) -> [u8; DIGEST] {
        Binding::new(None, "tools/call", &params).request
    }

    /// The pair of the issue: under the old digest (`method \0 key \0
    /// json(value) \0 ...`, keys raw) these two hashed alike.
    #[test]
    fn the_crafted_u0000_pair_binds_two_requests() {
        let wanted = json!({ "path": "/etc/passwd", "force": true });
        let harmless = json!({ "a": 1 });
        for tool in ["A", "B"] {
            let first =
                format!("_a\u{0}0\u{0}arguments\u{0}{wanted}\u{0}name\u{0}\"{tool}\"\u{0}o");
            let last = format!("o\u{0}0\u{0}arguments\u{0}{harmless}\u{0}name");
            let crafted = json!({ first: 0, "arguments": harmless, "name": "A" });
            let target = json!({ "_a": 0, "arguments": wanted, "name": tool, last: "A" });
            assert_eq!(
                old_digest(&crafted),
                old_digest(&target),
                "the old encoding collides"
            );
            assert_ne!(request(crafted), request(target));
        }
    }

    /// The digest this module replaces, kept here to show what the crafted
    /// pair does to it.
    fn old_digest(params: &Value) -> Vec<u8> {
        let mut hash = Sha256::new();
        hash.update(b"tools/call\0");
        for (key, value) in params.as_object().unwrap() {
            if NOT_BOUND.contains(&key.as_str()) {
                continue;
            }
            hash.update(key.as_bytes());
            hash.update([0]);
            hash.update(value.to_string().as_bytes());
            hash.update([0]);
        }
        hash.finalize().to_vec()
    }

    #[test]
    fn every_type_of_params_is_bound_and_only_the_retrys_members_are_not() {
        let distinct = [
            json!(null),
            json!([1]),
            json!([[1]]),
            json!("x"),
            json!(1),
            json!(1.5),
            json!(true),
            json!({}),
            json!({ "name": "A" }),
            json!({ "name": "B" }),
            json!({ "name": "A", "arguments": {} }),
            json!({ "name": "A", "arguments": { "x": null } }),
        ];
        let digests: Vec<_> = distinct.iter().cloned().map(request).collect();
        for (i, a) in digests.iter().enumerate() {
            for (j, b) in digests.iter().enumerate() {
                assert_eq!(i == j, a == b, "{} vs {}", distinct[i], distinct[j]);
            }
        }
        // The members a retry adds, and `_meta`, are not the request's.
        assert_eq!(
            request(json!({ "name": "A" })),
            request(json!({ "name": "A", "_meta": { "progressToken": 3 },
                            "inputResponses": { "k": {} }, "requestState": "s" }))
        );
        // ...at the top only: deeper, they are arguments like any other.
        assert_ne!(
            request(json!({ "arguments": { "requestState": 1 } })),
            request(json!({ "arguments": {} }))
        );
        // Key order is the client's business.
        let one: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":[{"q":1,"p":2}]}}"#).unwrap();
        let other: Value =
            serde_json::from_str(r#"{"a":{"x":[{"p":2,"q":1}],"y":2},"b":1}"#).unwrap();
        assert_eq!(request(one), request(other));
    }

    #[test]
    fn the_principal_and_the_method_are_bound_unambiguously() {
        let params = json!({ "name": "A" });
        let of = |who: Option<&str>, method: &str| Binding::new(who, method, &params);
        assert_ne!(of(None, "tools/call"), of(Some(""), "tools/call"));
        assert_ne!(
            of(Some("ada"), "tools/call").request,
            of(Some("bob"), "tools/call").request
        );
        assert_ne!(
            of(None, "tools/call").request,
            of(None, "prompts/get").request
        );
        assert_eq!(of(None, "tools/call").principal, [0; DIGEST]);
        // A name and a method cannot trade bytes across their boundary.
        assert_ne!(
            Binding::new(Some("ab"), "c", &params).request,
            Binding::new(Some("a"), "bc", &params).request
        );
    }
}

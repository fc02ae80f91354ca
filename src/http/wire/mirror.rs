//! A tool's mirrored parameters (SEP-2243, the tools page's
//! `x-mcp-header`): the parameters a tool's input schema marks to be sent
//! again as `Mcp-Param-{name}` headers, and the check of those headers
//! against the body of a `tools/call`.
//!
//! The layer checks them when the application names them for a tool
//! ([`App::mirrored_params`](crate::http::App::mirrored_params)); build them
//! once from the tool's input schema with
//! [`MirroredParams::from_input_schema`], which refuses an annotation the
//! spec does not allow (clients drop a tool whose annotation is invalid).

use crate::http::wire::jsonrpc::{self, RpcError};
use base64::Engine as _;
use http::HeaderMap;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// The JSON type of a mirrored parameter (the spec allows these three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Boolean,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Param {
    /// The header name, lowercased (`mcp-param-region`).
    header: String,
    /// As refusals show it (`Mcp-Param-Region`).
    shown: String,
    /// The chain of `properties` keys from the schema's root.
    path: Vec<String>,
    kind: Kind,
}

/// The mirrored parameters of one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MirroredParams {
    params: Vec<Param>,
}

/// Why an input schema's `x-mcp-header` annotations are not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorError(String);

impl fmt::Display for MirrorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MirrorError {}

/// Whether `name` is an HTTP token (RFC 9110 §5.6.2: `1*tchar`).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl MirroredParams {
    /// The parameters of a tool's `inputSchema` that carry `x-mcp-header`,
    /// checked against the spec's rules: a non-empty HTTP token, unique
    /// (ignoring case) in the schema, on a parameter of type `string`,
    /// `integer` or `boolean`, reached from the root through `properties`
    /// only (never `items`, composition keywords, conditionals or `$ref`).
    ///
    /// ```
    /// use serde_json::json;
    /// use sessionreg::http::modern::MirroredParams;
    ///
    /// let schema = json!({ "type": "object", "properties": {
    ///     "region": { "type": "string", "x-mcp-header": "Region" },
    /// }});
    /// let params = MirroredParams::from_input_schema(&schema).unwrap();
    /// assert_eq!(params.headers(), ["Mcp-Param-Region"]);
    /// ```
    pub fn from_input_schema(schema: &Value) -> Result<MirroredParams, MirrorError> {
        let mut params = Vec::new();
        walk(schema, &mut Vec::new(), &mut params)?;
        let reached = params.len();
        if count_annotations(schema) != reached {
            return Err(MirrorError(
                "an x-mcp-header is not reached from the root through `properties` only".into(),
            ));
        }
        for (i, param) in params.iter().enumerate() {
            if params[..i].iter().any(|p| p.header == param.header) {
                return Err(MirrorError(format!("{} is given twice", param.shown)));
            }
        }
        Ok(MirroredParams { params })
    }

    /// The header names, as shown in refusals.
    pub fn headers(&self) -> Vec<&str> {
        self.params.iter().map(|p| p.shown.as_str()).collect()
    }

    /// Checks the `Mcp-Param-*` headers of a `tools/call` against its
    /// `arguments`: a parameter given a value (not `null`) must have its
    /// header, equal to it once decoded (`=?base64?...?=`, strictly) and
    /// compared as its type (integers exactly, in the page's decimal form and
    /// safe range: see `header_integer`); a header with characters a header
    /// value may not carry, or bad Base64, is refused.
    pub(crate) fn check(
        &self,
        headers: &HeaderMap,
        arguments: Option<&Value>,
    ) -> Result<(), RpcError> {
        for param in &self.params {
            let mut value = arguments;
            for key in &param.path {
                value = value.and_then(|v| v.get(key));
            }
            let Some(value) = value.filter(|v| !v.is_null()) else {
                // No value: no header is expected.
                continue;
            };
            let Some(header) = headers.get(&param.header) else {
                return Err(mismatch(format!("{} header is missing", param.shown)));
            };
            let text = header
                .to_str()
                .map_err(|_| {
                    mismatch(format!(
                        "{} header contains invalid characters",
                        param.shown
                    ))
                })?
                // Spaces and tabs: `to_str` let through no other ASCII
                // whitespace.
                .trim_ascii();
            let text = decode(text).ok_or_else(|| {
                mismatch(format!(
                    "{} header has an invalid Base64 value",
                    param.shown
                ))
            })?;
            let equal = match (param.kind, value) {
                (Kind::String, Value::String(body)) => text == *body,
                (Kind::Integer, Value::Number(body)) => {
                    header_integer(&text).is_some_and(|h| body_integer(body) == Some(h))
                }
                (Kind::Boolean, Value::Bool(body)) => text == if *body { "true" } else { "false" },
                // A body value of another type than declared: as text.
                (_, other) => serde_json::from_str::<Value>(&text).is_ok_and(|h| h == *other),
            };
            if !equal {
                return Err(mismatch(format!(
                    "{} header value does not match the body",
                    param.shown
                )));
            }
        }
        Ok(())
    }
}

/// The largest integer a mirrored parameter may carry (the transport page:
/// "within the safe range for JavaScript", 2^53 - 1): past it a gateway
/// that reads numbers as doubles sees another value than this server does.
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// An integer header's value, as the transport page writes one ("Convert to
/// decimal string representation (e.g., `42`, `-7`)"), with the fraction of
/// zeros its note on numeric comparison allows (`42.0` is 42): an optional
/// `-`, digits without a leading zero, optionally `.` and zeros; within the
/// safe range. Anything else (`+42`, `042`, `4.2e1`, `0x2a`, `42.5`, past
/// the safe range) is no integer the page writes, so it matches nothing.
fn header_integer(text: &str) -> Option<i64> {
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (text, None),
    };
    if fraction.is_some_and(|f| f.is_empty() || f.bytes().any(|b| b != b'0')) {
        return None;
    }
    let digits = whole.strip_prefix('-').unwrap_or(whole);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !canonical {
        return None;
    }
    // At most 16 digits here, so no overflow: exact, never through `f64`.
    whole
        .parse::<i64>()
        .ok()
        .filter(|n| n.abs() <= MAX_SAFE_INTEGER)
}

/// A body number as an exact integer within the safe range: an integer, or
/// a float with no fraction (JSON Schema's `integer` admits `42.0`) small
/// enough that `f64` holds it exactly.
fn body_integer(body: &serde_json::Number) -> Option<i64> {
    let n = match body.as_i64() {
        Some(n) => n,
        None => {
            let f = body.as_f64()?;
            if f.fract() != 0.0 || f.abs() > MAX_SAFE_INTEGER as f64 {
                return None;
            }
            f as i64
        }
    };
    (n.abs() <= MAX_SAFE_INTEGER).then_some(n)
}

/// The value of a header that may carry the Base64 sentinel: decoded when
/// it has the sentinel's exact form (`=?base64?...?=`, lowercase), `None`
/// when that decoding fails; any other value is literal.
pub(crate) fn decode(value: &str) -> Option<Cow<'_, str>> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(Cow::Borrowed(value));
    };
    // STANDARD: the RFC 4648 alphabet with canonical padding required.
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .map(Cow::Owned)
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(
        jsonrpc::RpcError::HEADER_MISMATCH,
        format!("Header mismatch: {message}"),
    )
}

fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<Param>) -> Result<(), MirrorError> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(name) = property.get("x-mcp-header") {
            let name = name.as_str().filter(|n| is_token(n)).ok_or_else(|| {
                MirrorError(format!("the x-mcp-header of {key} is not an HTTP token"))
            })?;
            let kind = match property.get("type").and_then(Value::as_str) {
                Some("string") => Kind::String,
                Some("integer") => Kind::Integer,
                Some("boolean") => Kind::Boolean,
                _ => {
                    return Err(MirrorError(format!(
                        "x-mcp-header {name} is on a parameter that is not a string, integer or boolean"
                    )))
                }
            };
            out.push(Param {
                header: format!("mcp-param-{}", name.to_ascii_lowercase()),
                shown: format!("Mcp-Param-{name}"),
                path: path.clone(),
                kind,
            });
        }
        walk(property, path, out)?;
        path.pop();
    }
    Ok(())
}

fn count_annotations(value: &Value) -> usize {
    match value {
        Value::Object(map) => {
            usize::from(map.contains_key("x-mcp-header"))
                + map.values().map(count_annotations).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_annotations).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn params() -> MirroredParams {
        MirroredParams::from_input_schema(&json!({ "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "count": { "type": "integer", "x-mcp-header": "Count" },
            "nested": { "type": "object", "properties": {
                "flag": { "type": "boolean", "x-mcp-header": "Flag" },
            }},
        }}))
        .unwrap()
    }

    fn with(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn only_allowed_annotations_are_taken() {
        assert_eq!(
            params().headers(),
            ["Mcp-Param-Count", "Mcp-Param-Flag", "Mcp-Param-Region"]
        );
        for bad in [
            json!({ "properties": { "a": { "type": "number", "x-mcp-header": "A" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "a b" } } }),
            json!({ "properties": { "a": { "type": "string", "x-mcp-header": "A" },
                                    "b": { "type": "string", "x-mcp-header": "a" } } }),
            json!({ "properties": { "a": { "type": "array", "items": {
                "type": "object", "properties": { "b": { "type": "string", "x-mcp-header": "B" } } } } } }),
            json!({ "properties": { "a": { "oneOf": [{ "type": "string", "x-mcp-header": "A" }] } } }),
        ] {
            assert!(MirroredParams::from_input_schema(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_must_mirror_the_body() {
        let p = params();
        let args = json!({ "region": "us-west1", "count": 42, "nested": { "flag": true } });
        let ok = with(&[
            ("mcp-param-region", " us-west1 "),
            ("mcp-param-count", "42.0"),
            ("mcp-param-flag", "true"),
        ]);
        assert_eq!(p.check(&ok, Some(&args)), Ok(()));
        let encoded = with(&[
            ("mcp-param-region", "=?base64?dXMtd2VzdDE=?="),
            ("mcp-param-count", "42"),
            ("mcp-param-flag", "true"),
        ]);
        assert_eq!(p.check(&encoded, Some(&args)), Ok(()));
        // Missing, mismatched, bad Base64 (padding, characters).
        for bad in [
            with(&[("mcp-param-count", "42"), ("mcp-param-flag", "true")]),
            with(&[
                ("mcp-param-region", "us-east1"),
                ("mcp-param-count", "42"),
                ("mcp-param-flag", "true"),
            ]),
            with(&[
                ("mcp-param-region", "=?base64?dXMtd2VzdDE?="),
                ("mcp-param-count", "42"),
                ("mcp-param-flag", "true"),
            ]),
            with(&[
                ("mcp-param-region", "=?base64?dXMt!!!d2VzdDE=?="),
                ("mcp-param-count", "42"),
                ("mcp-param-flag", "true"),
            ]),
            with(&[
                ("mcp-param-region", "us-west1"),
                ("mcp-param-count", "43"),
                ("mcp-param-flag", "true"),
            ]),
            with(&[
                ("mcp-param-region", "us-west1"),
                ("mcp-param-count", "42"),
                ("mcp-param-flag", "True"),
            ]),
        ] {
            let error = p.check(&bad, Some(&args)).unwrap_err();
            assert_eq!(error.code, jsonrpc::RpcError::HEADER_MISMATCH, "{bad:?}");
        }
        // No value (or null): no header expected.
        assert_eq!(
            p.check(&HeaderMap::new(), Some(&json!({ "region": null }))),
            Ok(())
        );
        assert_eq!(p.check(&HeaderMap::new(), None), Ok(()));
        // A sentinel that is not whole, or not lowercase, is a literal.
        assert_eq!(
            decode("=?base64?SGVsbG8="),
            Some("=?base64?SGVsbG8=".into())
        );
        assert_eq!(
            decode("=?BASE64?SGVsbG8=?="),
            Some("=?BASE64?SGVsbG8=?=".into())
        );
        assert_eq!(decode("=?base64?SGVsbG8=?="), Some("Hello".into()));
        assert_eq!(decode("=?base64?SGVsbG8?="), None);
    }

    /// Integers compare exactly, as the transport page writes them: never
    /// through `f64` (2^53 + 1 would match 2^53) nor any other form.
    #[test]
    fn integers_compare_exactly_in_the_pages_form() {
        for (text, n) in [
            ("42", 42),
            ("-7", -7),
            ("0", 0),
            ("-0", 0),
            ("42.0", 42),
            ("42.000", 42),
            ("9007199254740991", MAX_SAFE_INTEGER),
            ("-9007199254740991", -MAX_SAFE_INTEGER),
        ] {
            assert_eq!(header_integer(text), Some(n), "{text}");
        }
        for text in [
            "",
            "-",
            "+42",
            "042",
            "00",
            "4.2e1",
            "42e0",
            "0x2a",
            "42.5",
            "42.",
            ".5",
            " 42",
            "42a",
            "9007199254740992",
            "9007199254740993",
            "-9007199254740992",
            "99999999999999999999999",
        ] {
            assert_eq!(header_integer(text), None, "{text}");
        }
        let number = |v: serde_json::Value| body_integer(v.as_number().unwrap());
        assert_eq!(number(json!(42)), Some(42));
        assert_eq!(number(json!(42.0)), Some(42));
        assert_eq!(number(json!(-7)), Some(-7));
        assert_eq!(number(json!(42.5)), None);
        assert_eq!(number(json!(9_007_199_254_740_992_u64)), None);
        assert_eq!(number(json!(u64::MAX)), None);
        assert_eq!(number(json!(1e300)), None);
    }
}

//! The header predicates of the streamable-HTTP transport that the router
//! and the methods check: the protocol version a request names, what its
//! `Accept` admits, whether its body is JSON, and the headers it may carry
//! only once.

use crate::http::wire::headers;
use crate::http::wire::protocol::{Version, DEFAULT_VERSION};
use http::header::{HeaderName, ACCEPT, AUTHORIZATION};
use http::{HeaderMap, HeaderValue};

/// Reads `MCP-Protocol-Version` (its first value): absent means
/// [`DEFAULT_VERSION`]; any served version is accepted, not only the one a
/// session negotiated (real clients send an older one on some requests).
/// `Err` carries the unsupported value.
pub(crate) fn protocol_version(value: Option<&HeaderValue>) -> Result<Version, String> {
    let Some(value) = value else {
        return Ok(Version::Legacy(DEFAULT_VERSION));
    };
    // Spaces and tabs around it are no part of it (`to_str` lets through
    // no other whitespace).
    let text = value
        .to_str()
        .map_err(|_| String::from("<non-ASCII>"))?
        .trim_ascii();
    Version::named(text).ok_or_else(|| text.to_string())
}

/// The headers a request may carry at most once, with the names refusals
/// give them. A second one is refused (400) before anything reads either:
/// which one counts would be a guess, and a proxy in front that guesses the
/// other way (the last `Authorization`, say) would act on another request
/// than this server does.
pub(crate) const SINGLE_VALUED: [(HeaderName, &str); 6] = [
    (headers::name::SESSION_ID, "MCP-Session-Id"),
    (AUTHORIZATION, "Authorization"),
    (headers::name::PROTOCOL_VERSION, "MCP-Protocol-Version"),
    (headers::name::LAST_EVENT_ID, "Last-Event-ID"),
    (headers::name::MCP_METHOD, "Mcp-Method"),
    (headers::name::MCP_NAME, "Mcp-Name"),
];

/// The name of the first header of [`SINGLE_VALUED`] that `headers` carry
/// more than once, if any.
pub(crate) fn duplicated(headers: &HeaderMap) -> Option<&'static str> {
    if !any_repeated(headers) {
        return None;
    }
    SINGLE_VALUED.iter().find_map(|(name, shown)| {
        let mut all = headers.get_all(name).iter();
        (all.next().is_some() && all.next().is_some()).then_some(*shown)
    })
}

/// Whether any header name appears more than once: the map counts its
/// values and its names apart, so this is two loads, where asking after
/// each single-valued name is a hashed lookup apiece (six of them, and the
/// `Mcp-Param-*` names, on every request that repeats nothing).
pub(crate) fn any_repeated(headers: &HeaderMap) -> bool {
    headers.len() != headers.keys_len()
}

/// Whether the `Accept` headers admit `mime` (`type/subtype`); `*/*` and
/// `type/*` count, a `q=0` entry does not.
pub(crate) fn accepts(headers: &HeaderMap, mime: &str) -> bool {
    accepts_all(headers, &[mime])
}

/// Whether the `Accept` headers admit every one of `mimes`, read in one
/// pass over the header (a `POST` asks for two types).
pub(crate) fn accepts_all(headers: &HeaderMap, mimes: &[&str]) -> bool {
    let mut admitted = 0u32;
    let all = (1u32 << mimes.len()) - 1;
    let entries = headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    for entry in entries {
        let mut parts = entry.split(';');
        let range = parts.next().unwrap_or("").trim();
        let refused = parts.any(|p| {
            let p = p.trim();
            p.starts_with("q=") && p[2..].trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
        });
        if refused {
            continue;
        }
        for (i, mime) in mimes.iter().enumerate() {
            let (kind, _) = mime.split_once('/').unwrap_or((mime, ""));
            let admits = range == "*/*"
                || range.eq_ignore_ascii_case(mime)
                || range
                    .strip_suffix("/*")
                    .is_some_and(|k| k.eq_ignore_ascii_case(kind));
            if admits {
                admitted |= 1 << i;
            }
        }
        if admitted == all {
            return true;
        }
    }
    admitted == all
}

/// The `Accept` values a `POST` must admit: JSON and SSE.
const POST_MIMES: [&str; 2] = ["application/json", "text/event-stream"];

/// The spellings of a `POST`'s `Accept` that clients send (the Python and
/// TypeScript SDKs the first), each admitting both [`POST_MIMES`]: matched
/// as bytes before the general parse, which costs a request about 1,600
/// instructions.
const POST_ACCEPT_SPELLINGS: [&[u8]; 3] = [
    b"application/json, text/event-stream",
    b"text/event-stream, application/json",
    b"application/json,text/event-stream",
];

/// Whether the `Accept` headers admit both answers a `POST` may get
/// ([`POST_MIMES`]): [`accepts_all`] over `headers`, with the common
/// spellings of `only` (the request's `Accept` if it has exactly one)
/// recognised first.
pub(crate) fn accepts_post(only: Option<&HeaderValue>, headers: &HeaderMap) -> bool {
    if only.is_some_and(|value| POST_ACCEPT_SPELLINGS.contains(&value.as_bytes())) {
        return true;
    }
    accepts_all(headers, &POST_MIMES)
}

/// Whether `Content-Type` (its first value) is `application/json`
/// (parameters such as `charset` allowed).
pub(crate) fn is_json(content_type: Option<&HeaderValue>) -> bool {
    let Some(value) = content_type else {
        return false;
    };
    // As every client we know spells it: no parsing needed.
    if value.as_bytes() == b"application/json" {
        return true;
    }
    Some(value)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::CONTENT_TYPE;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn accept() {
        let h = headers(&[("accept", "application/json, text/event-stream")]);
        assert!(accepts(&h, "application/json") && accepts(&h, "text/event-stream"));
        let h = headers(&[("accept", "application/json")]);
        assert!(!accepts(&h, "text/event-stream"));
        let h = headers(&[("accept", "*/*")]);
        assert!(accepts(&h, "text/event-stream"));
        let h = headers(&[("accept", "text/*;q=0, application/json")]);
        assert!(!accepts(&h, "text/event-stream"));
        let both = ["application/json", "text/event-stream"];
        let h = headers(&[
            ("accept", "application/json"),
            ("accept", "text/event-stream"),
        ]);
        assert!(accepts_all(&h, &both));
        let h = headers(&[("accept", "application/json")]);
        assert!(!accepts_all(&h, &both));
        let h = headers(&[("accept", "*/*;q=0, application/*, text/event-stream")]);
        assert!(accepts_all(&h, &both));
        assert!(!accepts(&HeaderMap::new(), "application/json"));
    }

    #[test]
    fn a_posts_accept_read_as_the_general_parse_reads_it() {
        let cases: &[&[&'static str]] = &[
            &["application/json, text/event-stream"],
            &["text/event-stream, application/json"],
            &["application/json,text/event-stream"],
            &[
                "application/json, text/event-stream",
                "text/event-stream;q=0",
            ],
            &["application/json, text/event-stream;q=0"],
            &["application/json"],
            &["text/event-stream"],
            &["*/*"],
            &["application/*, text/*"],
            &["application/json", "text/event-stream"],
            &[],
        ];
        for values in cases {
            let pairs: Vec<_> = values.iter().map(|v| ("accept", *v)).collect();
            let h = headers(&pairs);
            let only = (values.len() == 1).then(|| h.get(ACCEPT)).flatten();
            assert_eq!(
                accepts_post(only, &h),
                accepts_all(&h, &POST_MIMES),
                "Accept {values:?}"
            );
        }
        for spelling in POST_ACCEPT_SPELLINGS {
            let text = std::str::from_utf8(spelling).unwrap();
            let h = headers(&[("accept", text)]);
            assert!(accepts_all(&h, &POST_MIMES), "{text} must admit both");
        }
    }

    #[test]
    fn versions() {
        assert_eq!(protocol_version(None), Ok(Version::Legacy(DEFAULT_VERSION)));
        let h = headers(&[("mcp-protocol-version", "2024-11-05")]);
        assert_eq!(
            protocol_version(h.get("mcp-protocol-version")),
            Ok(Version::Legacy("2024-11-05"))
        );
        let h = headers(&[("mcp-protocol-version", " 2026-07-28 ")]);
        assert_eq!(
            protocol_version(h.get("mcp-protocol-version")),
            Ok(Version::Modern)
        );
        let h = headers(&[("mcp-protocol-version", "1999-01-01")]);
        assert_eq!(
            protocol_version(h.get("mcp-protocol-version")),
            Err("1999-01-01".to_string())
        );
    }

    #[test]
    fn json_content_types() {
        for json in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            " application/json ;charset=UTF-8",
        ] {
            let h = headers(&[("content-type", json)]);
            assert!(is_json(h.get(CONTENT_TYPE)), "{json}");
        }
        for other in [
            "text/plain",
            "application/jsonx",
            "application/json-seq",
            "",
        ] {
            let h = headers(&[("content-type", other)]);
            assert!(!is_json(h.get(CONTENT_TYPE)), "{other}");
        }
        assert!(!is_json(None));
    }

    #[test]
    fn single_valued_headers_at_most_once() {
        assert_eq!(duplicated(&HeaderMap::new()), None);
        let once = headers(&[
            ("mcp-session-id", "a"),
            ("authorization", "Bearer x"),
            ("mcp-protocol-version", "2025-11-25"),
            ("last-event-id", "0-1"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ]);
        assert_eq!(duplicated(&once), None);
        assert!(!any_repeated(&once));
        // A repeated header of another name is no refusal.
        let mut other = once.clone();
        other.append("x-other", HeaderValue::from_static("1"));
        other.append("x-other", HeaderValue::from_static("2"));
        assert!(any_repeated(&other));
        assert_eq!(duplicated(&other), None);
        for (name, shown) in SINGLE_VALUED {
            let mut twice = once.clone();
            twice.append(name.clone(), HeaderValue::from_static("a"));
            assert_eq!(duplicated(&twice), Some(shown), "{name}");
        }
    }
}

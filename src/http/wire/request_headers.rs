//! The request headers the layer reads on a request's way (the router's
//! checks, a `POST`'s message, the 2026-07-28 validation), found in one
//! pass over the map ([`RequestHeaders::scan`]), and what the rest of the
//! way needs of them, owned ([`HeaderFindings`]).
//!
//! A `HeaderMap` lookup hashes the name it is given: a 2026-07-28
//! `tools/call` asked after eight names, about 1,300 instructions, where
//! one pass comparing the names the request carries (ten from the official
//! clients) with those eight costs about 500
//! (`benches/experiments/header-scan`). The pass keeps each header's first
//! value and whether it has another, which is all the checks read; the one
//! that reads every value (an `Accept` given twice) still has the map.
//!
//! The values found borrow the map, and the request moves on (its parts go
//! to the application at the end): what is read after the router is taken
//! out first, as [`HeaderFindings`], owned, which the router's future
//! holds and lends to the steps below it (moved into each one's future
//! instead, it was copied at every level).

use crate::http::wire::header_rules;
use crate::http::wire::headers;
use crate::http::wire::protocol::Version;
use http::{HeaderMap, HeaderValue};

/// One header as the pass found it: its first value, and whether it has
/// another.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FoundHeader<'h> {
    first: Option<&'h HeaderValue>,
    repeated: bool,
}

impl<'h> FoundHeader<'h> {
    /// The first value, if any (what `HeaderMap::get` answers).
    pub(crate) fn first(self) -> Option<&'h HeaderValue> {
        self.first
    }

    /// The one value, if any; [`Repeated`] if the header was given more
    /// than once.
    pub(crate) fn once(self) -> Result<Option<&'h HeaderValue>, Repeated> {
        match self.repeated {
            true => Err(Repeated),
            false => Ok(self.first),
        }
    }

    fn add(&mut self, value: &'h HeaderValue) {
        match self.first {
            None => self.first = Some(value),
            Some(_) => self.repeated = true,
        }
    }
}

/// A header that may come once came more than once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Repeated;

/// The headers the layer reads from a request, found in one pass.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RequestHeaders<'h> {
    /// `Origin` (the access checks; CORS).
    pub(crate) origin: FoundHeader<'h>,
    /// `Host` (the access checks).
    pub(crate) host: FoundHeader<'h>,
    /// `MCP-Protocol-Version` (the router).
    pub(crate) protocol_version: FoundHeader<'h>,
    /// `Accept` (a `POST`'s message).
    pub(crate) accept: FoundHeader<'h>,
    /// `Content-Type` (a `POST`'s message).
    pub(crate) content_type: FoundHeader<'h>,
    /// `Content-Length` (a `POST`'s message).
    pub(crate) content_length: FoundHeader<'h>,
    /// `Mcp-Method` (2026-07-28 validation).
    pub(crate) mcp_method: FoundHeader<'h>,
    /// `Mcp-Name` (2026-07-28 validation).
    pub(crate) mcp_name: FoundHeader<'h>,
}

impl<'h> RequestHeaders<'h> {
    /// One pass over `map`: each name compared with the eight, as text (a
    /// name the map holds is lowercase).
    pub(crate) fn scan(map: &'h HeaderMap) -> RequestHeaders<'h> {
        let mut seen = RequestHeaders::default();
        for (name, value) in map {
            let found = match name.as_str() {
                "origin" => &mut seen.origin,
                "host" => &mut seen.host,
                headers::PROTOCOL_VERSION => &mut seen.protocol_version,
                "accept" => &mut seen.accept,
                "content-type" => &mut seen.content_type,
                "content-length" => &mut seen.content_length,
                headers::MCP_METHOD => &mut seen.mcp_method,
                headers::MCP_NAME => &mut seen.mcp_name,
                _ => continue,
            };
            found.add(value);
        }
        seen
    }
}

/// What a `POST`'s message reads of its headers before its body
/// (`message::read`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PostHeaders {
    /// `Accept` admits both answers a `POST` may get.
    pub(crate) accepts: bool,
    /// `Content-Type` is JSON.
    pub(crate) json: bool,
    /// `Content-Length`, if given and a number.
    pub(crate) declared_length: Option<u64>,
}

impl PostHeaders {
    /// Read from what the pass found (`headers`, the map it went over, for
    /// an `Accept` given more than once).
    pub(crate) fn of(seen: &RequestHeaders<'_>, headers: &HeaderMap) -> PostHeaders {
        PostHeaders {
            accepts: header_rules::accepts_post(seen.accept.once().ok().flatten(), headers),
            json: header_rules::is_json(seen.content_type.first()),
            declared_length: seen
                .content_length
                .first()
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok()),
        }
    }
}

/// A header of one value at most, owned: `Mcp-Method` and `Mcp-Name`,
/// checked against the body once it is read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum SingleValued {
    /// Not given.
    #[default]
    Absent,
    /// Given once, with this value (a clone: a count on the buffer hyper
    /// read the request into, no copy).
    One(HeaderValue),
    /// Given more than once.
    Repeated,
}

impl SingleValued {
    fn of(found: FoundHeader<'_>) -> SingleValued {
        match found.once() {
            Ok(None) => SingleValued::Absent,
            Ok(Some(value)) => SingleValued::One(value.clone()),
            Err(Repeated) => SingleValued::Repeated,
        }
    }
}

/// What the request's way reads of its headers after the router, owned.
#[derive(Debug)]
pub(crate) struct HeaderFindings {
    /// The protocol version `MCP-Protocol-Version` names
    /// ([`header_rules::protocol_version`]).
    pub(crate) version: Result<Version, String>,
    /// A `POST`'s: what its message reads first; `None` for other methods.
    pub(crate) post: Option<PostHeaders>,
    /// At 2026-07-28: `Mcp-Method` and `Mcp-Name` (absent at other versions:
    /// nothing reads them).
    pub(crate) mcp: McpHeaders,
}

/// `Mcp-Method` and `Mcp-Name`, for the 2026-07-28 validation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct McpHeaders {
    /// `Mcp-Method`: the body's `method`.
    pub(crate) method: SingleValued,
    /// `Mcp-Name`: the body's target (a tool's or prompt's name, a
    /// resource's URI, a task's id).
    pub(crate) name: SingleValued,
}

impl McpHeaders {
    /// From what the pass found.
    pub(crate) fn of(seen: &RequestHeaders<'_>) -> McpHeaders {
        McpHeaders {
            method: SingleValued::of(seen.mcp_method),
            name: SingleValued::of(seen.mcp_name),
        }
    }
}

impl HeaderFindings {
    /// Taken from what the pass found over `headers`, for a request of
    /// method `method`.
    pub(crate) fn of(
        seen: &RequestHeaders<'_>,
        headers: &HeaderMap,
        method: &http::Method,
    ) -> HeaderFindings {
        let version = header_rules::protocol_version(seen.protocol_version.first());
        let post = (method == http::Method::POST).then(|| PostHeaders::of(seen, headers));
        let mcp = match version {
            Ok(Version::Modern) => McpHeaders::of(seen),
            _ => McpHeaders::default(),
        };
        HeaderFindings { version, post, mcp }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::{HeaderName, ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN};

    fn map(pairs: &[(&str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            map.append(name, HeaderValue::from_static(value));
        }
        map
    }

    /// The pass finds what a lookup of each name finds: the first value,
    /// and whether there is a second (names in any case, as clients send
    /// them: the map holds them lowercase).
    #[test]
    fn the_pass_finds_what_each_lookup_finds() {
        let cases: &[&[(&str, &'static str)]] = &[
            &[],
            &[
                ("Host", "127.0.0.1:3000"),
                ("Content-Type", "application/json"),
                ("Content-Length", "280"),
                ("Accept", "application/json, text/event-stream"),
                ("Accept-Encoding", "gzip"),
                ("User-Agent", "python-httpx/0.28"),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "echo"),
            ],
            &[
                ("origin", "http://a"),
                ("ORIGIN", "http://b"),
                ("host", "x"),
                ("accept", "application/json"),
                ("x-other", "1"),
                ("accept", "text/event-stream"),
                ("mcp-method", "a"),
                ("mcp-method", "b"),
                ("mcp-name", "n"),
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-param-x", "1"),
            ],
        ];
        for pairs in cases {
            let headers = map(pairs);
            let seen = RequestHeaders::scan(&headers);
            let names: [(&HeaderName, FoundHeader<'_>); 8] = [
                (&ORIGIN, seen.origin),
                (&HOST, seen.host),
                (&headers::name::PROTOCOL_VERSION, seen.protocol_version),
                (&ACCEPT, seen.accept),
                (&CONTENT_TYPE, seen.content_type),
                (&CONTENT_LENGTH, seen.content_length),
                (&headers::name::MCP_METHOD, seen.mcp_method),
                (&headers::name::MCP_NAME, seen.mcp_name),
            ];
            for (name, found) in names {
                let all: Vec<_> = headers.get_all(name).iter().collect();
                assert_eq!(found.first(), all.first().copied(), "{name} in {pairs:?}");
                assert_eq!(found.once().is_err(), all.len() > 1, "{name} in {pairs:?}");
            }
        }
    }

    #[test]
    fn what_is_carried_past_the_router() {
        let headers = map(&[
            ("content-type", "application/json"),
            ("content-length", "12"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "a"),
            ("mcp-name", "b"),
        ]);
        let seen = RequestHeaders::scan(&headers);
        let post = HeaderFindings::of(&seen, &headers, &http::Method::POST);
        assert_eq!(post.version, Ok(Version::Modern));
        let expected = PostHeaders {
            accepts: true,
            json: true,
            declared_length: Some(12),
        };
        assert_eq!(post.post, Some(expected));
        assert_eq!(
            post.mcp.method,
            SingleValued::One(HeaderValue::from_static("tools/call"))
        );
        assert_eq!(post.mcp.name, SingleValued::Repeated);
        let get = HeaderFindings::of(&seen, &headers, &http::Method::GET);
        assert_eq!(get.post, None);
        // Only 2026-07-28 reads `Mcp-Method` and `Mcp-Name`.
        let legacy = map(&[
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-method", "tools/call"),
        ]);
        let findings =
            HeaderFindings::of(&RequestHeaders::scan(&legacy), &legacy, &http::Method::POST);
        assert_eq!(findings.mcp, McpHeaders::default());
        let expected = PostHeaders {
            accepts: false,
            json: false,
            declared_length: None,
        };
        assert_eq!(findings.post, Some(expected));
    }
}

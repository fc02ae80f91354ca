//! `header-scan <lookups|scan|scans> <n>`: finds the headers a 2026-07-28
//! `tools/call` has looked up, `n` times, in a `HeaderMap` built as hyper
//! builds it, and prints a checksum of what it found (so that nothing is
//! optimised away). Run at two `n` under `valgrind --tool=callgrind`, the
//! difference ÷ the extra finds is the instructions of one.
//!
//! * `lookups`: as the layer did until its router scanned the map
//!   (`wire/request_headers.rs`), one lookup a header, each hashing
//!   its name: `Origin` and `Host` (`access/origins.rs`, each checked for a
//!   second value), `MCP-Protocol-Version` (`wire/header_rules.rs`),
//!   `Accept` (all its values), `Content-Type`, `Content-Length`
//!   (`wire/message.rs`), `Mcp-Method` and `Mcp-Name` (`modern/validate.rs`,
//!   each checked for a second value).
//! * `scan`: one pass over the map's entries, each name matched against the
//!   same eight, keeping each one's first value and how many it has.
//! * `scans`: a pass for each step that reads headers, as a change kept
//!   within each would make them: the router's three, the body's three, the
//!   validation's two (the pass over ten entries, not the names matched,
//!   is most of a pass's cost).
//!
//! Checksum: the bytes of the first value of each header found, plus the
//! count of values of each.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN};

/// The request's headers, as `benches/e2e --modern` sends them.
const REQUEST: [(&str, &str); 10] = [
    ("Host", "127.0.0.1:39021"),
    ("Content-Type", "application/json"),
    ("Content-Length", "280"),
    ("Accept", "application/json, text/event-stream"),
    ("Accept-Encoding", "gzip, deflate"),
    ("Connection", "keep-alive"),
    ("User-Agent", "python-httpx2/2.16.2"),
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "echo"),
];

const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The map as hyper's HTTP/1 parser builds it: names from their bytes,
/// values appended.
fn map() -> HeaderMap {
    let mut map = HeaderMap::with_capacity(REQUEST.len());
    for (name, value) in REQUEST {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("a name");
        map.append(name, HeaderValue::from_static(value));
    }
    map
}

/// What each find keeps of a header: its first value and how many it has.
#[derive(Clone, Copy, Default)]
struct Found<'a> {
    first: Option<&'a HeaderValue>,
    count: usize,
}

impl Found<'_> {
    fn sum(self) -> usize {
        self.first.map_or(0, |v| v.len()) + self.count
    }
}

/// The first value of `name`, and whether there is a second.
fn once<'a>(map: &'a HeaderMap, name: &HeaderName) -> Found<'a> {
    let mut values = map.get_all(name).iter();
    let first = values.next();
    let count = usize::from(first.is_some()) + usize::from(values.next().is_some());
    Found { first, count }
}

/// The first value of `name` (`get`).
fn first<'a>(map: &'a HeaderMap, name: &HeaderName) -> Found<'a> {
    let first = map.get(name);
    Found {
        first,
        count: usize::from(first.is_some()),
    }
}

/// `lookups`: eight lookups, as the layer makes them.
fn lookups(map: &HeaderMap) -> usize {
    let mut accept = Found::default();
    for value in map.get_all(ACCEPT) {
        accept.first.get_or_insert(value);
        accept.count += 1;
    }
    [
        once(map, &ORIGIN),
        once(map, &HOST),
        first(map, &PROTOCOL_VERSION),
        accept,
        first(map, &CONTENT_TYPE),
        first(map, &CONTENT_LENGTH),
        once(map, &MCP_METHOD),
        once(map, &MCP_NAME),
    ]
    .iter()
    .map(|found| found.sum())
    .sum()
}

/// `scan`: the map's entries once, each name matched against the eight.
fn scan(map: &HeaderMap) -> usize {
    let mut found = [Found::default(); 8];
    for (name, value) in map {
        let at = match name.as_str() {
            "origin" => 0,
            "host" => 1,
            "mcp-protocol-version" => 2,
            "accept" => 3,
            "content-type" => 4,
            "content-length" => 5,
            "mcp-method" => 6,
            "mcp-name" => 7,
            _ => continue,
        };
        let slot = &mut found[at];
        slot.first.get_or_insert(value);
        slot.count += 1;
    }
    found.iter().map(|found| found.sum()).sum()
}

/// `scans`: where each of the layer's steps finds its own headers, one
/// scan a step: the router's three, the body's three, the validation's two.
fn scans(map: &HeaderMap) -> usize {
    let mut found = [Found::default(); 8];
    let mut keep = |at: usize, value| {
        let slot: &mut Found = &mut found[at];
        slot.first.get_or_insert(value);
        slot.count += 1;
    };
    for (name, value) in map {
        match name.as_str() {
            "origin" => keep(0, value),
            "host" => keep(1, value),
            "mcp-protocol-version" => keep(2, value),
            _ => {}
        }
    }
    for (name, value) in map {
        match name.as_str() {
            "accept" => keep(3, value),
            "content-type" => keep(4, value),
            "content-length" => keep(5, value),
            _ => {}
        }
    }
    for (name, value) in map {
        match name.as_str() {
            "mcp-method" => keep(6, value),
            "mcp-name" => keep(7, value),
            _ => {}
        }
    }
    found.iter().map(|found| found.sum()).sum()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(n)) = (args.next(), args.next()) else {
        panic!("usage: header-scan <lookups|scan|scans> <n>");
    };
    let n: u64 = n.parse().expect("n, a count");
    let map = map();
    // Both find the same (once, before the loop: the same at both `n`).
    assert_eq!(lookups(&map), scan(&map));
    assert_eq!(lookups(&map), scans(&map));
    let find = match mode.as_str() {
        "lookups" => lookups,
        "scan" => scan,
        "scans" => scans,
        other => panic!("unknown mode {other}: lookups, scan or scans"),
    };
    let mut sum = 0;
    for _ in 0..n {
        sum += find(std::hint::black_box(&map));
    }
    println!("{sum}");
}

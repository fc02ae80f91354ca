//! `json-envelope <parser> <n>`: reads the envelope of one 2026-07-28
//! `tools/call` body `n` times with `parser` and prints a checksum of what
//! it kept (so that nothing is optimised away). Run at two `n` under
//! `valgrind --tool=callgrind`, the difference ÷ the extra reads is the
//! instructions of one; timed with a large `n`, the time of one.
//!
//! * `serde_json`: the shape `Message::from_slice` reads
//!   (src/http/wire/jsonrpc.rs), members as `&RawValue` borrowed from the
//!   text, unknown ones skipped (a `null` member is read as absent here,
//!   where `from_slice` keeps it: the body has none).
//! * `sonic_serde`: the same shape through sonic-rs's serde deserializer,
//!   members as its `LazyValue` (raw text borrowed from the body).
//! * `sonic_iter`: sonic-rs's own object iterator over the top level, the
//!   same six members kept as raw text.

use serde::Deserialize;
use serde_json::value::RawValue;
use sonic_rs::LazyValue;

/// The body `benches/e2e --modern` sends (`client.rs`), with id 7.
const BODY: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mcp","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// The members `Message::from_slice` keeps.
const MEMBERS: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// The members `Message::from_slice` keeps, each as raw text borrowed
/// from the body (`T`: serde_json's `&RawValue` or sonic-rs's `LazyValue`).
#[derive(Deserialize)]
struct Shape<T> {
    #[serde(default = "absent")]
    jsonrpc: Option<T>,
    #[serde(default = "absent")]
    id: Option<T>,
    #[serde(default = "absent")]
    method: Option<T>,
    #[serde(default = "absent")]
    params: Option<T>,
    #[serde(default = "absent")]
    result: Option<T>,
    #[serde(default = "absent")]
    error: Option<T>,
}

/// A member the body does not have.
fn absent<T>() -> Option<T> {
    None
}

impl<T> Shape<T> {
    fn members(self) -> [Option<T>; 6] {
        [
            self.jsonrpc,
            self.id,
            self.method,
            self.params,
            self.result,
            self.error,
        ]
    }
}

/// The bytes of the members kept: the checksum.
fn kept(members: [Option<&str>; 6]) -> usize {
    members.iter().flatten().map(|raw| raw.len()).sum()
}

fn read(parser: &str, text: &str) -> usize {
    match parser {
        "serde_json" => {
            let s: Shape<&RawValue> = serde_json::from_str(text).expect("the body parses");
            kept(s.members().map(|m| m.map(RawValue::get)))
        }
        "sonic_serde" => {
            let s: Shape<LazyValue<'_>> = sonic_rs::from_str(text).expect("the body parses");
            let members = s.members();
            kept(
                members
                    .each_ref()
                    .map(|m| m.as_ref().map(LazyValue::as_raw_str)),
            )
        }
        "sonic_iter" => {
            let mut sum = 0;
            for member in sonic_rs::to_object_iter(text) {
                let (key, value) = member.expect("the body parses");
                if MEMBERS.contains(&&*key) {
                    sum += value.as_raw_str().len();
                }
            }
            sum
        }
        other => panic!("unknown parser {other}: serde_json, sonic_serde or sonic_iter"),
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(parser), Some(n)) = (args.next(), args.next()) else {
        panic!("usage: json-envelope <serde_json|sonic_serde|sonic_iter> <n>");
    };
    let n: u64 = n.parse().expect("n, a count");
    let body = BODY.to_string();
    let mut sum = 0;
    for _ in 0..n {
        sum += read(&parser, std::hint::black_box(body.as_str()));
    }
    println!("{sum}");
}

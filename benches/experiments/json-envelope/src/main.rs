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
//! * `jiter_envelope`: jiter's `Jiter` walking the top level, the same six
//!   members kept as raw text sliced from the body by `current_index`, the
//!   others skipped; every value walked and trailing text refused
//!   (`finish`), a repeated kept member refused as serde's derive does
//!   (jiter itself does not look). A `null` member is kept, as `from_slice`
//!   keeps it.
//! * `serde_json_params`: what the server does today, in two passes: the
//!   `serde_json` envelope, then the params' raw text read again into
//!   their members as `&RawValue` (`Params`), then `_meta`'s raw text into
//!   its members (`Meta`), each step only when the text is an object.
//! * `jiter_params`: the same members in one jiter walk: the top level,
//!   and, in the same pass, the members of `params` when it is an object,
//!   and of its `_meta` when that is an object; `params` and `_meta` are
//!   kept whole as well (their start and end index).
//!
//! Checksums: the bytes of the members kept, at every level read.

use jiter::{Jiter, JiterError, Peek};
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

/// The members of a `tools/call`'s params that the server reads, `_meta`
/// last (`PARAMS_META`).
const PARAMS_MEMBERS: [&str; 7] = [
    "name",
    "uri",
    "taskId",
    "arguments",
    "inputResponses",
    "requestState",
    "_meta",
];

/// The members of the params' `_meta` that the server reads.
const META_MEMBERS: [&str; 4] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/logLevel",
    "progressToken",
];

/// Where `params` is in `MEMBERS`, `_meta` in `PARAMS_MEMBERS`.
const ENVELOPE_PARAMS: usize = 3;
const PARAMS_META: usize = 6;

/// The params' members, each as raw text (`T`: serde_json's `&RawValue`).
#[derive(Deserialize)]
struct Params<T> {
    #[serde(default = "absent")]
    name: Option<T>,
    #[serde(default = "absent")]
    uri: Option<T>,
    #[serde(default = "absent", rename = "taskId")]
    task_id: Option<T>,
    #[serde(default = "absent")]
    arguments: Option<T>,
    #[serde(default = "absent", rename = "inputResponses")]
    input_responses: Option<T>,
    #[serde(default = "absent", rename = "requestState")]
    request_state: Option<T>,
    #[serde(default = "absent", rename = "_meta")]
    meta: Option<T>,
}

/// `_meta`'s members, each as raw text.
#[derive(Deserialize)]
struct Meta<T> {
    #[serde(default = "absent", rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<T>,
    #[serde(
        default = "absent",
        rename = "io.modelcontextprotocol/clientCapabilities"
    )]
    client_capabilities: Option<T>,
    #[serde(default = "absent", rename = "io.modelcontextprotocol/logLevel")]
    log_level: Option<T>,
    #[serde(default = "absent", rename = "progressToken")]
    progress_token: Option<T>,
}

/// The bytes of the members kept: the checksum.
fn kept<const N: usize>(members: [Option<&str>; N]) -> usize {
    members.iter().flatten().map(|raw| raw.len()).sum()
}

/// Why a jiter walk refused the body: jiter's own error, or a kept member
/// seen twice (serde's derive refuses that; jiter has no opinion).
#[derive(Debug)]
#[allow(dead_code)] // read through `Debug` when a walk panics
enum Refused {
    Json(JiterError),
    Repeated(&'static str),
}

impl From<JiterError> for Refused {
    fn from(error: JiterError) -> Self {
        Refused::Json(error)
    }
}

/// Which of `names` `key` is, if any.
fn slot(names: &[&str], key: &str) -> Option<usize> {
    names.iter().position(|name| *name == key)
}

/// Keeps `raw` in `members[slot]`, refusing a member seen twice.
fn keep<'t, const N: usize>(
    members: &mut [Option<&'t str>; N],
    names: &[&'static str; N],
    slot: Option<usize>,
    raw: &'t str,
) -> Result<(), Refused> {
    match slot {
        Some(i) if members[i].replace(raw).is_some() => Err(Refused::Repeated(names[i])),
        _ => Ok(()),
    }
}

/// `jiter_envelope`: the six members of the top level, as raw text.
fn jiter_envelope(text: &str) -> Result<usize, Refused> {
    let mut envelope = [None; 6];
    let mut jiter = Jiter::new(text.as_bytes());
    // The key borrows the jiter (an escaped key is decoded into its tape):
    // only its slot outlives the next call.
    let mut member = jiter.next_object()?.map(|key| slot(&MEMBERS, key));
    while let Some(at) = member {
        // `peek` eats the whitespace before the value: its first byte.
        let peek = jiter.peek()?;
        let start = jiter.current_index();
        jiter.known_skip(peek)?;
        let raw = &text[start..jiter.current_index()];
        keep(&mut envelope, &MEMBERS, at, raw)?;
        member = jiter.next_key()?.map(|key| slot(&MEMBERS, key));
    }
    jiter.finish()?;
    Ok(kept(envelope))
}

/// `jiter_params`: the top level, the params and their `_meta`, one walk.
fn jiter_params(text: &str) -> Result<usize, Refused> {
    let mut envelope = [None; 6];
    let mut params = [None; 7];
    let mut meta = [None; 4];
    let mut jiter = Jiter::new(text.as_bytes());
    let mut member = jiter.next_object()?.map(|key| slot(&MEMBERS, key));
    while let Some(at) = member {
        let peek = jiter.peek()?;
        let start = jiter.current_index();
        if at == Some(ENVELOPE_PARAMS) && peek == Peek::Object {
            let mut param = jiter.known_object()?.map(|key| slot(&PARAMS_MEMBERS, key));
            while let Some(param_at) = param {
                let peek = jiter.peek()?;
                let param_start = jiter.current_index();
                if param_at == Some(PARAMS_META) && peek == Peek::Object {
                    let mut entry = jiter.known_object()?.map(|key| slot(&META_MEMBERS, key));
                    while let Some(entry_at) = entry {
                        let peek = jiter.peek()?;
                        let entry_start = jiter.current_index();
                        jiter.known_skip(peek)?;
                        let raw = &text[entry_start..jiter.current_index()];
                        keep(&mut meta, &META_MEMBERS, entry_at, raw)?;
                        entry = jiter.next_key()?.map(|key| slot(&META_MEMBERS, key));
                    }
                } else {
                    jiter.known_skip(peek)?;
                }
                let raw = &text[param_start..jiter.current_index()];
                keep(&mut params, &PARAMS_MEMBERS, param_at, raw)?;
                param = jiter.next_key()?.map(|key| slot(&PARAMS_MEMBERS, key));
            }
        } else {
            jiter.known_skip(peek)?;
        }
        let raw = &text[start..jiter.current_index()];
        keep(&mut envelope, &MEMBERS, at, raw)?;
        member = jiter.next_key()?.map(|key| slot(&MEMBERS, key));
    }
    jiter.finish()?;
    Ok(kept(envelope) + kept(params) + kept(meta))
}

/// `serde_json_params`: the envelope, then the params' text read again,
/// then `_meta`'s, each only when it is an object (a `&RawValue`'s text
/// starts at its first byte, no whitespace before it).
fn serde_json_params(text: &str) -> usize {
    let s: Shape<&RawValue> = serde_json::from_str(text).expect("the body parses");
    let envelope = s.members().map(|m| m.map(RawValue::get));
    let mut sum = kept(envelope);
    let Some(params) = envelope[ENVELOPE_PARAMS].filter(|raw| raw.starts_with('{')) else {
        return sum;
    };
    let p: Params<&RawValue> = serde_json::from_str(params).expect("the params parse");
    let params = [
        p.name,
        p.uri,
        p.task_id,
        p.arguments,
        p.input_responses,
        p.request_state,
        p.meta,
    ]
    .map(|m| m.map(RawValue::get));
    sum += kept(params);
    let Some(meta) = params[PARAMS_META].filter(|raw| raw.starts_with('{')) else {
        return sum;
    };
    let m: Meta<&RawValue> = serde_json::from_str(meta).expect("the _meta parses");
    sum + kept(
        [
            m.protocol_version,
            m.client_capabilities,
            m.log_level,
            m.progress_token,
        ]
        .map(|m| m.map(RawValue::get)),
    )
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
        "jiter_envelope" => jiter_envelope(text).expect("the body parses"),
        "serde_json_params" => serde_json_params(text),
        "jiter_params" => jiter_params(text).expect("the body parses"),
        other => panic!("unknown parser {other}: {PARSERS}"),
    }
}

const PARSERS: &str =
    "serde_json, sonic_serde, sonic_iter, jiter_envelope, serde_json_params or jiter_params";

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(parser), Some(n)) = (args.next(), args.next()) else {
        panic!("usage: json-envelope <parser> <n>, parser: {PARSERS}");
    };
    let n: u64 = n.parse().expect("n, a count");
    // The hand-written jiter walks must keep what serde_json keeps (once,
    // before the loop: a few thousand instructions, the same at both `n`).
    assert_eq!(read("jiter_envelope", BODY), read("serde_json", BODY));
    assert_eq!(read("jiter_params", BODY), read("serde_json_params", BODY));
    let body = BODY.to_string();
    let mut sum = 0;
    for _ in 0..n {
        sum += read(&parser, std::hint::black_box(body.as_str()));
    }
    println!("{sum}");
}

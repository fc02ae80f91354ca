//! A well-formed message's body read in one walk (jiter): the envelope's
//! members, and where the members of its params and their `_meta` that the
//! layer reads are ([`MemberExtents`]), found in the pass that checks the JSON.
//!
//! serde_json keeps the params as a `RawValue` by walking them in full, and
//! the layer then walks them again for their members (`raw_text.rs`); here
//! one walk does both, and allocates nothing for a body without escaped
//! member names. It takes only what it reads without a doubt: a UTF-8 body
//! holding one object, a version `"2.0"`, a string method, an id that is a
//! string or a number (or none), params an object or an array (or none), no
//! member of the envelope given twice, no `result` or `error`, nothing
//! nested deeper than jiter's limit (200 levels). For any other body it
//! returns `None`, and the caller reads it with serde_json
//! ([`Message::from_slice`]), which says why it is refused, or keeps it (a
//! client's response, a value nested 500,000 levels deep in a member nobody
//! reads): every body the walk does not take gets the answer it got before.
//! A body refused so is read twice, at most twice one read's work on a body
//! within `max_body_bytes`: the price of serde_json's errors, word for word.

use crate::http::wire::jsonrpc::{self, Message, MethodName, Notification, Request};
use crate::http::wire::meta::{
    META_CAPABILITIES, META_LOG_LEVEL, META_PROGRESS_TOKEN, META_VERSION,
};
use crate::http::wire::params::Params;
use crate::http::wire::raw_text::RawText;
use jiter::{Jiter, Peek};
use std::borrow::Cow;

/// The members of a message's params the layer reads, in the order of
/// [`MemberExtents::params`].
pub(crate) const PARAMS_READ: [&str; 6] = [
    "name",
    "uri",
    "taskId",
    "arguments",
    "inputResponses",
    "requestState",
];

/// The members of `params._meta` the layer reads, in the order of
/// [`MemberExtents::meta`].
pub(crate) const META_READ: [&str; 4] = [
    META_VERSION,
    META_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROGRESS_TOKEN,
];

/// Where a member's value is in its params' text (bytes `start..end`);
/// `end == 0` when the member is not there (a value is at least a byte).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Extent {
    start: u32,
    end: u32,
}

impl Extent {
    /// Sets the extent; `false` if it was set already (the member is given twice).
    fn set(&mut self, start: u32, end: u32) -> bool {
        let first = self.end == 0;
        *self = Extent { start, end };
        first
    }

    /// The value's text in `params`, if the member is there.
    fn within(self, params: &str) -> Option<RawText<'_>> {
        if self.end == 0 {
            return None;
        }
        let text = params.get(self.start as usize..self.end as usize)?;
        Some(RawText::walked(text))
    }
}

/// Where the members of a message's params that the layer reads are, as the
/// walk found them: for the message read with them, whose params' text
/// they index. Every member is given at most once (a body where one is
/// given twice gets no extents: the layer's own walk refuses it, saying which).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct MemberExtents {
    params: [Extent; PARAMS_READ.len()],
    meta: [Extent; META_READ.len()],
    /// Whether `params._meta` is there as an object.
    meta_is_object: bool,
}

impl MemberExtents {
    /// The values of [`PARAMS_READ`] in `params` (the text of the params
    /// these extents were found in).
    pub(crate) fn params<'a>(&self, params: &'a str) -> [Option<RawText<'a>>; PARAMS_READ.len()] {
        self.params.map(|extent| extent.within(params))
    }

    /// The values of [`META_READ`] in `params`.
    pub(crate) fn meta<'a>(&self, params: &'a str) -> [Option<RawText<'a>>; META_READ.len()] {
        self.meta.map(|extent| extent.within(params))
    }

    /// Whether `params._meta` is there as an object.
    pub(crate) fn meta_is_object(&self) -> bool {
        self.meta_is_object
    }
}

/// The envelope's members the walk keeps, by their place in the array it
/// keeps them in.
const JSONRPC: usize = 0;
const ID: usize = 1;
const METHOD: usize = 2;
const PARAMS: usize = 3;

/// What a name of the envelope is to the walk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum EnvelopeMember {
    /// Kept, at this place.
    Kept(usize),
    /// `result` or `error`: a response, left to serde_json.
    Outcome,
    /// Anything else: passed over.
    Other,
}

fn member(name: &str) -> EnvelopeMember {
    match name {
        "jsonrpc" => EnvelopeMember::Kept(JSONRPC),
        "id" => EnvelopeMember::Kept(ID),
        "method" => EnvelopeMember::Kept(METHOD),
        "params" => EnvelopeMember::Kept(PARAMS),
        "result" | "error" => EnvelopeMember::Outcome,
        _ => EnvelopeMember::Other,
    }
}

/// What a read finds besides the message.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Find {
    /// The message alone: its params are passed over (the session era reads
    /// none of their members before the handler).
    Message,
    /// The message, and where the members of its params the layer reads are.
    ParamMembers,
}

/// Reads `body` as a request or a notification in one walk, with where its
/// params' members are if `find` asks (and none is given twice); `None` for
/// a body it does not take (the module's doc), for serde_json to read.
pub(crate) fn read(body: &[u8], find: Find) -> Option<(Message, Option<MemberExtents>)> {
    // The whole body checked as UTF-8 first: jiter does not check the
    // strings it passes over, and every text below is sliced from this one.
    let text = std::str::from_utf8(body).ok()?;
    let mut jiter = Jiter::new(body);
    let mut kept: [Option<&str>; 4] = [None; 4];
    let mut extents = (find == Find::ParamMembers).then(MemberExtents::default);
    // A key borrows the jiter (an escaped one is decoded into its tape):
    // only what it names outlives the next call.
    let mut next = jiter.next_object().ok()?.map(member);
    while let Some(name) = next {
        let peek = jiter.peek().ok()?;
        let start = jiter.current_index();
        match name {
            EnvelopeMember::Outcome => return None,
            EnvelopeMember::Kept(PARAMS) if extents.is_some() && peek == Peek::Object => {
                let mut found = MemberExtents::default();
                extents = walk_params(&mut jiter, start, &mut found)?.then_some(found);
            }
            _ => jiter.known_skip(peek).ok()?,
        }
        if let EnvelopeMember::Kept(at) = name {
            let value = text.get(start..jiter.current_index())?;
            if kept[at].replace(value).is_some() {
                return None;
            }
        }
        next = jiter.next_key().ok()?.map(member);
    }
    jiter.finish().ok()?;
    if !kept[JSONRPC].is_some_and(jsonrpc::is_version_2) {
        return None;
    }
    let id = match kept[ID] {
        Some(id) => Some(jsonrpc::request_id_of(id).ok()?),
        None => None,
    };
    let params = match kept[PARAMS] {
        Some(params) => Some(Params::of_checked(params)?),
        None => None,
    };
    let method = match RawText::walked(kept[METHOD]?).string()? {
        Cow::Borrowed(text) => MethodName::new(text),
        Cow::Owned(text) => MethodName::from(text),
    };
    let message = match id {
        Some(id) => Message::Request(Request { id, method, params }),
        None => Message::Notification(Notification { method, params }),
    };
    Some((message, extents))
}

/// Walks the params object whose `{` is at `base` (the jiter just past its
/// peek), putting where each member read is into `extents`; `None` if the
/// JSON is refused, `Some(false)` if a member read is given twice.
fn walk_params(jiter: &mut Jiter<'_>, base: usize, extents: &mut MemberExtents) -> Option<bool> {
    let mut once = true;
    let mut meta_seen = false;
    let mut next = jiter.known_object().ok()?.map(param_member);
    while let Some(name) = next {
        let peek = jiter.peek().ok()?;
        let start = offset(jiter.current_index(), base)?;
        match name {
            ParamMember::Meta => {
                once &= !std::mem::replace(&mut meta_seen, true);
                if peek == Peek::Object {
                    extents.meta_is_object = true;
                    once &= walk_meta(jiter, base, &mut extents.meta)?;
                } else {
                    jiter.known_skip(peek).ok()?;
                }
            }
            ParamMember::Read(at) => {
                jiter.known_skip(peek).ok()?;
                let end = offset(jiter.current_index(), base)?;
                once &= extents.params[at].set(start, end);
            }
            ParamMember::Other => jiter.known_skip(peek).ok()?,
        }
        next = jiter.next_key().ok()?.map(param_member);
    }
    Some(once)
}

/// Walks the `_meta` object just peeked, putting where each member read is
/// into `meta`; as [`walk_params`].
fn walk_meta(
    jiter: &mut Jiter<'_>,
    base: usize,
    meta: &mut [Extent; META_READ.len()],
) -> Option<bool> {
    let mut once = true;
    let mut next = jiter.known_object().ok()?.map(meta_member);
    while let Some(at) = next {
        let peek = jiter.peek().ok()?;
        let start = offset(jiter.current_index(), base)?;
        jiter.known_skip(peek).ok()?;
        if let Some(at) = at {
            let end = offset(jiter.current_index(), base)?;
            once &= meta[at].set(start, end);
        }
        next = jiter.next_key().ok()?.map(meta_member);
    }
    Some(once)
}

/// What a name of the params is to the walk.
#[derive(Clone, Copy)]
enum ParamMember {
    /// One of [`PARAMS_READ`], at this place.
    Read(usize),
    /// `_meta`, whose own members are read.
    Meta,
    /// Anything else: passed over.
    Other,
}

fn param_member(name: &str) -> ParamMember {
    if name == "_meta" {
        return ParamMember::Meta;
    }
    match PARAMS_READ.iter().position(|read| *read == name) {
        Some(at) => ParamMember::Read(at),
        None => ParamMember::Other,
    }
}

fn meta_member(name: &str) -> Option<usize> {
    META_READ.iter().position(|read| *read == name)
}

/// `index` in the body as an offset in the params that start at `base`;
/// `None` past 4 GiB (the walk gives such a body to serde_json).
fn offset(index: usize, base: usize) -> Option<u32> {
    u32::try_from(index.checked_sub(base)?).ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    /// A request the walk takes is the message serde_json reads, and the
    /// extents find the members the layer's own walk finds.
    #[test]
    fn a_request_is_read_as_serde_json_reads_it_with_its_members_found() {
        let body = format!(
            r#" {{"jsonrpc":"2.0", "id" : 7,"x":[1,{{"a":null}}],"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}},"_meta":{META}, "taskId": "t"}}}} "#
        );
        let (message, extents) = read(body.as_bytes(), Find::ParamMembers).expect("taken");
        assert_eq!(message, Message::from_slice(body.as_bytes()).unwrap());
        let Message::Request(request) = &message else {
            panic!("{message:?}")
        };
        let text = request.params_text().unwrap();
        let extents = extents.expect("no member given twice");
        let params = extents.params(text).map(|v| v.map(RawText::get));
        assert_eq!(
            params,
            [
                Some(r#""echo""#),
                None,
                Some(r#""t""#),
                Some(r#"{"text":"hi"}"#),
                None,
                None
            ]
        );
        let meta = extents.meta(text).map(|v| v.map(RawText::get));
        assert_eq!(meta, [Some(r#""2026-07-28""#), Some("{}"), None, None]);
        assert!(extents.meta_is_object());
    }

    /// Escaped names and values are read as their text says.
    #[test]
    fn escapes_are_read_as_serde_json_reads_them() {
        let body = r#"{"json\u0072pc":"2.\u0030","id":"a\"b","method":"tools\/call","params":{"n\u0061me":"x"}}"#;
        let (message, extents) = read(body.as_bytes(), Find::ParamMembers).expect("taken");
        assert_eq!(message, Message::from_slice(body.as_bytes()).unwrap());
        let Message::Request(request) = &message else {
            panic!()
        };
        assert_eq!(request.method.as_str(), "tools/call");
        let name = extents.unwrap().params(request.params_text().unwrap())[0];
        assert_eq!(name.map(RawText::get), Some(r#""x""#));
    }

    /// Every body the walk does not take is serde_json's to read: refused
    /// with its error, or kept.
    #[test]
    fn what_the_walk_does_not_take_serde_json_reads() {
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        for body in [
            r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#.to_string(),
            r#"{"jsonrpc":"2.0","id":1,"method":"x","id":2}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#.into(),
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#.into(),
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"x"} x"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"x","y":01}"#.into(),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"y\":\"\u{1}\"}".into(),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{deep}}}"#),
            format!(r#"{{"x":{deep},"jsonrpc":"2.0","id":1,"method":"x"}}"#),
        ] {
            assert!(
                read(body.as_bytes(), Find::ParamMembers).is_none(),
                "{body}"
            );
        }
        // Not UTF-8, in a member nobody reads.
        let mut bytes = br#"{"jsonrpc":"2.0","id":1,"method":"x","y":"#.to_vec();
        bytes.extend_from_slice(b"\"\xff\"}");
        assert!(read(&bytes, Find::ParamMembers).is_none());
    }

    /// A member read given twice, in the params or their `_meta`: the
    /// message is read, its extents are not (the layer's walk refuses it).
    #[test]
    fn a_member_read_twice_gives_no_extents() {
        for params in [
            r#"{"name":"a","name":"b"}"#.to_string(),
            format!(r#"{{"_meta":{META},"_meta":{META}}}"#),
            format!(r#"{{"_meta":1,"_meta":{META}}}"#),
            r#"{"_meta":{"progressToken":1,"progressToken":2}}"#.into(),
        ] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{params}}}"#);
            let (message, extents) = read(body.as_bytes(), Find::ParamMembers).expect("taken");
            assert_eq!(message, Message::from_slice(body.as_bytes()).unwrap());
            assert_eq!(extents, None, "{params}");
        }
        // Params that are an array, or `_meta` that is not an object.
        let body = r#"{"jsonrpc":"2.0","method":"x","params":[1,{"name":2}]}"#;
        let (_, extents) = read(body.as_bytes(), Find::ParamMembers).expect("taken");
        assert_eq!(extents, Some(MemberExtents::default()));
        let body = r#"{"jsonrpc":"2.0","method":"x","params":{"_meta":null}}"#;
        assert!(!read(body.as_bytes(), Find::ParamMembers)
            .unwrap()
            .1
            .unwrap()
            .meta_is_object());
    }

    /// A JSON value's text, with the tokens a reader may get wrong
    /// (escapes, numbers, whitespace, nesting), often a member the layer reads.
    fn value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".into()),
            Just("false".into()),
            Just("-0".into()),
            Just("-0.5e+3".into()),
            Just("7".into()),
            Just("123456789012345678901234567890".into()),
            Just("1E400".into()),
            Just(r#""echo""#.into()),
            Just(r#""2026-07-28""#.into()),
            Just(r#""2.0""#.into()),
            Just(r#""tools/call""#.into()),
            Just(r#""\u00e9\ud83d\ude00\n\"\\\/""#.into()),
            Just("\"é\"".into()),
            Just(r#""""#.into()),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            let key = prop_oneof![
                Just(r#""name""#.to_string()),
                Just(r#""n\u0061me""#.into()),
                Just(r#""_meta""#.into()),
                Just(format!(r#""{META_VERSION}""#)),
                Just(format!(r#""{META_CAPABILITIES}""#)),
                Just(r#""progressToken""#.into()),
                Just(r#""arguments""#.into()),
                Just(r#""taskId""#.into()),
                Just(r#""x""#.into()),
            ];
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((key, inner), 0..5).prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(k, v)| format!("{k} : {v}"))
                        .collect();
                    format!("{{ {} }}", members.join(",\n"))
                }),
            ]
        })
    }

    /// An object of `members`' names, each with a value as `values` makes it.
    fn object(
        names: &'static [&'static str],
        values: impl Strategy<Value = String>,
    ) -> impl Strategy<Value = String> {
        let member = (proptest::sample::select(names), values);
        proptest::collection::vec(member, 0..6).prop_map(|members| {
            let members: Vec<String> = members
                .into_iter()
                .map(|(name, value)| format!("{name}:{value}"))
                .collect();
            format!("{{{}}}", members.join(","))
        })
    }

    /// Params as an object: the members the layer reads (escaped or not),
    /// others, and a `_meta` of the members it reads.
    fn params() -> impl Strategy<Value = String> {
        const META_NAMES: &[&str] = &[
            r#""io.modelcontextprotocol/protocolVersion""#,
            r#""io.modelcontextprotocol/clientCapabilities""#,
            r#""progressToken""#,
            r#""io.modelcontextprotocol/logLevel""#,
            r#""other""#,
        ];
        const PARAM_NAMES: &[&str] = &[
            r#""name""#,
            r#""name""#,
            r#""uri""#,
            r#""arguments""#,
            r#""requestState""#,
            r#""other""#,
        ];
        let meta = object(META_NAMES, value()).prop_map(|m| format!(r#""_meta":{m}"#));
        (object(PARAM_NAMES, value()), proptest::option::of(meta)).prop_map(|(params, meta)| {
            match meta {
                Some(meta) if params == "{}" => format!("{{{meta}}}"),
                Some(meta) => format!("{{{meta},{}", &params[1..]),
                None => params,
            }
        })
    }

    /// A body near a request's shape: most often the four members of a
    /// request, some missing, given twice or of the wrong kind, among
    /// others, in any order; one time in three, a byte taken out or a stray
    /// token put in.
    pub(crate) fn body() -> impl Strategy<Value = String> {
        let weighted = |member: BoxedStrategy<String>| proptest::option::weighted(0.9, member);
        let base = (
            weighted(
                prop_oneof![
                    4 => Just(r#""jsonrpc":"2.0""#.to_string()),
                    1 => Just(r#""jsonrpc":"2.\u0030""#.into()),
                    1 => Just(r#""jsonrpc":2"#.into()),
                ]
                .boxed(),
            ),
            weighted(
                prop_oneof![
                    2 => Just(r#""id":1"#.to_string()),
                    1 => Just(r#""id":"a""#.to_string()),
                    1 => value().prop_map(|v| format!(r#""id":{v}"#)),
                ]
                .boxed(),
            ),
            weighted(
                prop_oneof![
                    4 => Just(r#""method":"tools/call""#.to_string()),
                    1 => value().prop_map(|v| format!(r#""method":{v}"#)),
                ]
                .boxed(),
            ),
            weighted(
                prop_oneof![
                    3 => params().prop_map(|v| format!(r#""params":{v}"#)),
                    1 => value().prop_map(|v| format!(r#""params":{v}"#)),
                ]
                .boxed(),
            ),
        );
        let other = prop_oneof![
            Just(r#""id":1"#.to_string()),
            value().prop_map(|v| format!(r#""x":{v}"#)),
            value().prop_map(|v| format!(r#""result":{v}"#)),
            value().prop_map(|v| format!(r#""params":{v}"#)),
        ];
        let stray = prop_oneof![
            Just(""),
            Just("0"),
            Just("01"),
            Just("1."),
            Just(r#""\x""#),
            Just(r#""\ud800""#),
            Just("\"\u{1}\""),
            Just(","),
            Just("}"),
            Just("["),
            Just(" "),
        ];
        let mutation = proptest::option::weighted(0.33, (any::<proptest::sample::Index>(), stray));
        (base, proptest::collection::vec(other, 0..3), mutation)
            .prop_flat_map(|((a, b, c, d), others, mutation)| {
                let members: Vec<String> =
                    [a, b, c, d].into_iter().flatten().chain(others).collect();
                (Just(members).prop_shuffle(), Just(mutation))
            })
            .prop_map(|(members, mutation)| {
                let mut body = format!("{{{}}}", members.join(", "));
                if let Some((at, stray)) = mutation {
                    // On a char boundary, so that the body stays a `String`.
                    let at = at.index(body.len());
                    let at = (0..=at).rev().find(|i| body.is_char_boundary(*i));
                    let at = at.unwrap_or(0);
                    if stray.is_empty() {
                        body.remove(at);
                    } else {
                        body.insert_str(at, stray);
                    }
                }
                body
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]
        /// On any text, the walk takes only what serde_json reads to the
        /// same message: it never takes what serde_json refuses, whether it
        /// finds the params' members or not.
        #[test]
        fn the_walk_agrees_with_serde_json(body in body()) {
            let walked = read(body.as_bytes(), Find::ParamMembers);
            let serde = Message::from_slice(body.as_bytes());
            // Asked for the message alone, the walk takes the same bodies.
            let alone = read(body.as_bytes(), Find::Message);
            prop_assert_eq!(alone.clone().map(|(message, _)| message), walked.map(|(message, _)| message));
            if let Some((message, extents)) = alone {
                prop_assert_eq!(Ok(message), serde);
                prop_assert_eq!(extents, None);
            }
        }
    }
}

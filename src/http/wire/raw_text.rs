//! A JSON value's text inside a text serde_json has already checked
//! ([`RawText`]), and the walk that finds an object's members in it
//! ([`MemberWalk`]) without checking it a second time.
//!
//! serde_json reads a member as a `&RawValue` by walking it in full (its
//! `ignore_value`): reading the members of params it has just checked as a
//! `RawValue` again costs a second pass as dear as the first. Here the
//! validity is known, so finding where each member starts and ends is a
//! count of brackets outside strings. The walk never decides whether a
//! text is JSON: a `RawText` is only made from a `RawValue` or a message's
//! `Params` (or from a member found in one), which serde_json or jiter has
//! checked, or from a member the one walk over a body found (`one_walk.rs`).

use crate::http::wire::params::Params;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// A JSON value's text, part of a text serde_json has checked, and so
/// itself valid JSON: the members [`MemberWalk`] finds, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawText<'a>(&'a str);

impl<'a> RawText<'a> {
    /// The text of a value serde_json has checked.
    pub(crate) fn of(raw: &'a RawValue) -> RawText<'a> {
        RawText(raw.get())
    }

    /// A value's text the one walk over a body found (`one_walk.rs`): jiter
    /// checked it as JSON, and the body as UTF-8.
    pub(crate) fn walked(text: &'a str) -> RawText<'a> {
        RawText(text)
    }

    /// The text of a message's params, which serde_json or the one walk
    /// (jiter) checked when the message was read.
    pub(crate) fn of_params(params: &'a Params) -> RawText<'a> {
        RawText(params.get())
    }

    /// The value's text, as the client wrote it.
    pub(crate) fn get(self) -> &'a str {
        self.0
    }

    /// Whether the value begins with one of `bytes` (`{` for an object, `"`
    /// for a string, ...).
    pub(crate) fn starts_with(self, bytes: &[u8]) -> bool {
        self.0.as_bytes().first().is_some_and(|b| bytes.contains(b))
    }

    /// A string's text, borrowed unless it has escapes; `None` for any
    /// other value ([`jsonrpc::string_text`](crate::http::wire::jsonrpc::string_text)).
    pub(crate) fn string(self) -> Option<Cow<'a, str>> {
        crate::http::wire::jsonrpc::text_of(self.0)
    }

    /// The members of an object, in their order; `None` for any other value.
    pub(crate) fn members(self) -> Option<MemberWalk<'a>> {
        self.starts_with(b"{").then_some(MemberWalk {
            text: self.0,
            at: 1,
            done: false,
        })
    }
}

/// The members of an object's text, in their order (a member given twice
/// comes twice): each name with its value's text. Besides the iterator,
/// a member can be read in two steps ([`MemberWalk::name`], then
/// [`MemberWalk::value`] or [`MemberWalk::value_members`]), so that an object
/// inside is walked once, for its members, not once more to be passed.
pub(crate) struct MemberWalk<'a> {
    text: &'a str,
    /// Where the walk is: after the `{`, after a member's value, or (after
    /// [`MemberWalk::name`]) at a value.
    at: usize,
    /// The object's `}` was reached (`at` is just past it), or the walk
    /// stopped.
    done: bool,
}

/// A member's name as it is written, between its quotes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NameToken<'a> {
    /// The name's token, quotes included.
    token: &'a str,
    escaped: bool,
}

impl<'a> NameToken<'a> {
    /// The name: borrowed unless it has escapes (then decoded; a name
    /// written `"na\u006de"` is `name`, as any JSON reader takes it).
    #[inline]
    pub(crate) fn text(self) -> Cow<'a, str> {
        let inner = &self.token[1..self.token.len() - 1];
        match self.escaped {
            false => Cow::Borrowed(inner),
            // A checked string token: decoding cannot fail.
            true => {
                serde_json::from_str::<String>(self.token).map_or(Cow::Borrowed(inner), Cow::Owned)
            }
        }
    }
}

impl<'a> MemberWalk<'a> {
    /// The next member's name, the walk left at its value, which must be
    /// read next ([`MemberWalk::value`] or [`MemberWalk::value_members`]);
    /// `None` at the object's end.
    pub(crate) fn name(&mut self) -> Option<NameToken<'a>> {
        if self.done {
            return None;
        }
        let bytes = self.text.as_bytes();
        let mut at = skip_space(bytes, self.at);
        if bytes.get(at) == Some(&b',') {
            at = skip_space(bytes, at + 1);
        }
        if bytes.get(at) != Some(&b'"') {
            // The object's `}` (or, never in a checked text, anything else:
            // the walk ends there rather than reads on).
            return self.stop(match bytes.get(at) {
                Some(b'}') => at + 1,
                _ => bytes.len(),
            });
        }
        let (name_end, escaped) = string_end(bytes, at);
        let colon = skip_space(bytes, name_end);
        match (self.text.get(at..name_end), bytes.get(colon)) {
            (Some(token), Some(b':')) => {
                self.at = skip_space(bytes, colon + 1);
                Some(NameToken { token, escaped })
            }
            _ => self.stop(bytes.len()),
        }
    }

    /// The value of the member whose name was just read, the walk moved
    /// past it.
    pub(crate) fn value(&mut self) -> Option<RawText<'a>> {
        if self.done {
            return None;
        }
        let end = value_end(self.text.as_bytes(), self.at);
        match self.text.get(self.at..end) {
            Some(value) => {
                self.at = end;
                Some(RawText(value))
            }
            None => self.stop(self.text.len()),
        }
    }

    /// The members of the value of the member whose name was just read,
    /// if it is an object (else `None`, the walk still at the value): give
    /// them back to [`MemberWalk::resume_after`] to go on past it.
    pub(crate) fn value_members(&self) -> Option<MemberWalk<'a>> {
        let object = !self.done && self.text.as_bytes().get(self.at) == Some(&b'{');
        object.then_some(MemberWalk {
            text: self.text,
            at: self.at + 1,
            done: false,
        })
    }

    /// Goes on past the object `inner` walks ([`MemberWalk::value_members`]),
    /// walking what is left of it first.
    pub(crate) fn resume_after(&mut self, mut inner: MemberWalk<'a>) {
        while inner.next().is_some() {}
        self.at = inner.at;
    }

    /// Ends the walk at `at`.
    fn stop<T>(&mut self, at: usize) -> Option<T> {
        self.at = at;
        self.done = true;
        None
    }
}

impl<'a> Iterator for MemberWalk<'a> {
    type Item = (NameToken<'a>, RawText<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let name = self.name()?;
        Some((name, self.value()?))
    }
}

/// The first byte at or after `at` that is not JSON whitespace.
fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Where the string token opened at `at` ends (after its closing quote),
/// and whether it has escapes.
fn string_end(bytes: &[u8], at: usize) -> (usize, bool) {
    let mut escaped = false;
    let mut i = at + 1;
    while let Some(found) = quote_or_backslash(bytes, i) {
        if bytes[found] == b'"' {
            return (found + 1, escaped);
        }
        escaped = true;
        i = found + 2;
    }
    (bytes.len(), escaped)
}

/// The first `"` or `\` at or after `at`. Eight bytes a step (the bytes
/// equal to either made zero, then the classic test for a zero byte, whose
/// lowest flag is exact): a message's strings are mostly short, where a
/// vector search's set-up (memchr's) costs more than it saves, and a byte
/// a step costs several instructions a byte.
fn quote_or_backslash(bytes: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().ok()?);
        let found = zero_byte(word ^ QUOTES) | zero_byte(word ^ BACKSLASHES);
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes
        .get(at..)?
        .iter()
        .position(|&b| b == b'"' || b == b'\\')
        .map(|found| at + found)
}

/// Where the value that starts at `at` ends.
fn value_end(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at) {
        Some(b'"') => string_end(bytes, at).0,
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&b) = bytes.get(i) {
                match b {
                    b'"' => {
                        i = string_end(bytes, i).0;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        if depth <= 1 {
                            return i + 1;
                        }
                        depth -= 1;
                    }
                    _ => {}
                }
                i += 1;
            }
            bytes.len()
        }
        // A number, `true`, `false` or `null`: up to what follows it.
        _ => {
            let mut i = at;
            while let Some(&b) = bytes.get(i) {
                if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                i += 1;
            }
            i
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    fn members(text: &str) -> Vec<(String, String)> {
        let raw: &RawValue = serde_json::from_str(text).unwrap();
        RawText::of(raw)
            .members()
            .expect("an object")
            .map(|(name, value)| (name.text().into_owned(), value.get().to_owned()))
            .collect()
    }

    /// What serde_json reads as the same object's members, each value's
    /// text as a `&RawValue` (in order, duplicates kept).
    fn by_serde(text: &str) -> Vec<(String, String)> {
        struct Pairs(Vec<(String, String)>);
        impl<'de> serde::Deserialize<'de> for Pairs {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = Pairs;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("an object")
                    }
                    fn visit_map<M: serde::de::MapAccess<'de>>(
                        self,
                        mut map: M,
                    ) -> Result<Pairs, M::Error> {
                        let mut pairs = Vec::new();
                        while let Some(name) = map.next_key::<String>()? {
                            let value: &RawValue = map.next_value()?;
                            pairs.push((name, value.get().to_owned()));
                        }
                        Ok(Pairs(pairs))
                    }
                }
                d.deserialize_map(V)
            }
        }
        serde_json::from_str::<Pairs>(text).unwrap().0
    }

    /// The members read in two steps, each object value walked for at most
    /// `skip` of its own members (a walk left part done, or not begun) and
    /// passed with `resume_after`: the same members, and the object's first
    /// members as a walk of its own text finds them.
    fn descending(members: &mut MemberWalk<'_>, skip: usize) -> Vec<(String, String)> {
        let mut read = Vec::new();
        while let Some(name) = members.name() {
            let name = name.text().into_owned();
            match members.value_members() {
                Some(mut inner) => {
                    let start = members.at;
                    let nested: Vec<_> = descending_some(&mut inner, skip);
                    members.resume_after(inner);
                    let text = &members.text[start..members.at];
                    assert_eq!(nested[..], self::members(text)[..nested.len()], "{text}");
                    read.push((name, text.to_owned()));
                }
                None => read.push((name, members.value().unwrap().get().to_owned())),
            }
        }
        read
    }

    /// At most `skip` members of an object read by [`descending`].
    fn descending_some(members: &mut MemberWalk<'_>, skip: usize) -> Vec<(String, String)> {
        let mut read = Vec::new();
        while read.len() < skip {
            let Some(name) = members.name() else { break };
            read.push((
                name.text().into_owned(),
                members.value().unwrap().get().to_owned(),
            ));
        }
        read
    }

    #[test]
    fn finds_each_member_as_written() {
        let text = "{ \"a\" : 1 ,\"b\":\t[1, {\"c\": \"}]\\\"\"}] ,\n\"n\\u0061me\":{\"x\":{}},\"e\":\"\",\"f\":-1.5e3,\"g\":null\r}";
        assert_eq!(members(text), by_serde(text));
        assert_eq!(members(text)[2].0, "name");
        assert_eq!(members("{}"), vec![]);
        assert_eq!(members(" { } "), vec![]);
        assert_eq!(
            members(r#"{"a":1,"a":2}"#),
            vec![("a".into(), "1".into()), ("a".into(), "2".into())]
        );
        let raw: &RawValue = serde_json::from_str("[1]").unwrap();
        assert!(RawText::of(raw).members().is_none());
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\"\\\\{}\\[\\]:, ]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    proptest! {
        /// Any object, compact or pretty: the same members, names and value
        /// texts, as serde_json reads.
        #[test]
        fn agrees_with_serde_json(
            pairs in prop::collection::vec((any::<String>(), any_value()), 0..8),
            pretty in any::<bool>(),
        ) {
            let object = Value::Object(pairs.into_iter().collect());
            let text = if pretty {
                serde_json::to_string_pretty(&object).unwrap()
            } else {
                serde_json::to_string(&object).unwrap()
            };
            prop_assert_eq!(members(&text), by_serde(&text));
            let raw: &RawValue = serde_json::from_str(&text).unwrap();
            for skip in [0, 1, 3] {
                let mut walk = RawText::of(raw).members().unwrap();
                prop_assert_eq!(descending(&mut walk, skip), by_serde(&text));
            }
        }
    }
}

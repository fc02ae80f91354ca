//! The top-level members of a JSON object held as text
//! ([`ObjectMembers`]): each name with its value's text, borrowed, read in
//! one pass, so that an already serialized result can be looked into
//! (`isError`) and written again member by member without a tree.

use crate::http::wire::raw_text::RawText;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// Members kept on the stack: a tool's result has a handful (`content`,
/// `structuredContent`, `isError`, `_meta`); more spill to the heap.
const INLINE: usize = 4;

/// The members of one JSON object, in their order, each value as its text.
pub(crate) struct ObjectMembers<'a>(SmallVec<[(Cow<'a, str>, &'a RawValue); INLINE]>);

impl<'a> ObjectMembers<'a> {
    /// The members of `raw`; `None` if it is not an object.
    pub(crate) fn of(raw: &'a RawValue) -> Option<ObjectMembers<'a>> {
        if !raw.get().starts_with('{') {
            return None;
        }
        serde_json::from_str(raw.get()).ok()
    }

    /// The value of the (last) member named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.0
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| *value)
    }

    /// Whether a member is named `name`.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|(key, _)| key == name)
    }

    /// Whether its member `isError` is `true` (a tool's failure).
    pub(crate) fn is_tool_error(&self) -> bool {
        self.get("isError")
            .is_some_and(|value| value.get() == "true")
    }

    /// The members, in their order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &'a RawValue)> + '_ {
        self.0.iter().map(|(key, value)| (key.as_ref(), *value))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ObjectMembers<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MembersVisitor(PhantomData))
    }
}

/// Reads the members as `ObjectMembers<'a>` at once (the small-vector is
/// not covariant: it cannot be read as `'de`'s and shortened after).
struct MembersVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for MembersVisitor<'a> {
    type Value = ObjectMembers<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut members = SmallVec::new();
        while let Some(MemberName(name)) = map.next_key()? {
            let value: &'de RawValue = map.next_value()?;
            let name: Cow<'a, str> = name;
            members.push((name, value as &'a RawValue));
        }
        Ok(ObjectMembers(members))
    }
}

/// A member's name: borrowed from the text unless it has escapes.
struct MemberName<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for MemberName<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = MemberName<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: de::Error>(self, name: &'de str) -> Result<Self::Value, E> {
                Ok(MemberName(Cow::Borrowed(name)))
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
                Ok(MemberName(Cow::Owned(name.to_owned())))
            }
            fn visit_string<E: de::Error>(self, name: String) -> Result<Self::Value, E> {
                Ok(MemberName(Cow::Owned(name)))
            }
        }
        deserializer.deserialize_str(NameVisitor)
    }
}

/// What an object's top level says to the layer, read from its text
/// without building anything ([`TopLevel::of`]).
#[derive(Debug, PartialEq)]
pub(crate) struct TopLevel {
    /// The (last) top-level `isError` is `true`: a tool's failure.
    pub(crate) tool_error: bool,
    /// A top-level member is `resultType` or `_meta`, which a 2026-07-28
    /// answer's envelope replaces or edits.
    pub(crate) names_envelope_member: bool,
    /// A top-level member is `protocolVersion`, which a session's
    /// `initialize` answer replaces.
    pub(crate) names_protocol_version: bool,
}

impl TopLevel {
    /// The top level of `raw`, its members found by the walk of checked
    /// text (`raw_text.rs`; names with escapes decoded); `None` if it is
    /// not an object or if the (last) top-level `isError` is not a boolean:
    /// [`ObjectMembers`] reads those.
    pub(crate) fn of(raw: &RawValue) -> Option<TopLevel> {
        let mut top = TopLevel {
            tool_error: false,
            names_envelope_member: false,
            names_protocol_version: false,
        };
        let mut is_error = None;
        for (name, value) in RawText::of(raw).members()? {
            match &*name.text() {
                "resultType" | "_meta" => top.names_envelope_member = true,
                "protocolVersion" => top.names_protocol_version = true,
                "isError" => is_error = Some(value),
                _ => {}
            }
        }
        top.tool_error = match is_error.map(RawText::get) {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return None,
        };
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    /// The scan reads the top level as [`ObjectMembers`] does, whatever
    /// the nesting, strings and escapes.
    mod scan {
        use super::super::*;
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        fn name() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("isError".to_string()),
                Just("resultType".to_string()),
                Just("_meta".to_string()),
                Just("protocolVersion".to_string()),
                Just("content".to_string()),
                "[a-z_\\\\\"\u{1}é]{0,8}",
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                any::<bool>().prop_map(Value::from),
                any::<i32>().prop_map(Value::from),
                name().prop_map(Value::from),
                Just(Value::Null),
            ];
            leaf.prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                    prop::collection::vec((name(), inner), 0..4)
                        .prop_map(|members| Value::Object(members.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #[test]
            fn the_top_level_as_the_members_read_it(
                members in prop::collection::vec((name(), value()), 0..6)
            ) {
                let object: Map<String, Value> = members.into_iter().collect();
                let text = serde_json::to_string(&object).unwrap();
                let raw = RawValue::from_string(text.clone()).unwrap();
                let read = ObjectMembers::of(&raw).unwrap();
                match TopLevel::of(&raw) {
                    Some(top) => {
                        prop_assert_eq!(top.tool_error, read.is_tool_error(), "{}", text);
                        prop_assert_eq!(
                            top.names_envelope_member,
                            read.contains("resultType") || read.contains("_meta"),
                            "{}", text
                        );
                        prop_assert_eq!(
                            top.names_protocol_version,
                            read.contains("protocolVersion"),
                            "{}", text
                        );
                    }
                    None => prop_assert!(
                        read.get("isError").is_some_and(|v| !matches!(v.get(), "true" | "false")),
                        "{}", text
                    ),
                }
            }
        }

        #[test]
        fn what_the_scan_leaves_to_the_members() {
            let of = |text: &str| TopLevel::of(&RawValue::from_string(text.into()).unwrap());
            assert_eq!(of(r#"{"isError":1}"#), None);
            assert_eq!(of("[true]"), None);
            let top = of(r#"{"a":{"isError":true,"_meta":1},"b":["resultType"],"c":"_meta"}"#);
            assert_eq!(
                top,
                Some(TopLevel {
                    tool_error: false,
                    names_envelope_member: false,
                    names_protocol_version: false,
                })
            );
            // Names as any JSON reader takes them, escapes and all.
            let top = of(r#"{"is\u0045rror":true,"_m\u0065ta":{},"protocolVersion":1}"#);
            assert_eq!(
                top,
                Some(TopLevel {
                    tool_error: true,
                    names_envelope_member: true,
                    names_protocol_version: true,
                })
            );
        }
    }

    #[test]
    fn members_are_read_in_order_borrowed_unless_escaped() {
        let text = raw(r#"{"content":[{"type":"text"}], "is\u0045rror" : true,"n":{"a":1}}"#);
        let members = ObjectMembers::of(&text).unwrap();
        let read: Vec<(&str, &str)> = members.iter().map(|(k, v)| (k, v.get())).collect();
        assert_eq!(
            read,
            [
                ("content", r#"[{"type":"text"}]"#),
                ("isError", "true"),
                ("n", r#"{"a":1}"#)
            ]
        );
        assert!(members.is_tool_error());
        assert!(members.contains("n") && !members.contains("a"));
        assert!(matches!(members.0[0].0, Cow::Borrowed(_)));
        assert!(matches!(members.0[1].0, Cow::Owned(_)));
    }

    #[test]
    fn only_a_true_is_error_is_a_tool_error_and_only_objects_have_members() {
        assert!(!ObjectMembers::of(&raw(r#"{"isError":false}"#))
            .unwrap()
            .is_tool_error());
        assert!(!ObjectMembers::of(&raw(r#"{"isError":"true"}"#))
            .unwrap()
            .is_tool_error());
        assert!(ObjectMembers::of(&raw("[1]")).is_none());
        assert!(ObjectMembers::of(&raw(r#""{""#)).is_none());
        assert_eq!(ObjectMembers::of(&raw("{}")).unwrap().iter().count(), 0);
    }
}

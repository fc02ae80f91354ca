//! The top-level members of a JSON object held as text
//! ([`ObjectMembers`]): each name with its value's text, borrowed, read in
//! one pass, so that an already serialized result can be looked into
//! (`isError`) and written again member by member without a tree.

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

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
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

//! What a `subscriptions/listen` asks to hear (its `notifications` filter)
//! and the subset the layer honours, which the acknowledgement echoes.
//!
//! Every kind of list is honoured; resource subscriptions up to bounds
//! ([`FilterBounds`]): a URI longer than `uri_bytes` refuses the filter
//! (`-32602`, naming the bound); of the rest, the first ones in the order
//! given, duplicates dropped, while they fit in `uris` URIs and
//! `filter_bytes` bytes together (the spec: "the subset the server agreed
//! to honor"). The params are read once, from the request's own text,
//! without a tree of them: the URIs past the bounds are skipped, not kept,
//! so a filter of any size costs what the bounds allow (and the reading
//! of its text), and a duplicate is found by a set, not by a scan.

use super::kind::ListKind;
use super::topics::Topic;
use crate::http::wire::jsonrpc::RpcError;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

/// What a filter is honoured for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FilterBounds {
    /// Resource URIs, at most.
    pub(crate) uris: usize,
    /// One URI's bytes, at most (past it the filter is refused).
    pub(crate) uri_bytes: usize,
    /// All its URIs' bytes together, at most.
    pub(crate) filter_bytes: usize,
}

/// The honoured filter of one listen stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    /// The kinds of list asked for, by [`ListKind::index`].
    pub(crate) lists: [bool; 3],
    pub(crate) uris: Vec<Box<str>>,
}

impl Filter {
    /// The honoured filter of a listen request's `params`; `-32602` for a
    /// filter of the wrong shape or a URI past `bounds.uri_bytes`.
    pub(crate) fn honoured(params: Option<&str>, bounds: FilterBounds) -> Result<Filter, RpcError> {
        let Some(params) = params else {
            return Ok(Filter::default());
        };
        let mut de = serde_json::Deserializer::from_str(params);
        let filter = de
            .deserialize_option(ParamsVisitor(bounds))
            .map_err(|e| RpcError::invalid_params(format!("invalid listen filter: {e}")))?;
        Ok(filter.unwrap_or_default())
    }

    /// Its URIs' bytes together.
    pub(crate) fn uri_bytes(&self) -> usize {
        self.uris.iter().map(|uri| uri.len()).sum()
    }

    /// The kinds of list it asks for.
    pub(crate) fn kinds(&self) -> impl Iterator<Item = ListKind> + '_ {
        ListKind::ALL
            .into_iter()
            .filter(|kind| self.lists[kind.index()])
    }

    /// The kinds' topics (its URIs' are the index's to make: they are
    /// interned when joined).
    pub(crate) fn list_topics(&self) -> impl Iterator<Item = Topic> + '_ {
        self.kinds().map(Topic::List)
    }

    /// The filter as the acknowledgement echoes it: the honoured kinds,
    /// and the honoured URIs (omitted when none).
    pub(crate) fn acknowledged(&self) -> Value {
        let mut out = Map::new();
        for kind in self.kinds() {
            out.insert(kind.filter_key().into(), true.into());
        }
        if !self.uris.is_empty() {
            out.insert("resourceSubscriptions".into(), json!(self.uris));
        }
        Value::Object(out)
    }

    /// [`acknowledged`](Self::acknowledged) written as JSON text at the end
    /// of `out`, with no tree: its members in the order a `Value`'s
    /// (sorted) map writes them.
    pub(crate) fn write_acknowledged(&self, out: &mut Vec<u8>) {
        // Sorted as a `serde_json::Map` sorts them: `promptsListChanged`,
        // `resourceSubscriptions`, `resourcesListChanged`,
        // `toolsListChanged`.
        let lists = |kind: ListKind| self.lists[kind.index()].then(|| kind.filter_key());
        let mut first = true;
        let mut member = |out: &mut Vec<u8>, name: &str| {
            out.push(if first { b'{' } else { b',' });
            first = false;
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
        };
        if let Some(name) = lists(ListKind::Prompts) {
            member(out, name);
            out.extend_from_slice(b"true");
        }
        if !self.uris.is_empty() {
            member(out, "resourceSubscriptions");
            // Writing strings into a `Vec` cannot fail.
            let _ = serde_json::to_writer(&mut *out, &self.uris);
        }
        for name in [lists(ListKind::Resources), lists(ListKind::Tools)]
            .into_iter()
            .flatten()
        {
            member(out, name);
            out.extend_from_slice(b"true");
        }
        if first {
            out.push(b'{');
        }
        out.push(b'}');
    }
}

/// The error of a URI past the bound.
fn too_long<E: de::Error>(bounds: FilterBounds) -> E {
    E::custom(format!(
        "a resource URI is longer than {} bytes (listen_uri_bytes)",
        bounds.uri_bytes
    ))
}

/// `params`: an object whose `notifications` member is the filter (any
/// other member skipped); `null` is no filter.
struct ParamsVisitor(FilterBounds);

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Option<Filter>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the listen request's params, an object")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut filter = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "notifications" && filter.is_none() {
                filter = map.next_value_seed(NotificationsSeed(self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(filter)
    }
}

/// The `notifications` member: the filter, or `null`.
struct NotificationsSeed(FilterBounds);

impl<'de> de::DeserializeSeed<'de> for NotificationsSeed {
    type Value = Option<Filter>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for NotificationsSeed {
    type Value = Option<Filter>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a listen filter, an object")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut filter = Filter::default();
        let mut uris_seen = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if let Some(kind) = ListKind::ALL.into_iter().find(|k| k.filter_key() == key) {
                filter.lists[kind.index()] = map.next_value::<Option<bool>>()? == Some(true);
            } else if key == "resourceSubscriptions" && !uris_seen {
                uris_seen = true;
                filter.uris = map.next_value_seed(UrisSeed(self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Some(filter))
    }
}

/// `resourceSubscriptions`: an array of URIs, honoured while within the
/// bounds, the rest read past (checked as JSON, never kept).
struct UrisSeed(FilterBounds);

impl<'de> de::DeserializeSeed<'de> for UrisSeed {
    type Value = Vec<Box<str>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for UrisSeed {
    type Value = Vec<Box<str>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("resourceSubscriptions, an array of strings")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
        let bounds = self.0;
        let mut uris: Vec<Box<str>> = Vec::new();
        let mut seen: HashSet<Box<str>> = HashSet::new();
        let mut bytes = 0usize;
        while uris.len() < bounds.uris {
            let Some(uri) = seq.next_element::<Cow<'de, str>>()? else {
                return Ok(uris);
            };
            if uri.len() > bounds.uri_bytes {
                return Err(too_long(bounds));
            }
            if seen.contains(&*uri) {
                continue;
            }
            if bytes + uri.len() > bounds.filter_bytes {
                // The budget is spent: the rest is read past, unkept.
                break;
            }
            bytes += uri.len();
            let uri: Box<str> = uri.into();
            seen.insert(uri.clone());
            uris.push(uri);
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(uris)
    }
}

/// A legacy `resources/subscribe`'s (or `unsubscribe`'s) URI, read from
/// its params' text without a tree; `-32602` past `uri_bytes` (or for
/// params of the wrong shape).
pub(crate) fn subscribed_uri(params: Option<&str>, uri_bytes: usize) -> Result<Box<str>, RpcError> {
    #[derive(Deserialize)]
    struct Subscribe<'a> {
        #[serde(borrow)]
        uri: Cow<'a, str>,
    }
    let params = params.unwrap_or("null");
    let Subscribe { uri } = serde_json::from_str(params)
        .map_err(|e| RpcError::invalid_params(format!("invalid resource subscription: {e}")))?;
    if uri.len() > uri_bytes {
        return Err(RpcError::invalid_params(format!(
            "the resource URI is longer than {uri_bytes} bytes (listen_uri_bytes)"
        )));
    }
    Ok(uri.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: FilterBounds = FilterBounds {
        uris: 2,
        uri_bytes: 16,
        filter_bytes: 1024,
    };

    fn honoured(value: Value, bounds: FilterBounds) -> Result<Filter, RpcError> {
        Filter::honoured(Some(&value.to_string()), bounds)
    }

    #[test]
    fn honours_every_kind_and_a_bounded_list_of_uris() {
        let params = json!({ "notifications": {
            "toolsListChanged": true,
            "promptsListChanged": false,
            "resourceSubscriptions": ["a", "a", "b", "c"],
        }});
        let filter = honoured(params, BOUNDS).unwrap();
        assert_eq!(filter.lists, [true, false, false]);
        assert_eq!(filter.uris, vec!["a".into(), "b".into()] as Vec<Box<str>>);
        assert_eq!(
            filter.acknowledged(),
            json!({ "toolsListChanged": true, "resourceSubscriptions": ["a", "b"] })
        );
        let topics: Vec<Topic> = filter.list_topics().collect();
        assert_eq!(topics, vec![Topic::List(ListKind::Tools)]);
        assert_eq!(filter.uri_bytes(), 2);
    }

    /// The written acknowledgement is the tree's text, byte for byte,
    /// whatever the kinds and URIs (escapes included).
    #[test]
    fn the_written_acknowledgement_is_the_trees_text() {
        let uri_sets: [&[&str]; 3] = [&[], &["a"], &["res://\"quoted\"\\", "ünï/\u{1}"]];
        for bits in 0..8 {
            for uris in uri_sets {
                let filter = Filter {
                    lists: [bits & 1 != 0, bits & 2 != 0, bits & 4 != 0],
                    uris: uris.iter().map(|&u| u.into()).collect(),
                };
                let mut written = Vec::new();
                filter.write_acknowledged(&mut written);
                let tree = serde_json::to_string(&filter.acknowledged()).unwrap();
                assert_eq!(String::from_utf8(written).unwrap(), tree, "{filter:?}");
            }
        }
    }

    #[test]
    fn an_empty_filter_hears_nothing_and_a_bad_one_is_refused() {
        for empty in [json!({}), json!(null), json!({ "notifications": null })] {
            let none = honoured(empty, BOUNDS).unwrap();
            assert_eq!(none, Filter::default());
            assert_eq!(none.acknowledged(), json!({}));
        }
        assert_eq!(Filter::honoured(None, BOUNDS).unwrap(), Filter::default());
        for bad in [
            json!({ "notifications": { "resourceSubscriptions": "a" } }),
            json!({ "notifications": { "resourceSubscriptions": [1] } }),
            json!({ "notifications": { "toolsListChanged": "yes" } }),
            json!([]),
        ] {
            assert!(honoured(bad.clone(), BOUNDS).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_uri_past_its_bound_refuses_the_filter_and_the_bytes_bound_the_rest() {
        let long = "u".repeat(17);
        let refused = honoured(
            json!({ "notifications": { "resourceSubscriptions": ["a", long] } }),
            BOUNDS,
        )
        .unwrap_err();
        assert_eq!(refused.code, RpcError::INVALID_PARAMS);
        assert!(
            refused.message.contains("listen_uri_bytes"),
            "{}",
            refused.message
        );
        // Past the count bound, the rest is read past, not checked.
        let past = honoured(
            json!({ "notifications": { "resourceSubscriptions": ["a", "b", long] } }),
            BOUNDS,
        )
        .unwrap();
        assert_eq!(past.uris.len(), 2);
        // Bytes: 10 + 10 > 16: the second is not honoured.
        let bytes = FilterBounds {
            uris: 8,
            uri_bytes: 16,
            filter_bytes: 16,
        };
        let ten = |c: char| c.to_string().repeat(10);
        let filter = honoured(
            json!({ "notifications": { "resourceSubscriptions": [ten('a'), ten('b')] } }),
            bytes,
        )
        .unwrap();
        assert_eq!(filter.uris, vec![ten('a').into()] as Vec<Box<str>>);
    }

    #[test]
    fn escaped_uris_are_read_and_duplicates_dropped_by_value() {
        let filter = honoured(
            json!({ "notifications": { "resourceSubscriptions": ["a\"b", "a\"b", "c"] } }),
            FilterBounds { uris: 8, ..BOUNDS },
        )
        .unwrap();
        assert_eq!(
            filter.uris,
            vec!["a\"b".into(), "c".into()] as Vec<Box<str>>
        );
    }

    #[test]
    fn a_subscription_reads_its_uri_within_the_bound() {
        let ok = json!({ "uri": "basket://1", "_meta": {} }).to_string();
        assert_eq!(&*subscribed_uri(Some(&ok), 16).unwrap(), "basket://1");
        let long = json!({ "uri": "u".repeat(17) }).to_string();
        let refused = subscribed_uri(Some(&long), 16).unwrap_err();
        assert_eq!(refused.code, RpcError::INVALID_PARAMS);
        assert!(subscribed_uri(None, 16).is_err());
    }
}

//! What a `subscriptions/listen` asks to hear (its `notifications` filter)
//! and the subset the layer honours, which the acknowledgement echoes.
//!
//! Every kind is honoured; resource subscriptions up to a bound
//! ([`Builder::listen_uris`](crate::http::Builder::listen_uris)), the
//! first ones in the order given, duplicates dropped: a filter of ten
//! thousand URIs costs what the bound allows, and the acknowledgement tells
//! the client which it got (the spec: "the subset the server agreed to
//! honor").

use super::topics::Topic;
use crate::http::wire::jsonrpc::RpcError;
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// The honoured filter of one listen stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) uris: Vec<Box<str>>,
}

/// The filter as a client sends it.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Requested {
    tools_list_changed: Option<bool>,
    prompts_list_changed: Option<bool>,
    resources_list_changed: Option<bool>,
    resource_subscriptions: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Params {
    notifications: Option<Requested>,
}

impl Filter {
    /// The honoured filter of a listen request's `params`, at most
    /// `max_uris` resource subscriptions; `-32602` for a filter of the
    /// wrong shape.
    pub(crate) fn honoured(params: &Value, max_uris: usize) -> Result<Filter, RpcError> {
        let params: Params = serde_json::from_value(params.clone())
            .map_err(|e| RpcError::invalid_params(format!("invalid listen filter: {e}")))?;
        let requested = params.notifications.unwrap_or_default();
        let mut uris: Vec<Box<str>> = Vec::new();
        for uri in requested.resource_subscriptions.unwrap_or_default() {
            if uris.len() == max_uris {
                break;
            }
            if !uris.iter().any(|u| **u == *uri) {
                uris.push(uri.into_boxed_str());
            }
        }
        Ok(Filter {
            tools: requested.tools_list_changed == Some(true),
            prompts: requested.prompts_list_changed == Some(true),
            resources: requested.resources_list_changed == Some(true),
            uris,
        })
    }

    /// The topics a listener of this filter joins.
    pub(crate) fn topics(&self) -> impl Iterator<Item = Topic> + '_ {
        let kinds = [
            (self.tools, Topic::Tools),
            (self.prompts, Topic::Prompts),
            (self.resources, Topic::Resources),
        ];
        kinds
            .into_iter()
            .filter_map(|(on, topic)| on.then_some(topic))
            .chain(self.uris.iter().map(|uri| Topic::Uri(uri.clone())))
    }

    /// The filter as the acknowledgement echoes it: the honoured kinds,
    /// and the honoured URIs (omitted when none).
    pub(crate) fn acknowledged(&self) -> Value {
        let mut out = Map::new();
        if self.tools {
            out.insert("toolsListChanged".into(), true.into());
        }
        if self.prompts {
            out.insert("promptsListChanged".into(), true.into());
        }
        if self.resources {
            out.insert("resourcesListChanged".into(), true.into());
        }
        if !self.uris.is_empty() {
            out.insert("resourceSubscriptions".into(), json!(self.uris));
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn honours_every_kind_and_a_bounded_list_of_uris() {
        let params = json!({ "notifications": {
            "toolsListChanged": true,
            "promptsListChanged": false,
            "resourceSubscriptions": ["a", "b", "a", "c"],
        }});
        let filter = Filter::honoured(&params, 2).unwrap();
        assert!(filter.tools && !filter.prompts && !filter.resources);
        assert_eq!(filter.uris, vec!["a".into(), "b".into()] as Vec<Box<str>>);
        assert_eq!(
            filter.acknowledged(),
            json!({ "toolsListChanged": true, "resourceSubscriptions": ["a", "b"] })
        );
        let topics: Vec<Topic> = filter.topics().collect();
        assert_eq!(
            topics,
            vec![Topic::Tools, Topic::Uri("a".into()), Topic::Uri("b".into())]
        );
    }

    #[test]
    fn an_empty_filter_hears_nothing_and_a_bad_one_is_refused() {
        let none = Filter::honoured(&json!({}), 8).unwrap();
        assert_eq!(none, Filter::default());
        assert_eq!(none.acknowledged(), json!({}));
        let bad = json!({ "notifications": { "resourceSubscriptions": "a" } });
        assert!(Filter::honoured(&bad, 8).is_err());
    }
}

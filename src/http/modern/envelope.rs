//! The envelope of a 2026-07-28 answer, which is the layer's: whatever the
//! application returns, what reaches the client is a valid modern message.
//!
//! * every result an application returns has `resultType: "complete"`,
//!   whatever it set there (the other kinds are the layer's to send: an
//!   `input_required` answer is `Reply::InputRequired`, a task's
//!   `CreateTaskResult` `Reply::Task`, or `Reply::TaskCreated` for a task
//!   of the application's own store, written as a task only where the
//!   request may take one);
//! * the results that must carry caching hints (`tools/list`,
//!   `prompts/list`, `resources/list`, `resources/templates/list`,
//!   `resources/read`) get `ttlMs: 0` and `cacheScope: "private"` (cache
//!   nothing, share nothing) for whichever the application left out;
//! * every result's `_meta` names the server
//!   (`io.modelcontextprotocol/serverInfo`), when the application says who
//!   it is ([`Discovery::server_info`](crate::http::modern::Discovery::server_info));
//! * on a streamed answer: a request to the client (forbidden at
//!   2026-07-28: use `input_required`) is dropped; so is a log message when
//!   the request asked for no log level, or for a higher one (the logging
//!   page: a server MUST NOT emit them then); the response gets the same
//!   envelope as a plain result.

use crate::http::app::discovery::ServerInfo;
use crate::http::app::ToolText;
use crate::http::wire::jsonrpc;
use crate::http::wire::meta::{LogLevel, META_SERVER_INFO};
use crate::http::wire::object_members::{ObjectMembers, TopLevel};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The methods whose complete results must carry caching hints
/// (`server/discover` is answered by the layer itself).
const CACHEABLE: [&str; 5] = [
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// The envelope of one request's answer.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    pub(crate) id: Value,
    pub(crate) method: std::borrow::Cow<'static, str>,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) server_info: Option<Arc<ServerInfo>>,
}

impl Envelope {
    /// A result as the client gets it: the application's members, and the
    /// layer's (`resultType`, the caching hints, the server's name) written
    /// beside them as it is serialized, with no tree built around it.
    pub(crate) fn result(&self, result: Value) -> Enveloped<'_> {
        let result = match result {
            Value::Object(map) => map,
            // Not an object: no valid result could hold it.
            other => {
                let mut map = Map::new();
                map.insert("value".into(), other);
                map
            }
        };
        Enveloped {
            members: Members::Tree(result),
            envelope: self,
        }
    }

    /// [`Envelope::result`] of a result the application serialized
    /// (`Reply::Serialized`): its members read from the text, in one pass,
    /// and written again as they are.
    pub(crate) fn serialized<'e>(&'e self, result: &'e RawValue) -> Enveloped<'e> {
        match ObjectMembers::of(result) {
            Some(members) => Enveloped {
                members: Members::Text(members),
                envelope: self,
            },
            // Not an object (rare): as a tree, wrapped like any other.
            None => self.result(serde_json::from_str(result.get()).unwrap_or(Value::Null)),
        }
    }

    /// The whole result message for a result the application serialized,
    /// written around its text without building anything, and whether it
    /// is a tool's failure; `None` when the envelope must read it
    /// ([`Envelope::serialized`]). It may be written so when it is an
    /// object (`{...}`) with no top-level `resultType` or `_meta` (the
    /// envelope's to replace or edit), with `isError`, if there, `true` or
    /// `false`, answering a method that takes no caching hints: then
    /// the layer's members go after the application's, as
    /// [`Envelope::serialized`] writes them.
    pub(crate) fn plain_message(&self, result: &RawValue) -> Option<(bytes::Bytes, bool)> {
        let text = result.get();
        let inner = text.strip_prefix('{')?.strip_suffix('}')?;
        if CACHEABLE.contains(&&*self.method) {
            return None;
        }
        let TopLevel {
            tool_error,
            names_envelope_member,
            ..
        } = TopLevel::of(result)?;
        if names_envelope_member {
            return None;
        }
        let message = self.written_around(|out| {
            out.extend_from_slice(inner.as_bytes());
            Ok(!inner.trim_ascii().is_empty())
        });
        (!message.is_empty()).then_some((message, tool_error))
    }

    /// The whole result message for a tool's text result, written around
    /// its text as [`Envelope::plain_message`] writes an object (it has
    /// neither `resultType` nor `_meta`); `None` answering a method that
    /// takes caching hints.
    pub(crate) fn text_message(&self, text: &ToolText) -> Option<bytes::Bytes> {
        if CACHEABLE.contains(&&*self.method) {
            return None;
        }
        let message = self.written_around(|out| {
            text.write_members(out)?;
            Ok(true)
        });
        (!message.is_empty()).then_some(message)
    }

    /// A result message whose result object holds the members `members`
    /// writes (whether it wrote any), then the layer's: `resultType`
    /// `"complete"` and the server's name.
    fn written_around(
        &self,
        members: impl Fn(&mut Vec<u8>) -> serde_json::Result<bool>,
    ) -> bytes::Bytes {
        let info = self.server_info.as_deref();
        let id = &self.id;
        jsonrpc::written(|out| {
            out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            serde_json::to_writer(&mut *out, id)?;
            out.extend_from_slice(br#","result":{"#);
            if members(out)? {
                out.push(b',');
            }
            out.extend_from_slice(br#""resultType":"complete""#);
            if let Some(info) = info {
                out.push(b',');
                out.extend_from_slice(info.meta_member.as_bytes());
            }
            out.extend_from_slice(b"}}");
            Ok(())
        })
    }

    /// A `CreateTaskResult` (`resultType` "task", which no other result
    /// may carry: the layer's store's, or an application's own where the
    /// request may take a task), named like every other result.
    pub(crate) fn task_result(&self, mut result: Map<String, Value>) -> Value {
        result.insert("resultType".into(), "task".into());
        self.name_server(&mut result);
        Value::Object(result)
    }

    fn name_server(&self, result: &mut Map<String, Value>) {
        if let Some(info) = &self.server_info {
            let meta = result
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.entry(META_SERVER_INFO)
                    .or_insert_with(|| info.value.clone());
            }
        }
    }

    /// One message of a streamed answer as the client gets it, or `None`
    /// when it may not be sent.
    pub(crate) fn outgoing(&self, mut message: Value) -> Option<Value> {
        let is_request = message.get("method").is_some() && message.get("id").is_some();
        if is_request {
            tracing::warn!(
                method = message["method"].as_str().unwrap_or(""),
                "a request to the client on a 2026-07-28 stream was dropped (use input_required)"
            );
            return None;
        }
        if message["method"] == "notifications/message" {
            let level = message["params"]["level"]
                .as_str()
                .and_then(LogLevel::named);
            let wanted = match (self.log_level, level) {
                (Some(min), Some(level)) => level >= min,
                _ => false,
            };
            return wanted.then_some(message);
        }
        if message.get("id") == Some(&self.id) {
            if let Some(result) = message.get_mut("result") {
                // Cannot fail: every key is a string.
                *result = serde_json::to_value(self.result(result.take())).unwrap_or(Value::Null);
            }
        }
        Some(message)
    }
}

/// A result in its envelope ([`Envelope::result`]): serialized, the
/// application's members (its `resultType` replaced by `"complete"`: an
/// input-required answer is `Reply::InputRequired`, a task `Reply::Task`),
/// the caching hints it left out on a [`CACHEABLE`] method, and the
/// server's name in `_meta` unless it named one.
pub(crate) struct Enveloped<'e> {
    members: Members<'e>,
    envelope: &'e Envelope,
}

/// The application's members: a tree it built, or the text it serialized.
enum Members<'r> {
    Tree(Map<String, Value>),
    Text(ObjectMembers<'r>),
}

impl Members<'_> {
    fn contains(&self, key: &str) -> bool {
        match self {
            Members::Tree(map) => map.contains_key(key),
            Members::Text(members) => members.contains(key),
        }
    }
}

impl Enveloped<'_> {
    /// Whether the application's member `isError` is `true` (a tool's
    /// failure).
    pub(crate) fn is_tool_error(&self) -> bool {
        match &self.members {
            Members::Tree(map) => map.get("isError") == Some(&Value::Bool(true)),
            Members::Text(members) => members.is_tool_error(),
        }
    }
}

impl Serialize for Enveloped<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let info = self.envelope.server_info.as_deref().map(|info| &info.value);
        let mut map = serializer.serialize_map(None)?;
        match &self.members {
            Members::Tree(result) => {
                for (key, value) in result {
                    match (key.as_str(), value, info) {
                        ("resultType", _, _) => {}
                        ("_meta", Value::Object(meta), Some(info))
                            if !meta.contains_key(META_SERVER_INFO) =>
                        {
                            map.serialize_entry(key, &Named { meta, info })?;
                        }
                        _ => map.serialize_entry(key, value)?,
                    }
                }
            }
            Members::Text(members) => {
                for (key, value) in members.iter() {
                    match (key, info) {
                        ("resultType", _) => {}
                        // The application's own `_meta` (rare): read as a
                        // tree only to add the server's name to it.
                        ("_meta", Some(info)) => {
                            match serde_json::from_str::<Map<String, Value>>(value.get()) {
                                Ok(meta) if !meta.contains_key(META_SERVER_INFO) => {
                                    map.serialize_entry(key, &Named { meta: &meta, info })?;
                                }
                                _ => map.serialize_entry(key, value)?,
                            }
                        }
                        _ => map.serialize_entry(key, value)?,
                    }
                }
            }
        }
        map.serialize_entry("resultType", "complete")?;
        if CACHEABLE.contains(&&*self.envelope.method) {
            if !self.members.contains("ttlMs") {
                map.serialize_entry("ttlMs", &0)?;
            }
            if !self.members.contains("cacheScope") {
                map.serialize_entry("cacheScope", "private")?;
            }
        }
        if let (Some(info), false) = (info, self.members.contains("_meta")) {
            map.serialize_entry(
                "_meta",
                &Named {
                    meta: &Map::new(),
                    info,
                },
            )?;
        }
        map.end()
    }
}

/// A `_meta` object with the server's name added.
struct Named<'a> {
    meta: &'a Map<String, Value>,
    info: &'a Value,
}

impl Serialize for Named<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.meta.len() + 1))?;
        for (key, value) in self.meta {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry(META_SERVER_INFO, self.info)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(method: &str, log_level: Option<LogLevel>) -> Envelope {
        Envelope {
            id: json!(7),
            method: method.to_owned().into(),
            log_level,
            server_info: Some(Arc::new(ServerInfo::new(
                json!({ "name": "s", "version": "1" }),
            ))),
        }
    }

    /// What the client gets of `result` answering `method`.
    fn sent(method: &str, result: Value) -> Value {
        let envelope = envelope(method, None);
        let raw = serde_json::value::to_raw_value(&result).unwrap();
        let text = serde_json::to_string(&envelope.result(result.clone())).unwrap();
        // The same members, in the same order, from the text as from the tree.
        let from_text = serde_json::to_string(&envelope.serialized(&raw)).unwrap();
        assert_eq!(from_text, text);
        // Written around the text, when it may be: the same bytes.
        if let Some((message, tool_error)) = envelope.plain_message(&raw) {
            let enveloped = envelope.result(result.clone());
            assert_eq!(message, jsonrpc::result_bytes(&envelope.id, &enveloped));
            assert_eq!(tool_error, enveloped.is_tool_error());
        }
        for key in ["resultType", "ttlMs", "cacheScope", "_meta", "value"] {
            let written = text.matches(&format!("\"{key}\":")).count();
            assert!(written <= 1, "{key} written {written} times: {text}");
        }
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn results_get_their_required_fields() {
        let list = sent("tools/list", json!({ "tools": [] }));
        assert_eq!(list["resultType"], "complete");
        assert_eq!(list["ttlMs"], 0);
        assert_eq!(list["cacheScope"], "private");
        assert_eq!(list["_meta"][META_SERVER_INFO]["name"], "s");
        let kept = sent(
            "resources/read",
            json!({ "contents": [], "ttlMs": 5, "cacheScope": "public" }),
        );
        assert_eq!(
            (kept["ttlMs"].clone(), kept["cacheScope"].clone()),
            (json!(5), json!("public"))
        );
        let call = sent("tools/call", json!({ "content": [] }));
        assert_eq!(call["resultType"], "complete");
        assert!(call.get("ttlMs").is_none());
        // Only the layer's own task result may say "task".
        let forged = sent("tools/call", json!({ "resultType": "task" }));
        assert_eq!(forged["resultType"], "complete");
        let wrapped = sent("tools/call", json!([1]));
        assert_eq!(wrapped["value"], json!([1]));
        assert_eq!(wrapped["resultType"], "complete");
        let task = envelope("tools/call", None).task_result(Map::new());
        assert_eq!(task["resultType"], "task");
    }

    #[test]
    fn the_applications_meta_keeps_its_members_and_its_own_server_name() {
        let merged = sent("tools/call", json!({ "_meta": { "a": 1 } }));
        assert_eq!(merged["_meta"]["a"], 1);
        assert_eq!(merged["_meta"][META_SERVER_INFO]["name"], "s");
        let own = sent(
            "tools/call",
            json!({ "_meta": { META_SERVER_INFO: { "name": "mine" } } }),
        );
        assert_eq!(own["_meta"][META_SERVER_INFO]["name"], "mine");
        let odd = sent("tools/call", json!({ "_meta": 3 }));
        assert_eq!(
            odd["_meta"], 3,
            "not an object: left as the application wrote it"
        );
        let unnamed = Envelope {
            server_info: None,
            ..envelope("tools/call", None)
        };
        let text = serde_json::to_string(&unnamed.result(json!({ "content": [] }))).unwrap();
        assert!(!text.contains("_meta"), "{text}");
    }

    #[test]
    fn streams_carry_only_what_may_be_sent() {
        let quiet = envelope("tools/call", None);
        let log = json!({ "jsonrpc": "2.0", "method": "notifications/message",
                          "params": { "level": "info", "data": "x" } });
        assert_eq!(quiet.outgoing(log.clone()), None);
        assert_eq!(
            envelope("tools/call", Some(LogLevel::Info)).outgoing(log.clone()),
            Some(log.clone())
        );
        assert_eq!(
            envelope("tools/call", Some(LogLevel::Error)).outgoing(log),
            None
        );
        let ask = json!({ "jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage" });
        assert_eq!(quiet.outgoing(ask), None);
        let progress =
            json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": {} });
        assert_eq!(quiet.outgoing(progress.clone()), Some(progress));
        let answer = quiet
            .outgoing(json!({ "jsonrpc": "2.0", "id": 7, "result": { "content": [] } }))
            .unwrap();
        assert_eq!(answer["result"]["resultType"], "complete");
    }

    /// A result written around its text is the message the reading path
    /// writes, byte for byte, with the same tool failure, with the server
    /// named or not, escapes and all; a result with a top-level member of
    /// the envelope's, or an `isError` that is no boolean, or that answers a
    /// method with caching hints, is read.
    #[test]
    fn a_plain_result_is_written_around_its_text() {
        let raw = |text: &str| RawValue::from_string(text.to_owned()).unwrap();
        for server_info in [
            None,
            Some(Arc::new(ServerInfo::new(
                json!({ "name": "s", "version": "1" }),
            ))),
        ] {
            for id in [json!(7), json!("a\"b"), json!(null)] {
                let envelope = Envelope {
                    id,
                    method: "tools/call".into(),
                    log_level: None,
                    server_info: server_info.clone(),
                };
                for (text, tool_error) in [
                    (
                        r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#,
                        false,
                    ),
                    (r#"{"content":[],"isError":true}"#, true),
                    (r#"{"isError" : true,"content":[],"isError":false}"#, false),
                    (
                        r#"{"content":[],"structuredContent":{"isError":true}}"#,
                        false,
                    ),
                    (
                        r#"{"content":[],"structuredContent":{"_meta":{},"resultType":1}}"#,
                        false,
                    ),
                    (
                        r#"{"content":[{"type":"text","text":"a \"quoted\" \n \\ line"}]}"#,
                        false,
                    ),
                    (
                        r#"{"content":[{"type":"text","text":"\"isError\": true"}]}"#,
                        false,
                    ),
                    (r#"{"content":[],"is\u0045rror":true}"#, true),
                    (r#"{"content":[{"type":"text","text":"\u0041"}]}"#, false),
                    (
                        r#"{"content":[{"type":"text","text":"x"}],"note":"_meta"}"#,
                        false,
                    ),
                    ("{}", false),
                    ("{ }", false),
                ] {
                    let result = raw(text);
                    let (plain, plain_error) = envelope.plain_message(&result).expect(text);
                    let enveloped = envelope.serialized(&result);
                    let read = jsonrpc::result_bytes(&envelope.id, &enveloped);
                    assert_eq!(plain_error, tool_error, "{text}");
                    assert_eq!(enveloped.is_tool_error(), tool_error, "{text}");
                    // Spaces between tokens and escapes are kept as
                    // written; the reading path writes its names compact
                    // and decoded.
                    if !(text.contains(" : ") || text == "{ }" || text.contains("\\u")) {
                        assert_eq!(plain, read, "{text}");
                    }
                    let plain: Value = serde_json::from_slice(&plain).unwrap();
                    let read: Value = serde_json::from_slice(&read).unwrap();
                    assert_eq!(plain, read, "{text}");
                }
                for text in [
                    r#"{"content":[],"resultType":"task"}"#,
                    r#"{"content":[],"_meta":{"x":1}}"#,
                    r#"{"content":[],"isError":"yes"}"#,
                    r#"{"content":[],"result\u0054ype":"task"}"#,
                    "[1]",
                    "3",
                ] {
                    assert!(envelope.plain_message(&raw(text)).is_none(), "{text}");
                }
            }
        }
        let cacheable = envelope("tools/list", None);
        assert!(cacheable.plain_message(&raw(r#"{"tools":[]}"#)).is_none());
    }
}

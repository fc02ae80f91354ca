//! `initialize` without a session id: the request is checked first, and
//! only then is a session inserted (with this request already in flight),
//! run, and answered with its `MCP-Session-Id`. A refused or failed first
//! request creates nothing that outlives it.
//!
//! The layer negotiates the session's protocol version (the client's, if
//! served, else the latest: [`protocol::negotiate`]): the handler sees it
//! in [`Context::version`](crate::http::Context::version), and the result
//! carries it as `protocolVersion` whatever the application put there.

use super::respond::respond;
use crate::http::app::{App, Reply};
use crate::http::observe;
use crate::http::run::dispatch::Dispatched;
use crate::http::run::hub::Hub;
use crate::http::session::entry::SessionEntry;
use crate::http::wire::body;
use crate::http::wire::body::Body;
use crate::http::wire::caught::panic_message;
use crate::http::wire::headers;
use crate::http::wire::jsonrpc::{self, Message, Request, RpcError};
use crate::http::wire::object_members::TopLevel;
use crate::http::wire::principal::Principal;
use crate::http::wire::protocol;
use crate::http::wire::reject::Reject;
use crate::Reason;
use bytes::Bytes;
use http::header::HeaderValue;
use http::request::Parts;
use http::Response;
use serde_json::value::RawValue;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Opens a session for a valid `initialize` and answers it.
#[allow(clippy::manual_async_fn)] // on purpose: see `modern::serve::serve`
pub(super) fn open<'a, A: App>(
    hub: &'a Arc<Hub<A>>,
    request: Request,
    version: Result<&'static str, RpcError>,
    parts: Parts,
) -> impl Future<Output = Response<Body>> + 'a {
    async move {
        let config = &hub.config;
        let version = match version {
            Ok(version) => version,
            Err(error) => return Reject::Malformed(error).respond(Some(&request.id), config),
        };
        if hub.phase.is_shutting_down() {
            return Reject::ShuttingDown.respond(None, config);
        }
        if hub.phase.is_draining() {
            return Reject::Draining.respond(Some(&request.id), config);
        }
        let opened =
            std::panic::catch_unwind(AssertUnwindSafe(|| hub.app().open(&request, &parts)));
        let app_state = match opened {
            Ok(Ok(app_state)) => app_state,
            Ok(Err(error)) => return Reject::OpenRefused(error).respond(Some(&request.id), config),
            Err(panic) => {
                tracing::error!(panic = panic_message(&*panic), "App::open panicked");
                return Reject::HandlerFailed { in_session: false }
                    .respond(Some(&request.id), config);
            }
        };
        let entry = SessionEntry::new(
            app_state,
            hub.new_streams(),
            Principal::of(&parts).cloned(),
            version,
        );
        // Created with this request already in flight: it cannot idle out
        // before its handler has even started.
        let Ok(first) = hub.registry.insert_in_flight(entry) else {
            return Reject::AtCapacity.respond(Some(&request.id), config);
        };
        let id = first.id();
        // Its public part on the request's span: never the secret.
        observe::span::record_session(id);
        if hub.phase.is_shutting_down() {
            // Inserted while `shutdown` swept: end it ourselves.
            let _ = hub.registry.terminate_session(&first, Reason::Shutdown);
            return Reject::ShuttingDown.respond(None, config);
        }
        let request_id = request.id.clone();
        let outcome = super::run(hub, first, Message::Request(request), version, parts).await;
        let outcome = match outcome {
            Dispatched::Reply(Reply::Serialized(result)) => {
                // The answer written around the result's text, the version
                // first: nothing read into a tree.
                if let Some((message, tool_error)) = versioned(&request_id, &result, version) {
                    let mut response = body::answer_bytes(message, tool_error);
                    show_id(&mut response, &id);
                    return response;
                }
                Dispatched::Reply(Reply::Serialized(result).into_tree())
            }
            other => other,
        };
        let outcome = match outcome {
            Dispatched::Reply(Reply::Result(mut result)) => {
                if let Value::Object(result) = &mut result {
                    result.insert("protocolVersion".into(), version.into());
                }
                Dispatched::Reply(Reply::Result(result))
            }
            Dispatched::Reply(Reply::Error(error)) => {
                // The application rejected the first request: the session
                // ends, and its id is never shown.
                let _ = hub.registry.terminate(&id, Reason::Rejected);
                return Reject::OpenRefused(error).respond(Some(&request_id), config);
            }
            Dispatched::Reply(_) => {
                // Not an answer to `initialize` (nothing, a task, ...).
                let _ = hub.registry.terminate(&id, Reason::Rejected);
                return Reject::HandlerFailed { in_session: true }
                    .respond(Some(&request_id), config);
            }
            Dispatched::Stopped(_) => {
                // Ended under it, or timed out: either way no session.
                let _ = hub.registry.terminate(&id, Reason::Rejected);
                outcome
            }
            // A failure ended the session already; a stream carries the answer.
            Dispatched::Failed | Dispatched::Streaming(_) | Dispatched::Lost => outcome,
        };
        let showed_id = matches!(outcome, Dispatched::Reply(_) | Dispatched::Streaming(_));
        let mut response = respond(outcome, Some(&request_id), &hub.sse, config);
        if showed_id {
            show_id(&mut response, &id);
        }
        response
    }
}

/// Gives the client the new session's id (`MCP-Session-Id`).
fn show_id(response: &mut Response<Body>, id: &crate::SessionId) {
    let mut text = [0u8; crate::SessionId::TEXT_LEN];
    let value = HeaderValue::from_str(id.encode(&mut text)).expect("session ids are visible ASCII");
    response
        .headers_mut()
        .insert(headers::name::SESSION_ID, value);
}

/// The answer to `initialize` request `id`, `result` (an object's text)
/// with `protocolVersion: version` as its first member, and whether it is a
/// tool's failure (as any answer is marked); `None` where the result's own
/// text cannot simply follow the version: not an object, or with a
/// top-level `protocolVersion` ([`TopLevel`]), which the tree path
/// replaces.
fn versioned(id: &Value, result: &RawValue, version: &str) -> Option<(Bytes, bool)> {
    let inner = result.get().strip_prefix('{')?.strip_suffix('}')?;
    let top = TopLevel::of(result)?;
    if top.names_protocol_version {
        return None;
    }
    let message = jsonrpc::written(|out| {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut *out, id)?;
        out.extend_from_slice(br#","result":{"protocolVersion":"#);
        serde_json::to_writer(&mut *out, version)?;
        if !inner.trim_ascii().is_empty() {
            out.push(b',');
            out.extend_from_slice(inner.as_bytes());
        }
        out.extend_from_slice(b"}}");
        Ok(())
    });
    (!message.is_empty()).then_some((message, top.tool_error))
}

/// What an `initialize` request's params say to the layer, read in one
/// pass (the rest walked over, not built): the version the session is
/// served at, and whether they carry 2026-07-28's per-request `_meta`.
#[derive(Debug, PartialEq)]
pub(super) struct Asked {
    /// The negotiated version ([`protocol::negotiate`]), or why there is
    /// none: a session is made only for params with the protocol version
    /// the client asks for (any string: an unknown one is negotiated
    /// down).
    pub(super) version: Result<&'static str, RpcError>,
    /// `_meta` names `io.modelcontextprotocol/protocolVersion`: a
    /// 2026-07-28 request, whatever its method (see `post.rs`).
    pub(super) modern_meta: bool,
}

impl Asked {
    pub(super) fn of(request: &Request) -> Asked {
        #[derive(serde::Deserialize)]
        struct Initialize<'a> {
            #[serde(borrow, rename = "protocolVersion", default)]
            #[serde(deserialize_with = "jsonrpc::present")]
            version: Option<&'a RawValue>,
            #[serde(rename = "_meta", default)]
            meta: Option<VersionMeta>,
        }
        let read = request
            .params_borrowed::<Option<Initialize<'_>>>()
            .ok()
            .flatten();
        let version = read
            .as_ref()
            .and_then(|params| params.version)
            .and_then(jsonrpc::string_text)
            .map(|requested| protocol::negotiate(Some(&requested)))
            .ok_or_else(|| {
                RpcError::invalid_params("initialize needs params.protocolVersion (a string)")
            });
        let modern_meta = read.is_some_and(|params| VersionMeta::names_it(params.meta));
        Asked {
            version,
            modern_meta,
        }
    }

    /// The version an `initialize`'s span and timer are at: the one it
    /// negotiates, else the latest.
    pub(super) fn served_at(&self) -> &'static str {
        self.version
            .clone()
            .unwrap_or_else(|_| protocol::negotiate(None))
    }
}

/// What a legacy request's `params._meta` is read for: whether it names
/// 2026-07-28's `io.modelcontextprotocol/protocolVersion` (the rest
/// skipped, not built).
#[derive(serde::Deserialize)]
pub(super) struct VersionMeta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    version: Option<serde::de::IgnoredAny>,
}

impl VersionMeta {
    /// Whether `meta` (a `_meta` read, or none) names the version.
    pub(super) fn names_it(meta: Option<VersionMeta>) -> bool {
        meta.is_some_and(|meta| meta.version.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    fn asked(params: Value) -> Asked {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params });
        match Message::from_slice(body.to_string().as_bytes()).unwrap() {
            Message::Request(request) => Asked::of(&request),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_params_read_once() {
        let version = |v: Result<&'static str, RpcError>| v.map_err(|e| e.code);
        let a = asked(json!({ "protocolVersion": "2025-06-18", "capabilities": { "a": {} } }));
        assert_eq!(
            (version(a.version), a.modern_meta),
            (Ok("2025-06-18"), false)
        );
        // An unknown version is negotiated down; an escaped one read as text.
        let a = asked(json!({ "protocolVersion": "1999-01-01" }));
        assert_eq!(version(a.version), Ok(protocol::negotiate(None)));
        let a = asked(serde_json::from_str(r#"{"protocolVersion":"2025-06-1\u0038"}"#).unwrap());
        assert_eq!(version(a.version), Ok("2025-06-18"));
        for bad in [
            json!({}),
            json!({ "protocolVersion": 7 }),
            json!({ "protocolVersion": null }),
            json!([]),
        ] {
            let a = asked(bad.clone());
            assert_eq!(a.served_at(), protocol::negotiate(None));
            assert_eq!(version(a.version), Err(RpcError::INVALID_PARAMS), "{bad}");
        }
        let a = asked(json!({
            "protocolVersion": "2025-11-25",
            "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" },
        }));
        assert_eq!(
            (version(a.version), a.modern_meta),
            (Ok("2025-11-25"), true)
        );
        let a = asked(json!({ "protocolVersion": "2025-11-25", "_meta": { "progressToken": 1 } }));
        assert!(!a.modern_meta);
    }

    /// The written answer says what the tree path's does.
    #[test]
    fn the_version_goes_first_and_the_result_follows_as_written() {
        let written = |text: &str| versioned(&json!(7), &raw(text), "2025-11-25");
        let (message, tool_error) =
            written(r#"{"capabilities":{"tools":{}}, "serverInfo":{"name":"x"}}"#).unwrap();
        assert_eq!(
            std::str::from_utf8(&message).unwrap(),
            r#"{"jsonrpc":"2.0","id":7,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}, "serverInfo":{"name":"x"}}}"#
        );
        assert!(!tool_error);
        let (message, _) = written("{ }").unwrap();
        let tree: Value = serde_json::from_slice(&message).unwrap();
        assert_eq!(
            tree,
            json!({ "jsonrpc": "2.0", "id": 7, "result": { "protocolVersion": "2025-11-25" } })
        );
        // A string that only says the name, or an escape, is text like any.
        for plain in [r#"{"note":"protocolVersion"}"#, r#"{"a\u0062":1}"#] {
            let (message, _) = written(plain).unwrap();
            let tree: Value = serde_json::from_slice(&message).unwrap();
            assert_eq!(tree["result"]["protocolVersion"], "2025-11-25", "{plain}");
        }
        // Whatever names the version, escaped or not, and what is not an
        // object, is left to the tree path.
        for other in [
            r#"{"protocolVersion":"1999-01-01"}"#,
            r#"{"protocol\u0056ersion":"1999-01-01"}"#,
            "[1]",
            "null",
        ] {
            assert!(written(other).is_none(), "{other}");
        }
    }
}

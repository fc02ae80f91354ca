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
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Opens a session for a valid `initialize` and answers it.
pub(super) async fn open<A: App>(
    hub: &Arc<Hub<A>>,
    request: Request,
    parts: Parts,
) -> Response<Body> {
    let config = &hub.config;
    let version = match requested_version(&request) {
        Ok(requested) => protocol::negotiate(Some(&requested)),
        Err(error) => return Reject::Malformed(error).respond(Some(&request.id), config),
    };
    if hub.phase.is_shutting_down() {
        return Reject::ShuttingDown.respond(None, config);
    }
    if hub.phase.is_draining() {
        return Reject::Draining.respond(Some(&request.id), config);
    }
    let opened = std::panic::catch_unwind(AssertUnwindSafe(|| hub.app().open(&request, &parts)));
    let app_state = match opened {
        Ok(Ok(app_state)) => app_state,
        Ok(Err(error)) => return Reject::OpenRefused(error).respond(Some(&request.id), config),
        Err(panic) => {
            tracing::error!(panic = panic_message(&*panic), "App::open panicked");
            return Reject::HandlerFailed { in_session: false }.respond(Some(&request.id), config);
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
            return Reject::HandlerFailed { in_session: true }.respond(Some(&request_id), config);
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
/// text cannot simply follow the version: not an object, a top-level
/// `protocolVersion` (or a string that may name it: [`TopLevel`]), which the
/// tree path replaces.
fn versioned(id: &Value, result: &RawValue, version: &str) -> Option<(Bytes, bool)> {
    let inner = result.get().strip_prefix('{')?.strip_suffix('}')?;
    let top = TopLevel::of_members(inner.as_bytes())?;
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

/// The shape an `initialize` request must have before a session is made
/// for it: params with the protocol version the client asks for (any
/// string: an unknown one is negotiated down, see [`protocol::negotiate`]).
pub(super) fn requested_version(request: &Request) -> Result<String, RpcError> {
    /// Only the member checked here is read out of the raw params; the rest
    /// is walked over, not built.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Initialize {
        protocol_version: String,
    }
    match request.params_as::<Initialize>() {
        Ok(params) => Ok(params.protocol_version),
        Err(_) => Err(RpcError::invalid_params(
            "initialize needs params.protocolVersion (a string)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
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
        // Whatever names (or might name) the version, and what is not an
        // object, is left to the tree path.
        for other in [
            r#"{"protocolVersion":"1999-01-01"}"#,
            r#"{"note":"protocolVersion"}"#,
            r#"{"a\u0062":1}"#,
            "[1]",
            "null",
        ] {
            assert!(written(other).is_none(), "{other}");
        }
    }
}

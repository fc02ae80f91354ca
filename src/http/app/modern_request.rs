//! What a handler knows of a 2026-07-28 request ([`ModernRequest`], from
//! [`Context::era`](super::Context::era)): the client's capabilities and log
//! level as this request declares them, its progress token, and on a retry
//! of a multi-round-trip request the client's input responses and the
//! application's own state, verified; and how it answers that more input
//! is required.

use crate::http::input::{self, InputRequests, InputRequired};
use crate::http::observe;
use crate::http::wire::jsonrpc::{self, RpcError};
use crate::http::wire::meta::{LogLevel, META_CAPABILITIES};
use crate::http::wire::method_name;
use serde_json::{json, Map, Value};

/// A 2026-07-28 request, as its handler sees it.
#[derive(Debug, Clone)]
pub struct ModernRequest {
    pub(crate) method: std::borrow::Cow<'static, str>,
    pub(crate) capabilities: Value,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) input_responses: Option<Map<String, Value>>,
    pub(crate) request_state: Option<Vec<u8>>,
}

impl ModernRequest {
    /// What a notification carries (its `_meta`, if it has one).
    pub(crate) fn of_notification(message: &jsonrpc::Message) -> ModernRequest {
        let (method, params) = match message {
            jsonrpc::Message::Notification(note) => (
                note.method.as_str(),
                note.params_value().unwrap_or(Value::Null),
            ),
            _ => ("", Value::Null),
        };
        let capabilities = match &params["_meta"][META_CAPABILITIES] {
            Value::Object(_) => params["_meta"][META_CAPABILITIES].clone(),
            _ => json!({}),
        };
        ModernRequest {
            method: method_name::kept(method),
            capabilities,
            log_level: None,
            progress_token: None,
            input_responses: None,
            request_state: None,
        }
    }

    /// The client's capabilities, as this request declares them (each
    /// request declares its own; nothing carries over from another).
    pub fn client_capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// Whether this request declares the client capability at `path`
    /// (`"sampling"`, `"elicitation"`, `"roots"`, `"elicitation.url"`...).
    /// `elicitation: {}` declares form mode: `"elicitation.form"` is then
    /// declared too.
    pub fn declares(&self, path: &str) -> bool {
        if path == "elicitation.form" && self.declares("elicitation") {
            let elicitation = &self.capabilities["elicitation"];
            let explicit = elicitation.get("form").is_some() || elicitation.get("url").is_some();
            return !explicit || elicitation.get("form").is_some();
        }
        let mut at = &self.capabilities;
        for part in path.split('.') {
            match at.get(part) {
                Some(next) if next.is_object() => at = next,
                _ => return false,
            }
        }
        true
    }

    /// Whether this request declares extension `id` (under
    /// `clientCapabilities.extensions`).
    pub fn declares_extension(&self, id: &str) -> bool {
        self.capabilities["extensions"]
            .get(id)
            .is_some_and(Value::is_object)
    }

    /// The log level the client asked for on this request; `None`: it
    /// wants no log messages, and the layer drops any a handler sends.
    pub fn log_level(&self) -> Option<LogLevel> {
        self.log_level
    }

    /// Whether a log message at `level` would reach the client.
    pub fn logs(&self, level: LogLevel) -> bool {
        self.log_level.is_some_and(|min| level >= min)
    }

    /// The request's progress token, if it asked for progress.
    pub fn progress_token(&self) -> Option<&Value> {
        self.progress_token.as_ref()
    }

    /// On a retry, the client's answers to the input requests (by key);
    /// `None` on a first round.
    pub fn input_responses(&self) -> Option<&Map<String, Value>> {
        self.input_responses.as_ref()
    }

    /// The client's answer to input request `key`, if it gave one.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.input_responses.as_ref()?.get(key)
    }

    /// On a retry, the state the application sealed into the previous
    /// answer ([`InputRequests::request_state`]), verified: its integrity, its
    /// expiry, and that it was sealed for this principal and this request.
    pub fn request_state(&self) -> Option<&[u8]> {
        self.request_state.as_deref()
    }

    /// Answers that more input is required: `requests` go to the client,
    /// which retries with its answers. Refused (an error to answer instead)
    /// on a method that may not ask for input (only `tools/call`,
    /// `prompts/get` and `resources/read` may), or when it asks for nothing
    /// at all. Requests of a kind the client did not declare on this request
    /// are left out (servers must not send them); if that leaves none and
    /// no state, the answer is the spec's `-32021` naming what was missing.
    ///
    /// Answer the returned value as [`Reply::InputRequired`](crate::http::Reply::InputRequired).
    pub fn input_required(&self, mut requests: InputRequests) -> Result<InputRequired, RpcError> {
        // Each carries the request's span as its parent (feature `otel`).
        requests.each_request(observe::stamp);
        input::ask(&self.method, |path| self.declares(path), requests)
    }
}

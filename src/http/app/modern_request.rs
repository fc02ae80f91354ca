//! What a handler knows of a 2026-07-28 request ([`ModernRequest`], from
//! [`Context::era`](super::Context::era)): the client's capabilities and log
//! level as this request declares them, its progress token, and on a retry
//! of a multi-round-trip request the client's input responses and the
//! application's own state, verified; and how it answers that more input
//! is required.

use crate::http::input::{self, InputRequests, InputRequired};
use crate::http::observe;
use crate::http::wire::jsonrpc::{self, Params, RpcError};
use crate::http::wire::meta::{LogLevel, META_CAPABILITIES};
use crate::http::wire::method_name;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::ops::Range;

/// A 2026-07-28 request, as its handler sees it.
#[derive(Debug, Clone)]
pub struct ModernRequest {
    pub(crate) method: std::borrow::Cow<'static, str>,
    pub(crate) capabilities: Value,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) input_responses: Option<Map<String, Value>>,
    pub(crate) request_state: Option<Vec<u8>>,
    /// A `tools/call`'s or `prompts/get`'s `name` and `arguments`, where
    /// the layer read them.
    pub(crate) call: Option<CallText>,
}

/// Where a call's `name` and `arguments` are in its params' text, which
/// it shares with the request (a [`Params`] clone, no copy), so the
/// handler's view costs no pass over them.
#[derive(Debug, Clone)]
pub(crate) struct CallText {
    params: Params,
    name: Option<Range<usize>>,
    arguments: Option<Range<usize>>,
}

impl CallText {
    /// The view of `params`, where `name` and `arguments` are members read
    /// out of `params` itself (borrowed from its text); `None` if `params`
    /// is not an object or either member is not in it.
    pub(crate) fn new(
        params: &Params,
        name: Option<&str>,
        arguments: Option<&str>,
    ) -> Option<CallText> {
        let text = params.get();
        if !text.starts_with('{') {
            return None;
        }
        let base = text.as_ptr() as usize;
        let range = |member: &str| {
            let start = (member.as_ptr() as usize).checked_sub(base)?;
            let end = start + member.len();
            (end <= text.len()).then_some(start..end)
        };
        let name = match name {
            Some(member) => Some(range(member)?),
            None => None,
        };
        let arguments = match arguments {
            Some(member) => Some(range(member)?),
            None => None,
        };
        Some(CallText {
            params: params.clone(),
            name,
            arguments,
        })
    }

    /// The member at `range`, as raw JSON (a scan of that member alone).
    fn member(&self, range: &Option<Range<usize>>) -> Option<&RawValue> {
        let text = self.params.get().get(range.clone()?)?;
        serde_json::from_str::<&RawValue>(text)
            .ok()
            .filter(|raw| raw.get() != "null")
    }
}

/// A `tools/call`'s or `prompts/get`'s `name` and `arguments` as the layer
/// read them out of the params ([`ModernRequest::call`]).
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// `params.name`, the string's text; `None` if absent or not a string.
    pub name: Option<Cow<'a, str>>,
    /// `params.arguments` as the client wrote it; `None` if absent or
    /// `null`.
    pub arguments: Option<&'a RawValue>,
}

impl ModernRequest {
    /// A `tools/call`'s or `prompts/get`'s `name` and `arguments`, as the
    /// layer read them out of the params (it checks the name against
    /// `Mcp-Name`): a handler reads them here instead of parsing the params
    /// again (with the client's `_meta` in them, most of their text).
    /// `None` for another method, or params that are not an object (the
    /// handler's own parse then says what it makes of them).
    ///
    /// ```
    /// use serde_json::value::RawValue;
    /// use sessionreg::http::{Context, ModernRequest};
    ///
    /// fn tool<S: Send + Sync + 'static>(ctx: &Context<S>) -> Option<(String, Option<String>)> {
    ///     let call = ctx.modern().and_then(ModernRequest::call)?;
    ///     Some((call.name?.into_owned(), call.arguments.map(|a| a.get().to_owned())))
    /// }
    /// ```
    pub fn call(&self) -> Option<Call<'_>> {
        let call = self.call.as_ref()?;
        Some(Call {
            name: call.member(&call.name).and_then(jsonrpc::string_text),
            arguments: call.member(&call.arguments),
        })
    }

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
            call: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The members a call's view reads, borrowed from `params` as the
    /// layer's own pass borrows them.
    #[derive(serde::Deserialize)]
    struct Members<'a> {
        #[serde(borrow, default, deserialize_with = "jsonrpc::present")]
        name: Option<&'a RawValue>,
        #[serde(borrow, default, deserialize_with = "jsonrpc::present")]
        arguments: Option<&'a RawValue>,
    }

    fn request_with(params: &str) -> Option<ModernRequest> {
        let params = Params::new(params).unwrap();
        let members: Members<'_> = serde_json::from_str(params.get()).unwrap();
        let call = CallText::new(
            &params,
            members.name.map(RawValue::get),
            members.arguments.map(RawValue::get),
        )?;
        let mut request = ModernRequest::of_notification(
            &jsonrpc::Message::from_slice(br#"{"jsonrpc":"2.0","method":"x"}"#).unwrap(),
        );
        request.call = Some(call);
        Some(request)
    }

    #[test]
    fn a_call_read_where_the_layer_read_it() {
        let request =
            request_with(r#"{"name":"echo", "arguments" : {"text":"hi"},"_meta":{"a":{"b":[1]}}}"#)
                .unwrap();
        let call = request.call().unwrap();
        assert_eq!(call.name.as_deref(), Some("echo"));
        assert_eq!(call.arguments.map(RawValue::get), Some(r#"{"text":"hi"}"#));
        // Escapes read as text; null, absent or not a string: none.
        let request = request_with(r#"{"_meta":{},"name":"ec\u0068o","arguments":null}"#).unwrap();
        let call = request.call().unwrap();
        assert_eq!(
            (call.name.as_deref(), call.arguments.is_none()),
            (Some("echo"), true)
        );
        let request = request_with(r#"{"name":7}"#).unwrap();
        let call = request.call().unwrap();
        assert_eq!((call.name, call.arguments.is_none()), (None, true));
    }

    #[test]
    fn no_view_of_other_text() {
        let params = Params::new(r#"{"name":"a"}"#).unwrap();
        let other = Params::new(r#"{"name":"b"}"#).unwrap();
        let name = |raw: &Params| -> Box<RawValue> {
            let members: Members<'_> = serde_json::from_str(raw.get()).unwrap();
            members.name.unwrap().to_owned()
        };
        // A member that is not in the params (a copy of one that is, the
        // member of other params), params that are not an object: no view.
        let outside = name(&other);
        assert!(CallText::new(&params, Some(outside.get()), None).is_none());
        let copied = name(&params);
        assert!(CallText::new(&params, Some(copied.get()), None).is_none());
        let array = Params::new(r#"["a"]"#).unwrap();
        assert!(CallText::new(&array, None, None).is_none());
        // Any other request has none.
        let plain = ModernRequest::of_notification(
            &jsonrpc::Message::from_slice(br#"{"jsonrpc":"2.0","method":"x"}"#).unwrap(),
        );
        assert!(plain.call().is_none());
    }
}

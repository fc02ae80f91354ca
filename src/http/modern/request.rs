//! What a handler knows of a 2026-07-28 request ([`Modern`], from
//! [`Context::modern`](crate::http::Context::modern)): the client's
//! capabilities and log level as this request declares them, its progress
//! token, and on a retry of a multi-round-trip request the client's input
//! responses and the application's own state, verified; and how it answers
//! that more input is required ([`InputRequests`]).

use crate::http::jsonrpc::{self, RpcError};
use serde_json::{json, Map, Value};

/// The `_meta` key of a request's protocol version.
pub(crate) const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of a request's client capabilities.
pub(crate) const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of a result's server identity.
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// `MissingRequiredClientCapabilityError` (2026-07-28, `-32021`): the
/// request needs a capability the client did not declare on it.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;

/// The methods that may answer `input_required` (the MRTR page: "Servers
/// MUST NOT send InputRequiredResult responses on any other client
/// requests").
pub(crate) const INPUT_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// The levels of `notifications/message`, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    /// The level a wire name names.
    pub fn named(name: &str) -> Option<LogLevel> {
        Some(match name {
            "debug" => LogLevel::Debug,
            "info" => LogLevel::Info,
            "notice" => LogLevel::Notice,
            "warning" => LogLevel::Warning,
            "error" => LogLevel::Error,
            "critical" => LogLevel::Critical,
            "alert" => LogLevel::Alert,
            "emergency" => LogLevel::Emergency,
            _ => return None,
        })
    }
}

/// A 2026-07-28 request, as its handler sees it.
#[derive(Debug, Clone)]
pub struct Modern {
    pub(crate) method: Box<str>,
    pub(crate) capabilities: Value,
    pub(crate) log_level: Option<LogLevel>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) input_responses: Option<Map<String, Value>>,
    pub(crate) state: Option<Vec<u8>>,
}

impl Modern {
    /// What a notification carries (its `_meta`, if it has one).
    pub(crate) fn of_notification(message: &jsonrpc::Message) -> Modern {
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
        Modern {
            method: method.into(),
            capabilities,
            log_level: None,
            progress_token: None,
            input_responses: None,
            state: None,
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
    /// answer ([`InputRequests::state`]), verified: its integrity, its
    /// expiry, and that it was sealed for this principal and this request.
    pub fn state(&self) -> Option<&[u8]> {
        self.state.as_deref()
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
    pub fn input_required(&self, requests: InputRequests) -> Result<InputRequired, RpcError> {
        if !INPUT_METHODS.contains(&&*self.method) {
            return Err(RpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!("{} cannot ask for input", self.method),
            ));
        }
        let mut kept = Map::new();
        let mut missing = Map::new();
        for (key, request) in requests.requests {
            match required_capability(&request) {
                Some(capability) if !self.declares(capability) => {
                    set_path(&mut missing, capability);
                }
                _ => {
                    kept.insert(key, request);
                }
            }
        }
        if kept.is_empty() && requests.state.is_none() {
            if missing.is_empty() {
                return Err(RpcError::new(
                    jsonrpc::INTERNAL_ERROR,
                    "an input_required answer needs input requests or a state",
                ));
            }
            return Err(missing_capability(Value::Object(missing)));
        }
        Ok(InputRequired(Box::new(Asked {
            requests: kept,
            state: requests.state,
            single_use: requests.single_use,
        })))
    }
}

/// The `-32021` error for `required` (a `ClientCapabilities` object, e.g.
/// `{"sampling": {}}`): answered 400.
pub fn missing_capability(required: Value) -> RpcError {
    let mut error = RpcError::new(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
    );
    error.data = Some(json!({ "requiredCapabilities": required }));
    error
}

/// The capability an input request needs, as a path.
fn required_capability(request: &Value) -> Option<&'static str> {
    match request["method"].as_str()? {
        "elicitation/create" => Some(match request["params"]["mode"].as_str() {
            Some("url") => "elicitation.url",
            _ => "elicitation.form",
        }),
        "sampling/createMessage" => Some(if request["params"].get("tools").is_some() {
            "sampling.tools"
        } else {
            "sampling"
        }),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// Sets `path` (`a.b`) to `{}` in `map`.
fn set_path(map: &mut Map<String, Value>, path: &str) {
    let mut at = map;
    for part in path.split('.') {
        at = at
            .entry(part)
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .expect("built of objects");
    }
}

/// What a handler asks the client for: input requests under keys of its
/// choosing, and state of its own to get back, sealed, on the retry.
///
/// ```
/// use serde_json::json;
/// use sessionreg::http::modern::InputRequests;
///
/// let ask = InputRequests::new()
///     .elicit("user_name", "What is your name?", json!({
///         "type": "object",
///         "properties": { "name": { "type": "string" } },
///         "required": ["name"],
///     }))
///     .state(b"round 1".to_vec());
/// # let _ = ask;
/// ```
#[derive(Debug, Clone, Default)]
pub struct InputRequests {
    requests: Map<String, Value>,
    state: Option<Vec<u8>>,
    single_use: bool,
}

impl InputRequests {
    /// Nothing asked yet.
    pub fn new() -> InputRequests {
        InputRequests::default()
    }

    /// An input request of any kind: `method` and its `params`.
    pub fn request(mut self, key: impl Into<String>, method: &str, params: Value) -> Self {
        self.requests
            .insert(key.into(), json!({ "method": method, "params": params }));
        self
    }

    /// A form elicitation (`elicitation/create`, mode `form`).
    pub fn elicit(self, key: impl Into<String>, message: &str, requested_schema: Value) -> Self {
        self.request(
            key,
            "elicitation/create",
            json!({ "mode": "form", "message": message, "requestedSchema": requested_schema }),
        )
    }

    /// A sampling request (`sampling/createMessage`) with these params.
    pub fn sample(self, key: impl Into<String>, params: Value) -> Self {
        self.request(key, "sampling/createMessage", params)
    }

    /// A `roots/list` request.
    pub fn list_roots(self, key: impl Into<String>) -> Self {
        self.request(key, "roots/list", json!({}))
    }

    /// State of the application's own, given back on the retry
    /// ([`Modern::state`]), sealed: the client can neither read nor change
    /// it, and it opens only for this principal and this request, before
    /// its expiry.
    pub fn state(mut self, state: Vec<u8>) -> Self {
        self.state = Some(state);
        self
    }

    /// The requests alone, by key (a task asks with them: it has no state
    /// to seal).
    pub(crate) fn into_requests(self) -> Map<String, Value> {
        self.requests
    }

    /// The state opens once only: a second retry with it is refused (the
    /// server keeps a record of it until it is used or expires).
    pub fn single_use(mut self) -> Self {
        self.single_use = true;
        self
    }
}

/// An `input_required` answer, made by [`Modern::input_required`] (so only
/// for a modern request that may ask for input); the layer seals its state
/// and sends it.
#[derive(Debug, Clone)]
pub struct InputRequired(pub(crate) Box<Asked>);

#[derive(Debug, Clone)]
pub(crate) struct Asked {
    pub(crate) requests: Map<String, Value>,
    pub(crate) state: Option<Vec<u8>>,
    pub(crate) single_use: bool,
}

/// Checks `inputResponses` as a retry carries it: an object whose every
/// answer is an object; anything else is `-32602` (the MRTR page: protocol
/// errors such as an invalid schema get a JSON-RPC error).
pub(crate) fn input_responses(value: Value) -> Result<Map<String, Value>, RpcError> {
    match value {
        Value::Object(map) if map.values().all(Value::is_object) => Ok(map),
        _ => Err(RpcError::invalid_params(
            "inputResponses must be an object of input responses (objects)",
        )),
    }
}

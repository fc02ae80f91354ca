//! What a handler asks the client for ([`InputRequests`]), the answer that
//! says more input is required ([`InputRequired`]), the methods that may
//! ask, and the reading of the input responses a retry brings back.

use crate::http::wire::jsonrpc::{self, RpcError};
use serde_json::{json, Map, Value};

/// The methods that may answer `input_required` (the MRTR page: "Servers
/// MUST NOT send InputRequiredResult responses on any other client
/// requests").
pub(crate) const INPUT_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// The answer that more input is required, for a request of `method` that
/// declares the client capabilities `declares` says it does: `requests` go to the client,
/// which retries with its answers. Refused (an error to answer instead)
/// on a method that may not ask for input (only `tools/call`,
/// `prompts/get` and `resources/read` may), or when it asks for nothing
/// at all. Requests of a kind the client did not declare on this request
/// are left out (servers must not send them); if that leaves none and
/// no state, the answer is the spec's `-32021` naming what was missing.
///
/// Answer the returned value as [`Reply::InputRequired`](crate::http::Reply::InputRequired).
pub(crate) fn ask(
    method: &str,
    declares: impl Fn(&str) -> bool,
    requests: InputRequests,
) -> Result<InputRequired, RpcError> {
    if !INPUT_METHODS.contains(&method) {
        return Err(RpcError::new(
            jsonrpc::RpcError::INTERNAL_ERROR,
            format!("{} cannot ask for input", method),
        ));
    }
    let mut kept = Map::new();
    let mut missing = Map::new();
    for (key, request) in requests.requests {
        match required_capability(&request) {
            Some(capability) if !declares(capability) => {
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
                jsonrpc::RpcError::INTERNAL_ERROR,
                "an input_required answer needs input requests or a state",
            ));
        }
        return Err(RpcError::missing_capability(Value::Object(missing)));
    }
    Ok(InputRequired(Box::new(Asked {
        requests: kept,
        state: requests.state,
        single_use: requests.single_use,
    })))
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
///     .request_state(b"round 1".to_vec());
/// # let _ = ask;
/// ```
#[derive(Debug, Clone, Default)]
pub struct InputRequests {
    requests: Map<String, Value>,
    state: Option<Vec<u8>>,
    single_use: bool,
}

impl InputRequests {
    /// Runs `f` on each input request (`{ "method", "params" }`).
    pub(crate) fn each_request(&mut self, f: impl FnMut(&mut Value)) {
        self.requests.values_mut().for_each(f);
    }

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
    /// ([`ModernRequest::request_state`](crate::http::ModernRequest::request_state)), sealed: the client can neither read nor change
    /// it, and it opens only for this principal and this request, before
    /// its expiry.
    pub fn request_state(mut self, state: Vec<u8>) -> Self {
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

/// An `input_required` answer, made by [`ModernRequest::input_required`](crate::http::ModernRequest::input_required) (so only
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

//! JSON-RPC 2.0 messages as MCP sends them over HTTP: parsing one message out
//! of a request body (without building it as a `Value` tree: params stay
//! raw JSON until the application asks), and writing responses and error
//! bodies.

use bytes::Bytes;
use serde::de::{DeserializeOwned, Deserializer};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::fmt;

pub use super::method_name::MethodName;
pub use super::params::Params;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The error code (see the `RpcError::*` constants).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional extra information.
    pub data: Option<Value>,
}

impl RpcError {
    /// Invalid JSON was received (`-32700`).
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid JSON-RPC message (`-32600`).
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist (`-32601`).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters (`-32602`).
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal JSON-RPC error (`-32603`).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A transport-level refusal with no better code (`-32000`): missing session
    /// id, capacity, shutdown, forbidden origin, ...
    pub const SERVER_ERROR: i64 = -32000;
    /// The session named by `MCP-Session-Id` does not exist (any more) (`-32001`).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// `HeaderMismatch` (2026-07-28, `-32020`): the request's `Mcp-Method`,
    /// `Mcp-Name` or `MCP-Protocol-Version` header is missing, malformed, or
    /// disagrees with its body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// `MissingRequiredClientCapabilityError` (2026-07-28, `-32021`): the
    /// request needs a capability the client did not declare on it.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// `UnsupportedProtocolVersionError` (2026-07-28, `-32022`): the request's
    /// protocol version is not served; `data` lists the supported ones.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

    /// An error with `code` and `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32021`, the request needs the client capabilities `required` (a
    /// `ClientCapabilities` object, e.g. `{"sampling": {}}`), which it did
    /// not declare: answered 400 at 2026-07-28.
    pub fn missing_capability(required: Value) -> RpcError {
        let mut error = RpcError::new(
            RpcError::MISSING_REQUIRED_CLIENT_CAPABILITY,
            "Missing required client capability",
        );
        error.data = Some(json!({ "requiredCapabilities": required }));
        error
    }

    /// `-32601 Method not found`, naming the method.
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(
            RpcError::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    /// `-32602 Invalid params`.
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(RpcError::INVALID_PARAMS, message)
    }

    /// The error as a JSON object.
    pub fn to_value(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), self.code.into());
        error.insert("message".into(), self.message.clone().into());
        if let Some(data) = &self.data {
            error.insert("data".into(), data.clone());
        }
        Value::Object(error)
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for RpcError {}

/// A request from the client: it has an id and expects one response.
///
/// Its `params` stay the JSON text the client sent until the application
/// asks for them ([`params_as`](Request::params_as) for a type of its own,
/// [`params_value`](Request::params_value) for a [`Value`]), so a request
/// held by a handler costs about its body's size, never the many times
/// more a parsed `Value` tree of a large body would.
///
/// ```
/// use serde::Deserialize;
/// use sessionreg::http::jsonrpc::Message;
///
/// #[derive(Deserialize)]
/// struct Call {
///     name: String,
/// }
///
/// let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#;
/// let Ok(Message::Request(request)) = Message::from_slice(body) else { panic!() };
/// assert_eq!(request.params_text(), Some(r#"{"name":"echo"}"#));
/// assert_eq!(request.params_as::<Call>().unwrap().name, "echo");
/// assert_eq!(request.params_value().unwrap()["name"], "echo");
/// ```
#[derive(Debug, Clone)]
pub struct Request {
    /// The request id (a string or a number), echoed in the response.
    pub id: Value,
    /// The method, e.g. `tools/call`.
    pub method: MethodName,
    /// The parameters as sent (an object or an array), if any.
    pub params: Option<Params>,
}

/// A notification from the client: no id, no response.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method, e.g. `notifications/initialized`.
    pub method: MethodName,
    /// The parameters as sent (an object or an array), if any.
    pub params: Option<Params>,
}

/// A response from the client to a request the server sent it.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the server's request.
    pub id: Value,
    /// The result, or the error object, as sent (parse either with
    /// `serde_json::from_str(raw.get())`).
    pub outcome: Result<Box<RawValue>, Box<RawValue>>,
}

/// One JSON-RPC message received from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: the client waits for its response.
    Request(Request),
    /// A notification: answered `202 Accepted`.
    Notification(Notification),
    /// A response to a server-to-client request: answered `202 Accepted`.
    Response(Response),
}

/// Reads params as `T`; absent params read as JSON `null` (so an
/// `Option<_>` or a type with a `null` form accepts them).
fn parse_params<'a, T: Deserialize<'a>>(params: Option<&'a Params>) -> Result<T, RpcError> {
    serde_json::from_str(params.map_or("null", Params::get))
        .map_err(|error| RpcError::invalid_params(format!("invalid params: {error}")))
}

impl Request {
    /// The params' text as the client wrote it, if it sent any.
    pub fn params_text(&self) -> Option<&str> {
        self.params.as_ref().map(Params::get)
    }

    /// The params as a `T` of the application's; `-32602 Invalid params`
    /// if they do not fit it. Absent params read as `null`.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        parse_params(self.params.as_ref())
    }

    /// The params as a [`Value`] (`Value::Null` when absent). Fails only
    /// past serde_json's nesting limit (128 levels).
    pub fn params_value(&self) -> Result<Value, RpcError> {
        self.params_as()
    }

    /// The params as a `T` that borrows from their text (`&str` and
    /// `Cow<str>` members marked `#[serde(borrow)]`, `&RawValue`), so that
    /// reading them copies nothing; otherwise as [`Request::params_as`].
    ///
    /// ```
    /// use serde_json::value::RawValue;
    /// use sessionreg::http::jsonrpc::{Message, Request};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Call<'a> {
    ///     name: &'a str,
    ///     #[serde(borrow)]
    ///     arguments: Option<&'a RawValue>,
    /// }
    ///
    /// let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
    /// let Ok(Message::Request(request)) = Message::from_slice(body) else { panic!() };
    /// let call: Call<'_> = request.params_borrowed().unwrap();
    /// assert_eq!((call.name, call.arguments.map(RawValue::get)), ("echo", Some(r#"{"text":"hi"}"#)));
    /// ```
    pub fn params_borrowed<'a, T: Deserialize<'a>>(&'a self) -> Result<T, RpcError> {
        parse_params(self.params.as_ref())
    }
}

impl Notification {
    /// The params' text as the client wrote it, if it sent any.
    pub fn params_text(&self) -> Option<&str> {
        self.params.as_ref().map(Params::get)
    }

    /// The params as a `T` of the application's; `-32602 Invalid params`
    /// if they do not fit it. Absent params read as `null`.
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        parse_params(self.params.as_ref())
    }

    /// The params as a [`Value`] (`Value::Null` when absent). Fails only
    /// past serde_json's nesting limit (128 levels).
    pub fn params_value(&self) -> Result<Value, RpcError> {
        self.params_as()
    }
}

fn raw_eq(a: &RawValue, b: &RawValue) -> bool {
    a.get() == b.get()
}

/// Equal when the ids and methods are, and the params are the same text.
impl PartialEq for Request {
    fn eq(&self, other: &Request) -> bool {
        self.id == other.id && self.method == other.method && self.params == other.params
    }
}

/// Equal when the methods are, and the params are the same text.
impl PartialEq for Notification {
    fn eq(&self, other: &Notification) -> bool {
        self.method == other.method && self.params == other.params
    }
}

/// Equal when the ids are, and the outcomes are the same text.
impl PartialEq for Response {
    fn eq(&self, other: &Response) -> bool {
        self.id == other.id
            && match (&self.outcome, &other.outcome) {
                (Ok(a), Ok(b)) | (Err(a), Err(b)) => raw_eq(a, b),
                _ => false,
            }
    }
}

/// The members of a message, each still the raw text the client sent
/// (borrowed from the body: nothing is copied or parsed into a tree while
/// the shape is checked). Unknown members are skipped without being built.
#[derive(Deserialize)]
struct Shape<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// A member that is there is `Some`, even when it is `null` (serde's
/// `Option` would read `"id": null` as no id): for `deserialize_with` on
/// `Option<&RawValue>` members.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

fn invalid(message: &str) -> RpcError {
    RpcError::new(RpcError::INVALID_REQUEST, message)
}

/// The first byte of a JSON text after any whitespace.
pub(crate) fn first_token(text: &[u8]) -> Option<u8> {
    text.iter()
        .copied()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// Whether a raw JSON value begins with one of `bytes` (`{` for an object,
/// `"` for a string, ...).
pub(crate) fn starts_with(raw: &RawValue, bytes: &[u8]) -> bool {
    raw.get()
        .as_bytes()
        .first()
        .is_some_and(|b| bytes.contains(b))
}

/// A raw JSON string's text, borrowed unless it has escapes; `None` for
/// any other value. A string token without a backslash is its bytes
/// between the quotes (a `RawValue` is valid JSON), read without a parser.
/// With [`Request::params_borrowed`], a handler reads its strings without
/// a copy (serde borrows a `Cow<str>` member, not an `Option<Cow<str>>`).
///
/// ```
/// use serde_json::value::RawValue;
/// use sessionreg::http::jsonrpc::string_text;
/// use std::borrow::Cow;
///
/// let plain = RawValue::from_string(r#""echo""#.into()).unwrap();
/// assert!(matches!(string_text(&plain), Some(Cow::Borrowed("echo"))));
/// let escaped = RawValue::from_string(r#""ech\u006f""#.into()).unwrap();
/// assert!(matches!(string_text(&escaped), Some(Cow::Owned(_))));
/// assert_eq!(string_text(&escaped).as_deref(), Some("echo"));
/// let number = RawValue::from_string("3".into()).unwrap();
/// assert_eq!(string_text(&number), None);
/// ```
pub fn string_text(raw: &RawValue) -> Option<std::borrow::Cow<'_, str>> {
    text_of(raw.get())
}

/// [`string_text`] of a JSON value's text known to be valid (a
/// `RawValue`'s, or a member found in one).
pub(crate) fn text_of(text: &str) -> Option<std::borrow::Cow<'_, str>> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(std::borrow::Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text)
        .ok()
        .map(std::borrow::Cow::Owned)
}

impl Message {
    /// Reads one message out of a request body, or says why it is not a
    /// valid JSON-RPC 2.0 message: `-32700` for text that is not JSON,
    /// `-32600` for JSON of the wrong shape.
    ///
    /// Nothing is built before the message is known to be well formed: a
    /// batch (a top-level array: MCP 2025-06-18 removed them) is refused
    /// from its first byte; an object's members are checked as raw text
    /// borrowed from `body`; unknown members are skipped without being
    /// built. Only then are the id and method copied out, and the params
    /// (or a response's result or error) kept as raw JSON, so the message
    /// costs about the size of its body. Duplicate members are refused.
    pub fn from_slice(body: &[u8]) -> Result<Message, RpcError> {
        match first_token(body) {
            Some(b'{') => {}
            Some(b'[') => return Err(invalid("JSON-RPC batches are not supported")),
            _ => {
                // Not an object: tell bad JSON from JSON of the wrong kind,
                // walking it without building anything.
                return Err(
                    match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                        Ok(_) => invalid("message must be a JSON object"),
                        Err(error) => parse_error(&error),
                    },
                );
            }
        }
        // The body checked as UTF-8 once, in one pass over it, then read as
        // text: reading bytes, serde_json would check each string it meets
        // (and each raw member it keeps) again. Not UTF-8: read as bytes,
        // for the error that says where.
        let envelope: Result<Shape<'_>, _> = match std::str::from_utf8(body) {
            Ok(text) => serde_json::from_str(text),
            Err(_) => serde_json::from_slice(body),
        };
        let envelope = envelope.map_err(|error| {
            if error.is_data() {
                invalid(&format!("invalid message: {error}"))
            } else {
                parse_error(&error)
            }
        })?;
        if !envelope.jsonrpc.is_some_and(|v| is_version_2(v.get())) {
            return Err(invalid("jsonrpc must be \"2.0\""));
        }
        let id = envelope.id.map(request_id).transpose()?;
        let params = match envelope.params {
            None => None,
            Some(raw) => match Params::checked(raw) {
                Some(params) => Some(params),
                None => return Err(invalid("params must be an object or an array")),
            },
        };
        match envelope.method {
            Some(raw) if starts_with(raw, b"\"") => {
                // A string token, valid JSON: its text, unescaped only if
                // it has escapes.
                let method = match string_text(raw) {
                    Some(Cow::Borrowed(text)) => MethodName::new(text),
                    Some(Cow::Owned(text)) => MethodName::from(text),
                    None => return Err(invalid("method must be a string")),
                };
                Ok(match id {
                    Some(id) => Message::Request(Request { id, method, params }),
                    None => Message::Notification(Notification { method, params }),
                })
            }
            Some(_) => Err(invalid("method must be a string")),
            None => {
                let Some(id) = id else {
                    return Err(invalid("message has neither method nor id"));
                };
                match (envelope.result, envelope.error) {
                    (Some(result), None) => Ok(Message::Response(Response {
                        id,
                        outcome: Ok(result.to_owned()),
                    })),
                    (None, Some(error)) if starts_with(error, b"{") => {
                        Ok(Message::Response(Response {
                            id,
                            outcome: Err(error.to_owned()),
                        }))
                    }
                    _ => Err(invalid(
                        "a response needs exactly one of result and error (an object)",
                    )),
                }
            }
        }
    }

    /// The method of a request or a notification (a response has none).
    pub(crate) fn method(&self) -> Option<&str> {
        match self {
            Message::Request(request) => Some(&request.method),
            Message::Notification(note) => Some(&note.method),
            Message::Response(_) => None,
        }
    }

    /// The id a response to this message must carry: `None` for a
    /// notification or a response, which get no answer.
    pub fn request_id(&self) -> Option<Value> {
        match self {
            Message::Request(request) => Some(request.id.clone()),
            _ => None,
        }
    }

    /// Whether this is the `initialize` request.
    pub fn is_initialize(&self) -> bool {
        matches!(self, Message::Request(r) if r.method == "initialize")
    }
}

/// Whether a `jsonrpc` member's text (valid JSON) is the string `"2.0"`,
/// escaped or not.
pub(crate) fn is_version_2(text: &str) -> bool {
    text == "\"2.0\""
        || (text.starts_with('"') && serde_json::from_str::<String>(text).is_ok_and(|v| v == "2.0"))
}

/// A request id out of its raw text: a string or a number, nothing else.
pub(crate) fn request_id(raw: &RawValue) -> Result<Value, RpcError> {
    request_id_of(raw.get())
}

/// [`request_id`] of a value's text known to be valid JSON.
pub(crate) fn request_id_of(text: &str) -> Result<Value, RpcError> {
    if text.starts_with('"') {
        let text = serde_json::from_str(text).map_err(|e| parse_error(&e))?;
        return Ok(Value::String(text));
    }
    if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        if let Ok(number) = serde_json::from_str(text) {
            return Ok(Value::Number(number));
        }
    }
    Err(invalid("id must be a string or a number"))
}

fn parse_error(error: &serde_json::Error) -> RpcError {
    RpcError::new(RpcError::PARSE_ERROR, format!("parse error: {error}"))
}

/// The response message for request `id` with `result`.
pub fn result_message(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// The error response message for request `id` (or `null` when the request
/// could not be read far enough to know its id).
pub fn error_message(id: Option<&Value>, error: &RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.cloned().unwrap_or(Value::Null), "error": error.to_value() })
}

/// A server-to-client notification message.
pub fn notification_message(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// Serializes a message for a body.
/// A JSON-RPC id as one key: its JSON text (`7` and `"7"` differ, as they
/// do on the wire).
pub(crate) fn id_key(id: &Value) -> Box<str> {
    id.to_string().into_boxed_str()
}

/// A result message's members, serialized where they are: the same JSON
/// as [`result_message`]'s, without building a message around the result.
#[derive(serde::Serialize)]
struct ResultMessage<'a, R> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: &'a R,
}

/// The bytes of the response message for request `id` with `result`.
pub(crate) fn result_bytes<R: serde::Serialize>(id: &Value, result: &R) -> Bytes {
    serialized(&ResultMessage {
        jsonrpc: "2.0",
        id,
        result,
    })
}

pub(crate) fn to_bytes(message: &Value) -> Bytes {
    serialized(message)
}

/// The longest buffer a thread keeps between messages; a longer message's
/// buffer is given back when it is written.
const KEPT_BUFFER: usize = 16 * 1024;

thread_local! {
    /// Where this thread writes a message before copying it out: one
    /// allocation per message (its exact size), not one per doubling.
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `message` as JSON bytes. Serializing a `Value` cannot fail (its map keys
/// are strings), nor can the layer's own messages built around one.
fn serialized<T: serde::Serialize + ?Sized>(message: &T) -> Bytes {
    written(|buffer| serde_json::to_writer(buffer, message))
}

/// The bytes `write` puts into an empty buffer (this thread's, reused);
/// none if it fails.
pub(crate) fn written(write: impl Fn(&mut Vec<u8>) -> serde_json::Result<()>) -> Bytes {
    BUFFER.with(|buffer| {
        // Re-entered (a `Serialize` impl that writes a message): write
        // into a buffer of its own.
        let Ok(mut buffer) = buffer.try_borrow_mut() else {
            let mut own = Vec::new();
            return match write(&mut own) {
                Ok(()) => Bytes::from(own),
                Err(_) => Bytes::new(),
            };
        };
        buffer.clear();
        let bytes = match write(&mut buffer) {
            Ok(()) => Bytes::copy_from_slice(&buffer),
            Err(_) => Bytes::new(),
        };
        if buffer.capacity() > KEPT_BUFFER {
            *buffer = Vec::new();
        }
        bytes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Message, RpcError> {
        Message::from_slice(text.as_bytes())
    }

    #[test]
    fn a_string_s_text_is_borrowed_unless_it_has_escapes() {
        let raw = |text: &str| RawValue::from_string(text.to_string()).unwrap();
        let plain = raw(r#""echo""#);
        assert!(matches!(
            string_text(&plain),
            Some(std::borrow::Cow::Borrowed("echo"))
        ));
        let escaped = raw(r#""a\"b\u00e9""#);
        assert_eq!(string_text(&escaped).as_deref(), Some("a\"bé"));
        assert!(matches!(
            string_text(&escaped),
            Some(std::borrow::Cow::Owned(_))
        ));
        assert_eq!(string_text(&raw("3")), None);
        assert_eq!(string_text(&raw(r#"["x"]"#)), None);
    }

    #[test]
    fn result_bytes_are_the_result_message() {
        let (id, result) = (
            json!("a"),
            json!({ "content": [], "x": [1, { "y": null }] }),
        );
        let bytes = result_bytes(&id, &result);
        let read: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(read, result_message(&id, result));
    }

    #[test]
    fn a_method_with_escapes_is_read_unescaped() {
        for (text, method) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#,
                "tools/call",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"\u0074ools/list"}"#,
                "tools/list",
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "ping"),
        ] {
            let Ok(Message::Request(request)) = parse(text) else {
                panic!("{text}")
            };
            assert_eq!(request.method, method);
        }
    }

    #[test]
    fn kinds() {
        assert!(parse(r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#)
            .unwrap()
            .is_initialize());
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Message::Notification(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Message::Response(_))
        ));
        // A null result is a result.
        assert!(matches!(
            parse(r#" {"id":-1.5e3,"result":null,"jsonrpc":"2\u002e0","extra":[[{}]]}"#),
            Ok(Message::Response(_))
        ));
    }

    #[test]
    fn params_stay_raw_until_asked_for() {
        let Ok(Message::Request(request)) =
            parse(r#"{"jsonrpc":"2.0","id":"x","method":"m","params": [1, {"a" : 2}] }"#)
        else {
            panic!("a request")
        };
        assert_eq!(request.id, json!("x"));
        assert_eq!(request.params.as_ref().unwrap().get(), r#"[1, {"a" : 2}]"#);
        assert_eq!(request.params_value().unwrap(), json!([1, { "a": 2 }]));
        let (one, two): (u8, Value) = request.params_as().unwrap();
        assert_eq!((one, two), (1, json!({ "a": 2 })));
        let wrong = request.params_as::<String>().unwrap_err();
        assert_eq!(wrong.code, RpcError::INVALID_PARAMS);
        let Ok(Message::Notification(note)) = parse(r#"{"jsonrpc":"2.0","method":"n"}"#) else {
            panic!("a notification")
        };
        assert_eq!(note.params_value().unwrap(), Value::Null);
        assert_eq!(note.params_as::<Option<u8>>().unwrap(), None);
    }

    #[test]
    fn invalid() {
        for text in [
            r#"[]"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#,
            r#"3"#,
            r#""text""#,
            r#"null"#,
            r#"{"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":2.0,"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":3}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":"no"}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#,
        ] {
            assert_eq!(
                parse(text).unwrap_err().code,
                RpcError::INVALID_REQUEST,
                "{text}"
            );
        }
    }

    #[test]
    fn not_json() {
        for text in [
            "",
            "   ",
            "{",
            r#"{"jsonrpc":"2.0","id":1,"method":"x"} trailing"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x",}"#,
            "\u{feff}{}",
            "nul",
        ] {
            assert_eq!(
                parse(text).unwrap_err().code,
                RpcError::PARSE_ERROR,
                "{text:?}"
            );
        }
        // Invalid UTF-8 inside a string.
        let mut bytes = br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"#.to_vec();
        bytes.extend_from_slice(b"\"\xff\"}}");
        assert_eq!(
            Message::from_slice(&bytes).unwrap_err().code,
            RpcError::PARSE_ERROR
        );
    }

    #[test]
    fn deep_nesting_is_walked_without_recursion() {
        // Far past serde_json's recursion limit, inside params and inside
        // an unknown member: accepted as raw text (nothing recursed into),
        // and refused only when the application asks for a Value.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{deep},"x":{deep}}}"#);
        let Ok(Message::Request(request)) = parse(&text) else {
            panic!("a request")
        };
        assert_eq!(
            request.params_value().unwrap_err().code,
            RpcError::INVALID_PARAMS
        );
        // Unbalanced: a parse error, not a crash.
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}}}"#,
            "[".repeat(100_000)
        );
        assert_eq!(parse(&text).unwrap_err().code, RpcError::PARSE_ERROR);
    }
}

//! JSON-RPC 2.0 messages as MCP sends them over HTTP: parsing one message out
//! of a request body, and writing responses and error bodies.

use bytes::Bytes;
use serde_json::{json, Map, Value};
use std::fmt;

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
/// `UnsupportedProtocolVersionError` (2026-07-28, `-32022`): the request's
/// protocol version is not served; `data` lists the supported ones.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The error code (see the constants in this module).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Optional extra information.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32601 Method not found`, naming the method.
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))
    }

    /// `-32602 Invalid params`.
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
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
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id (a string or a number), echoed in the response.
    pub id: Value,
    /// The method, e.g. `tools/call`.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A notification from the client: no id, no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method, e.g. `notifications/initialized`.
    pub method: String,
    /// The parameters, if any.
    pub params: Option<Value>,
}

/// A response from the client to a request the server sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the server's request.
    pub id: Value,
    /// The result, or the error object.
    pub outcome: Result<Value, Value>,
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

impl Message {
    /// Reads one message out of a parsed JSON value, or says why it is not
    /// a valid JSON-RPC 2.0 message. Batches (arrays) are refused by the
    /// caller before this: MCP 2025-06-18 removed them.
    pub fn from_value(value: Value) -> Result<Message, RpcError> {
        let Value::Object(mut object) = value else {
            return Err(RpcError::new(
                INVALID_REQUEST,
                "message must be a JSON object",
            ));
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(RpcError::new(INVALID_REQUEST, "jsonrpc must be \"2.0\""));
        }
        let id = match object.remove("id") {
            None => None,
            Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
            Some(_) => {
                return Err(RpcError::new(
                    INVALID_REQUEST,
                    "id must be a string or a number",
                ))
            }
        };
        let params = object.remove("params");
        if let Some(p) = &params {
            if !(p.is_object() || p.is_array()) {
                return Err(RpcError::new(
                    INVALID_REQUEST,
                    "params must be an object or an array",
                ));
            }
        }
        match object.remove("method") {
            Some(Value::String(method)) => Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            }),
            Some(_) => Err(RpcError::new(INVALID_REQUEST, "method must be a string")),
            None => {
                let Some(id) = id else {
                    return Err(RpcError::new(
                        INVALID_REQUEST,
                        "message has neither method nor id",
                    ));
                };
                match (object.remove("result"), object.remove("error")) {
                    (Some(result), None) => Ok(Message::Response(Response {
                        id,
                        outcome: Ok(result),
                    })),
                    (None, Some(error)) if error.is_object() => Ok(Message::Response(Response {
                        id,
                        outcome: Err(error),
                    })),
                    _ => Err(RpcError::new(
                        INVALID_REQUEST,
                        "a response needs exactly one of result and error",
                    )),
                }
            }
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
pub(crate) fn to_bytes(message: &Value) -> Bytes {
    // Serializing a `Value` cannot fail: its map keys are strings.
    Bytes::from(serde_json::to_vec(message).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Message, RpcError> {
        Message::from_value(serde_json::from_str(text).unwrap())
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
    }

    #[test]
    fn invalid() {
        for text in [
            r#"[]"#,
            r#"{"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":3}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":3}"#,
        ] {
            assert_eq!(parse(text).unwrap_err().code, INVALID_REQUEST, "{text}");
        }
    }
}

//! The JSON-RPC messages clients send, and what they read from answers.

use serde_json::{json, Value};

/// The protocol version clients initialize at by default.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The `Accept` of a POST: either answer, JSON or an SSE stream.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// An `initialize` request (JSON-RPC id 1) from a client named `name`, at
/// [`PROTOCOL_VERSION`].
pub fn initialize_body(name: &str) -> Value {
    initialize_at(name, PROTOCOL_VERSION)
}

/// An `initialize` request (JSON-RPC id 1) from a client named `name`, at
/// protocol version `version`.
pub fn initialize_at(name: &str, version: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": name, "version": "1" },
        },
    })
}

/// The `notifications/initialized` notification.
pub fn initialized() -> Value {
    json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })
}

/// A `tools/call` request.
pub fn tool_call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments },
    })
}

/// A 2026-07-28 request body: `body` with the per-request `_meta` (protocol
/// version and client capabilities) in its params.
pub fn with_meta(mut body: Value) -> Value {
    if body.get("params").is_none() {
        body["params"] = json!({});
    }
    body["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    body
}

/// The text of a tool result's first content item.
pub fn result_text(result: &Value) -> Option<&str> {
    result.pointer("/content/0/text").and_then(Value::as_str)
}

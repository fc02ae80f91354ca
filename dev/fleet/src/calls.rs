//! 2026-07-28 tool calls as the Python SDK's client sends them to a fleet
//! once it has listed the tools: `Mcp-Method`, `Mcp-Name`, and each
//! argument the tool marks with `x-mcp-header` mirrored into its
//! `Mcp-Param-<Name>` header (`mcp_server`'s `basket`: `Mcp-Param-Basket`,
//! the header the balancer routes by); and the `confirm` tool's
//! input-required retry.

use mcp_test_client::{Client, Error, Reply};
use serde_json::{json, Value};

/// The header `mcp_server`'s basket tools mirror their `basket` into.
pub const BASKET_HEADER: &str = "mcp-param-basket";

/// Sends a 2026-07-28 `tools/call` of `tool` with `client` (through the
/// balancer, or to one node): the `basket` argument, if any, mirrored into
/// `Mcp-Param-Basket` (a hex id goes as it is, as the SDK sends any plain
/// printable ASCII value); the client declares form elicitation; `extra`
/// params (`inputResponses`, `requestState`) go beside `name` and
/// `arguments`. The answer whatever its status, or why none came.
pub async fn modern_tool(
    client: &Client,
    id: u64,
    tool: &str,
    arguments: Value,
    extra: Value,
) -> Result<Reply, Error> {
    let basket = arguments["basket"].as_str().map(str::to_string);
    let mut params = json!({ "name": tool, "arguments": arguments });
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": mcp_test_client::MODERN_VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": client.name(), "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
    });
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    let mut headers = vec![("mcp-method", "tools/call"), ("mcp-name", tool)];
    if let Some(basket) = &basket {
        headers.push((BASKET_HEADER, basket));
    }
    client
        .try_send(client.modern_request(body.to_string(), &headers))
        .await
}

/// [`modern_tool`] without extra params: the `result` of a 200 answer, or
/// why not.
pub async fn tool_result(
    client: &Client,
    id: u64,
    tool: &str,
    arguments: Value,
) -> Result<Value, Error> {
    let reply = modern_tool(client, id, tool, arguments, json!({})).await?;
    let answer = reply.json();
    match (reply.status.as_u16(), answer.get("result")) {
        (200, Some(result)) => Ok(result.clone()),
        _ => Err(Error::Transport(format!(
            "{tool}: {} {}",
            reply.status,
            reply.text()
        ))),
    }
}

/// `confirm`'s arguments: `action`, and `once` (a single-use state) when
/// set. A retry must send the same arguments (the state is bound to them).
pub fn confirm_arguments(action: &str, once: bool) -> Value {
    if once {
        json!({ "action": action, "once": true })
    } else {
        json!({ "action": action })
    }
}

/// `confirm`'s first round with `arguments` ([`confirm_arguments`]): the
/// sealed `requestState` of its input-required answer.
pub async fn confirm_asked(client: &Client, id: u64, arguments: Value) -> Result<String, Error> {
    let asked = tool_result(client, id, "confirm", arguments).await?;
    match (asked["resultType"].as_str(), asked["requestState"].as_str()) {
        (Some("input_required"), Some(state)) if asked["inputRequests"]["confirm"].is_object() => {
            Ok(state.to_string())
        }
        _ => Err(Error::Transport(format!("confirm did not ask: {asked}"))),
    }
}

/// `confirm`'s retry with the first round's `arguments` and `state`, the
/// user accepting: the answer whatever it is (`confirmed ACTION` when the
/// state opened; a JSON-RPC error, counted by cause, when it did not).
pub async fn confirm_retry(
    client: &Client,
    id: u64,
    arguments: Value,
    state: &str,
) -> Result<Reply, Error> {
    let answer = json!({
        "inputResponses": { "confirm": { "action": "accept", "content": { "confirm": true } } },
        "requestState": state,
    });
    modern_tool(client, id, "confirm", arguments, answer).await
}

//! The legacy era's tools that ask the client (sampling, elicitation: a
//! request with the session's own id on the call's SSE stream, answered by
//! the client's `POST`, which the layer hands back to `Context::ask`'s
//! future) or that resume their stream (`test_reconnection`).

use crate::app::Client;
use crate::fixtures;
use futures_util::StreamExt;
use serde_json::{json, Value};
use sessionreg::http::jsonrpc;
use sessionreg::http::{Context, Reply};
use std::time::Duration;

/// The answer to a legacy tool call; `None` for a tool of no era here.
pub async fn call(
    ctx: &Context<Client>,
    id: &Value,
    name: &str,
    arguments: &Value,
) -> Option<Reply> {
    if let Some(result) = fixtures::simple_tool(name, arguments) {
        return Some(Reply::Result(result));
    }
    Some(match name {
        "test_sampling" => {
            let prompt = arguments["prompt"].as_str().unwrap_or("").to_string();
            let params = json!({ "messages": [{ "role": "user", "content": fixtures::text(&prompt) }],
                                 "maxTokens": 100 });
            ask(
                ctx,
                id,
                "sampling/createMessage",
                params,
                |answer| match answer {
                    Ok(result) => format!(
                        "LLM response: {}",
                        result["content"]["text"].as_str().unwrap_or("")
                    ),
                    Err(error) => format!("Sampling not supported or error: {}", error.message),
                },
            )
        }
        "test_elicitation" => {
            let message = arguments["message"].as_str().unwrap_or("").to_string();
            let params = json!({ "message": message, "requestedSchema": {
                "type": "object",
                "properties": { "response": { "type": "string", "description": "User's response" } },
                "required": ["response"] } });
            ask(ctx, id, "elicitation/create", params, |answer| {
                elicited("User response", answer)
            })
        }
        "test_elicitation_sep1034_defaults" => {
            let params = json!({ "message": "Please review and update the form fields with defaults",
                "requestedSchema": { "type": "object", "properties": {
                    "name": { "type": "string", "description": "User name", "default": "John Doe" },
                    "age": { "type": "integer", "description": "User age", "default": 30 },
                    "score": { "type": "number", "description": "User score", "default": 95.5 },
                    "status": { "type": "string", "description": "User status",
                                "enum": ["active", "inactive", "pending"], "default": "active" },
                    "verified": { "type": "boolean", "description": "Verification status", "default": true },
                }, "required": [] } });
            ask(ctx, id, "elicitation/create", params, |answer| {
                elicited("Elicitation completed", answer)
            })
        }
        "test_elicitation_sep1330_enums" => {
            let params = json!({ "message": "Please select options from the enum fields",
                "requestedSchema": { "type": "object", "properties": {
                    "untitledSingle": { "type": "string", "description": "Select one option",
                                        "enum": ["option1", "option2", "option3"] },
                    "titledSingle": { "type": "string", "description": "Select one option with titles",
                                      "oneOf": [{ "const": "value1", "title": "First Option" },
                                                { "const": "value2", "title": "Second Option" },
                                                { "const": "value3", "title": "Third Option" }] },
                    "legacyEnum": { "type": "string", "description": "Select one option (legacy)",
                                    "enum": ["opt1", "opt2", "opt3"],
                                    "enumNames": ["Option One", "Option Two", "Option Three"] },
                    "untitledMulti": { "type": "array", "description": "Select multiple options",
                                       "minItems": 1, "maxItems": 3,
                                       "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                    "titledMulti": { "type": "array", "description": "Select multiple options with titles",
                                     "minItems": 1, "maxItems": 3,
                                     "items": { "anyOf": [{ "const": "value1", "title": "First Choice" },
                                                          { "const": "value2", "title": "Second Choice" },
                                                          { "const": "value3", "title": "Third Choice" }] } },
                }, "required": [] } });
            ask(ctx, id, "elicitation/create", params, |answer| {
                elicited("Elicitation completed", answer)
            })
        }
        "test_reconnection" => {
            // The client gets the priming event, then the connection
            // closes; the answer waits in the stream's log for its GET +
            // Last-Event-ID.
            let closed = ctx.legacy().is_some_and(|l| l.close_sse_stream());
            let id = id.clone();
            Reply::Stream(Box::pin(futures_util::stream::once(async move {
                if closed {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                jsonrpc::result_message(
                    &id,
                    fixtures::text_result(
                        "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
                    ),
                )
            })))
        }
        _ => return None,
    })
}

/// Asks the client on the call's stream; `text` makes the answer's text of
/// the client's answer.
fn ask(
    ctx: &Context<Client>,
    id: &Value,
    method: &str,
    params: Value,
    text: impl FnOnce(Result<Value, jsonrpc::RpcError>) -> String + Send + 'static,
) -> Reply {
    let asked = match ctx.legacy() {
        Some(session) => session.ask(method, params),
        None => {
            return Reply::Error(jsonrpc::RpcError::new(
                jsonrpc::RpcError::INTERNAL_ERROR,
                "not in a session",
            ))
        }
    };
    let request = match asked {
        Ok(request) => request,
        Err(error) => return Reply::Error(error),
    };
    let id = id.clone();
    let answer = request.answer;
    let question = futures_util::stream::once(async move { request.message });
    let result = futures_util::stream::once(async move {
        jsonrpc::result_message(&id, fixtures::text_result(&text(answer.await)))
    });
    Reply::Stream(Box::pin(question.chain(result)))
}

fn elicited(prefix: &str, answer: Result<Value, jsonrpc::RpcError>) -> String {
    match answer {
        Ok(result) => format!(
            "{prefix}: action={}, content={}",
            result["action"].as_str().unwrap_or(""),
            result.get("content").cloned().unwrap_or(json!({}))
        ),
        Err(error) => format!("{prefix}: error: {}", error.message),
    }
}

//! The tasks extension's fixtures (2026-07-28; the suite's `tasks-*`
//! scenarios): tools answered with `Reply::Task`, which the layer turns
//! into a task for a client that declared the extension, and runs inline
//! for one that did not (or refuses with `-32021`, for a tool that runs
//! only as a task).

use crate::fixtures;
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, RpcError};
use sessionreg::http::modern::InputRequests;
use sessionreg::http::ModernRequest;
use sessionreg::http::Reply;
use sessionreg::http::TaskWork;
use std::time::Duration;

/// The longest `slow_compute` (the suite asks for at most 60 s).
const MAX_SECONDS: f64 = 120.0;

/// The tools' definitions.
pub fn tools() -> Vec<Value> {
    let tool = |name: &str, description: &str, schema: Value| json!({ "name": name, "description": description, "inputSchema": schema });
    vec![
        tool(
            "greet",
            "Greets by name, at once (never a task).",
            json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
        ),
        tool(
            "slow_compute",
            "Waits `seconds`, then answers; a task for a client that supports tasks.",
            json!({ "type": "object", "properties": {
                "seconds": { "type": "number", "minimum": 0, "maximum": MAX_SECONDS },
                "label": { "type": "string" } }, "required": ["seconds"] }),
        ),
        tool(
            "failing_job",
            "Runs only as a task; its result is a tool error.",
            json!({ "type": "object", "properties": {} }),
        ),
        tool(
            "protocol_error_job",
            "A task that fails with a JSON-RPC error.",
            json!({ "type": "object", "properties": {} }),
        ),
        tool(
            "confirm_delete",
            "A task that asks for a confirmation before it deletes a file.",
            json!({ "type": "object", "properties": { "filename": { "type": "string" } }, "required": ["filename"] }),
        ),
        tool(
            "multi_input",
            "A task that asks for a name and a confirmation, answered separately or together.",
            json!({ "type": "object", "properties": {} }),
        ),
        tool(
            "test_tool_with_task",
            "Asks for a name first (input required), then greets it from a task.",
            json!({ "type": "object", "properties": {} }),
        ),
    ]
}

/// The answer to a call of one of these tools; `None` for another tool.
pub fn call(modern: &ModernRequest, name: &str, arguments: &Value) -> Option<Reply> {
    Some(match name {
        "greet" => Reply::Result(fixtures::text_result(&format!(
            "Hello, {}!",
            arguments["name"].as_str().unwrap_or("")
        ))),
        "slow_compute" => {
            let seconds = arguments["seconds"].as_f64().unwrap_or(0.0);
            if !(0.0..=MAX_SECONDS).contains(&seconds) {
                return Some(Reply::Error(RpcError::invalid_params(format!(
                    "seconds must be within 0..={MAX_SECONDS}"
                ))));
            }
            let label = arguments["label"].as_str().unwrap_or("").to_string();
            Reply::Task(
                TaskWork::new(move |_ctx| async move {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    Ok(fixtures::text_result(&format!(
                        "Computed {label} after {seconds} s"
                    )))
                })
                .status_message("computing")
                .poll_interval(Duration::from_millis(200)),
            )
        }
        "failing_job" => Reply::Task(
            TaskWork::new(|_ctx| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(json!({ "isError": true, "content": [fixtures::text("the job failed")] }))
            })
            .required(),
        ),
        "protocol_error_job" => Reply::Task(TaskWork::new(|_ctx| async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err(RpcError::new(
                jsonrpc::RpcError::INTERNAL_ERROR,
                "the job failed with a protocol error",
            ))
        })),
        "confirm_delete" => {
            let filename = arguments["filename"].as_str().unwrap_or("").to_string();
            Reply::Task(TaskWork::new(move |ctx| async move {
                let asked = InputRequests::new().elicit(
                    "confirm",
                    &format!("Delete {filename}?"),
                    json!({ "type": "object", "properties": { "confirm": { "type": "boolean" } },
                            "required": ["confirm"] }),
                );
                let answers = ctx.input(asked).await?;
                let confirmed = answers["confirm"]["action"] == "accept"
                    && answers["confirm"]["content"]["confirm"] == true;
                let text = if confirmed {
                    format!("Deleted {filename}")
                } else {
                    format!("Kept {filename}")
                };
                Ok(fixtures::text_result(&text))
            }))
        }
        "multi_input" => Reply::Task(TaskWork::new(|ctx| async move {
            let schema = |field: &str, kind: &str| json!({ "type": "object", "properties": { field: { "type": kind } }, "required": [field] });
            let asked = InputRequests::new()
                .elicit("name", "What is your name?", schema("name", "string"))
                .elicit("confirm", "Shall I go on?", schema("confirm", "boolean"));
            let answers = ctx.input(asked).await?;
            Ok(fixtures::text_result(&format!(
                "Name: {}; confirmed: {}",
                answers["name"]["content"]["name"].as_str().unwrap_or(""),
                answers["confirm"]["content"]["confirm"]
            )))
        })),
        "test_tool_with_task" => match modern.input_response("user_name") {
            // Input gathered first (the spec: resolve MRTR exchanges before
            // creating a task), then the task.
            Some(answer) if answer["action"] == "accept" => {
                let name = answer["content"]["name"].as_str().unwrap_or("").to_string();
                Reply::Task(TaskWork::new(move |_ctx| async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok(fixtures::text_result(&format!("Hello, {name}!")))
                }))
            }
            _ => {
                let asked = InputRequests::new().elicit(
                    "user_name",
                    "What is your name?",
                    json!({ "type": "object", "properties": { "name": { "type": "string" } },
                            "required": ["name"] }),
                );
                match modern.input_required(asked) {
                    Ok(asked) => Reply::InputRequired(asked),
                    Err(error) => Reply::Error(error),
                }
            }
        },
        _ => return None,
    })
}

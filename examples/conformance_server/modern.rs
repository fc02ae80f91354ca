//! The modern era's input-required (multi-round-trip) fixtures: each asks
//! with `ModernRequest::input_required` and answers once the retry brings what it
//! needs. State the retry must bring back is sealed by the layer; these
//! fixtures ask for it to be single use (and the server gives it a short
//! life), so a replayed state is refused as a tampered one is.

use crate::fixtures;
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::RpcError;
use sessionreg::http::modern::InputRequests;
use sessionreg::http::ModernRequest;
use sessionreg::http::Reply;

/// The answer to a modern tool call; `None` for a tool of no era here.
pub fn call(modern: &ModernRequest, id: &Value, name: &str, arguments: &Value) -> Option<Reply> {
    let _ = id;
    if let Some(result) = fixtures::simple_tool(name, arguments) {
        return Some(Reply::Result(result));
    }
    let done = |text: &str| Reply::Result(fixtures::text_result(text));
    if let Some(reply) = crate::tasks::call(modern, name, arguments) {
        return Some(reply);
    }
    Some(match name {
        "test_missing_capability" => {
            if modern.declares("sampling") {
                done("Success")
            } else {
                Reply::Error(RpcError::missing_capability(json!({ "sampling": {} })))
            }
        }
        "test_streaming_elicitation" => {
            streamed(id, fixtures::text_result("Streaming complete"), None)
        }
        "test_logging_tool" => {
            // The layer drops the log message unless the request asked for
            // a log level (and for one this low).
            let log = sessionreg::http::jsonrpc::notification_message(
                "notifications/message",
                json!({ "level": "info", "logger": "conformance", "data": "Logging evaluated" }),
            );
            streamed(id, fixtures::text_result("Logging evaluated"), Some(log))
        }
        "test_header_echo" => done(&format!(
            "Region: {}",
            arguments["region"].as_str().unwrap_or("")
        )),
        "test_input_required_result_elicitation" => match accepted(modern, "user_name") {
            Some(content) => done(&format!(
                "Hello, {}!",
                content["name"].as_str().unwrap_or("")
            )),
            None => ask(
                modern,
                name_request(InputRequests::new(), "user_name", "What is your name?"),
            ),
        },
        "test_input_required_result_sampling" => match modern.input_response("sample_request") {
            Some(answer) => done(&format!(
                "Sampling result: {}",
                answer["content"]["text"].as_str().unwrap_or("")
            )),
            None => ask(
                modern,
                InputRequests::new().sample(
                    "sample_request",
                    sampling("What is the capital of France?", 100),
                ),
            ),
        },
        "test_input_required_result_list_roots" => match modern.input_response("roots_request") {
            Some(answer) => done(&format!(
                "Found {} root(s)",
                answer["roots"].as_array().map_or(0, Vec::len)
            )),
            None => ask(modern, InputRequests::new().list_roots("roots_request")),
        },
        "test_input_required_result_request_state" => {
            match (modern.request_state(), accepted(modern, "confirm")) {
                (Some(b"confirm"), Some(_)) => done("state-ok: requestState validated"),
                _ => ask(modern, confirm(b"confirm")),
            }
        }
        "test_input_required_result_tampered_state" => {
            match (modern.request_state(), accepted(modern, "confirm")) {
                (Some(b"integrity"), Some(_)) => done("integrity-ok: state verified"),
                _ => ask(modern, confirm(b"integrity")),
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let name = accepted(modern, "user_name");
            let greeting = modern.input_response("greeting");
            let roots = modern.input_response("client_roots");
            match (modern.request_state(), name, greeting, roots) {
                (Some(b"multiple"), Some(name), Some(greeting), Some(roots)) => done(&format!(
                    "Name: {}; Greeting: {}; Roots: {}",
                    name["name"].as_str().unwrap_or(""),
                    greeting["content"]["text"].as_str().unwrap_or(""),
                    roots["roots"].as_array().map_or(0, Vec::len),
                )),
                _ => ask(
                    modern,
                    name_request(InputRequests::new(), "user_name", "What is your name?")
                        .sample("greeting", sampling("Generate a greeting", 50))
                        .list_roots("client_roots")
                        .request_state(b"multiple".to_vec())
                        .single_use(),
                ),
            }
        }
        "test_input_required_result_multi_round" => multi_round(modern),
        "test_input_required_result_capabilities" => {
            if modern.input_responses().is_some_and(|r| !r.is_empty()) {
                done("Received input")
            } else {
                // The layer leaves out what the client did not declare.
                ask(
                    modern,
                    name_request(InputRequests::new(), "elicit_input", "What is your name?")
                        .sample("sample_input", sampling("Sample request", 50)),
                )
            }
        }
        _ => return None,
    })
}

/// `prompts/get test_input_required_result_prompt`: asks for a context,
/// then answers the prompt with it.
pub fn prompt(modern: &ModernRequest) -> Reply {
    match accepted(modern, "user_context") {
        Some(content) => Reply::Result(
            json!({ "messages": [{ "role": "user", "content": fixtures::text(
            &format!("Prompt with context: {}", content["context"].as_str().unwrap_or(""))) }] }),
        ),
        None => ask(
            modern,
            InputRequests::new().elicit(
                "user_context",
                "What context should the prompt use?",
                json!({ "type": "object", "properties": { "context": { "type": "string" } },
                        "required": ["context"] }),
            ),
        ),
    }
}

/// Three rounds: a name, then a colour, each round's state naming what the
/// previous ones gave.
fn multi_round(modern: &ModernRequest) -> Reply {
    let state = modern
        .request_state()
        .map(|s| String::from_utf8_lossy(s).into_owned());
    match state.as_deref() {
        Some("round 1") => match accepted(modern, "step1") {
            Some(content) => {
                let name = content["name"].as_str().unwrap_or("");
                ask(
                    modern,
                    InputRequests::new()
                        .elicit(
                            "step2",
                            "Step 2: What is your favorite color?",
                            json!({ "type": "object", "properties": { "color": { "type": "string" } },
                                    "required": ["color"] }),
                        )
                        .request_state(format!("round 2 {name}").into_bytes())
                        .single_use(),
                )
            }
            None => first_round(modern),
        },
        Some(round) if round.starts_with("round 2 ") => match accepted(modern, "step2") {
            Some(content) => Reply::Result(fixtures::text_result(&format!(
                "Multi-round complete for {} who likes {}",
                &round["round 2 ".len()..],
                content["color"].as_str().unwrap_or("")
            ))),
            None => first_round(modern),
        },
        _ => first_round(modern),
    }
}

fn first_round(modern: &ModernRequest) -> Reply {
    ask(
        modern,
        name_request(InputRequests::new(), "step1", "Step 1: What is your name?")
            .request_state(b"round 1".to_vec())
            .single_use(),
    )
}

/// Asks; a request the method may not make is answered as the error it is.
fn ask(modern: &ModernRequest, requests: InputRequests) -> Reply {
    match modern.input_required(requests) {
        Ok(asked) => Reply::InputRequired(asked),
        Err(error) => Reply::Error(error),
    }
}

/// An answer with stream notifications before it: `note` (if any), then
/// the response.
fn streamed(id: &Value, result: Value, note: Option<Value>) -> Reply {
    let answer = sessionreg::http::jsonrpc::result_message(id, result);
    let messages: Vec<Value> = note.into_iter().chain([answer]).collect();
    Reply::Stream(Box::pin(futures_util::stream::iter(messages)))
}

/// The content of an accepted elicitation answer under `key`.
fn accepted<'a>(modern: &'a ModernRequest, key: &str) -> Option<&'a Value> {
    let answer = modern.input_response(key)?;
    (answer["action"] == "accept").then(|| &answer["content"])
}

fn name_request(requests: InputRequests, key: &str, message: &str) -> InputRequests {
    requests.elicit(
        key,
        message,
        json!({ "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] }),
    )
}

fn confirm(state: &[u8]) -> InputRequests {
    InputRequests::new()
        .elicit(
            "confirm",
            "Please confirm",
            json!({ "type": "object", "properties": { "ok": { "type": "boolean" } }, "required": ["ok"] }),
        )
        .request_state(state.to_vec())
        .single_use()
}

fn sampling(question: &str, max_tokens: u32) -> Value {
    json!({ "messages": [{ "role": "user", "content": fixtures::text(question) }], "maxTokens": max_tokens })
}

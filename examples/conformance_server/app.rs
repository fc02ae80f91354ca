//! The application: the methods of both eras, each answered from the
//! fixtures (`fixtures.rs`), the legacy tools that ask the client or
//! stream (`legacy.rs`), and the modern input-required tools
//! (`modern.rs`).

use crate::fixtures;
use crate::{legacy, modern};
use futures_util::StreamExt;
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, Message, Request, RpcError};
use sessionreg::http::modern::{CacheScope, Discovery, MirrorError, MirroredParams};
use sessionreg::http::{App, Context, Era, HandlerError, Reply};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The conformance server.
pub struct Conformance {
    header_echo: Arc<MirroredParams>,
}

impl Conformance {
    /// The server, its `x-mcp-header` tool's mirrored parameters read from
    /// the tool's schema (refused, not assumed, if the fixture were wrong).
    pub fn new() -> Result<Conformance, MirrorError> {
        Ok(Conformance {
            header_echo: Arc::new(MirroredParams::from_input_schema(
                &fixtures::header_echo_schema(),
            )?),
        })
    }
}

/// A legacy session: the log level `logging/setLevel` set (an index into
/// `LEVELS`; `u8::MAX`: none set).
pub struct Client {
    log_level: AtomicU8,
}

const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

impl Client {
    fn logs(&self, level: &str) -> bool {
        let set = self.log_level.load(Ordering::Relaxed);
        let level = LEVELS.iter().position(|l| *l == level).unwrap_or(0) as u8;
        set == u8::MAX || level >= set
    }
}

pub fn server_info() -> Value {
    json!({ "name": "sessionreg-conformance", "version": env!("CARGO_PKG_VERSION") })
}

impl App for Conformance {
    type Session = Client;

    fn open(
        &self,
        _initialize: &Request,
        _request: &http::request::Parts,
    ) -> Result<Client, RpcError> {
        Ok(Client {
            log_level: AtomicU8::new(u8::MAX),
        })
    }

    fn discovery(&self) -> Discovery {
        Discovery {
            capabilities: json!({
                "tools": {}, "prompts": {}, "resources": {}, "completions": {}, "logging": {},
            }),
            server_info: Some(server_info()),
            instructions: None,
            ttl_ms: 0,
            cache_scope: CacheScope::Public,
        }
    }

    fn mirrored_params(&self, tool: &str) -> Option<Arc<MirroredParams>> {
        (tool == "test_header_echo").then(|| Arc::clone(&self.header_echo))
    }

    async fn handle(&self, ctx: Context<Client>, message: Message) -> Result<Reply, HandlerError> {
        let Message::Request(request) = message else {
            return Ok(Reply::Accepted);
        };
        let params = match request.params_value() {
            Ok(Value::Null) => json!({}),
            Ok(params) => params,
            Err(error) => return Ok(Reply::Error(error)),
        };
        Ok(match ctx.era() {
            Era::Legacy(session) => legacy_method(&ctx, session.state(), &request, &params).await,
            Era::Modern(_) => modern_method(&ctx, &request, &params),
        })
    }
}

/// A legacy-era method.
async fn legacy_method(
    ctx: &Context<Client>,
    client: &Client,
    request: &Request,
    params: &Value,
) -> Reply {
    match request.method.as_str() {
        "initialize" => Reply::Result(json!({
            "capabilities": {
                "tools": {}, "prompts": {}, "resources": { "subscribe": true },
                "logging": {}, "completions": {},
            },
            "serverInfo": server_info(),
        })),
        "ping" | "resources/subscribe" | "resources/unsubscribe" => Reply::Result(json!({})),
        "logging/setLevel" => match params["level"]
            .as_str()
            .and_then(|l| LEVELS.iter().position(|x| *x == l))
        {
            Some(level) => {
                client.log_level.store(level as u8, Ordering::Relaxed);
                Reply::Result(json!({}))
            }
            None => Reply::Error(RpcError::invalid_params("unknown log level")),
        },
        "tools/list" => Reply::Result(json!({ "tools": fixtures::legacy_tools() })),
        "tools/call" => {
            let name = params["name"].as_str().unwrap_or("");
            let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
            match name {
                "test_tool_with_logging" => logging(&request.id, |level| client.logs(level)),
                "test_tool_with_progress" => {
                    progress(&request.id, params["_meta"]["progressToken"].clone())
                }
                _ => legacy::call(ctx, &request.id, name, &arguments)
                    .await
                    .unwrap_or_else(|| unknown_tool(name)),
            }
        }
        other => shared_method(other, params, false),
    }
}

/// A modern-era method.
fn modern_method(ctx: &Context<Client>, request: &Request, params: &Value) -> Reply {
    let modern = ctx.modern().expect("a modern request");
    match request.method.as_str() {
        "tools/list" => Reply::Result(
            json!({ "tools": fixtures::modern_tools(), "ttlMs": 0, "cacheScope": "public" }),
        ),
        "tools/call" => {
            let name = params["name"].as_str().unwrap_or("");
            let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
            match name {
                "test_tool_with_logging" => logging(&request.id, |_| true),
                "test_tool_with_progress" => progress(
                    &request.id,
                    modern.progress_token().cloned().unwrap_or(Value::Null),
                ),
                _ => modern::call(modern, &request.id, name, &arguments)
                    .unwrap_or_else(|| unknown_tool(name)),
            }
        }
        "prompts/get" if params["name"] == "test_input_required_result_prompt" => {
            modern::prompt(modern)
        }
        other => shared_method(other, params, true),
    }
}

/// The methods both eras answer alike.
fn shared_method(method: &str, params: &Value, modern: bool) -> Reply {
    match method {
        "prompts/list" => Reply::Result(fixtures::prompts(modern)),
        "prompts/get" => {
            let name = params["name"].as_str().unwrap_or("");
            match fixtures::prompt(name, &params["arguments"]) {
                Some(messages) => Reply::Result(json!({ "messages": messages })),
                None => Reply::Error(RpcError::invalid_params(format!("unknown prompt: {name}"))),
            }
        }
        "resources/list" => Reply::Result(fixtures::resources()),
        "resources/templates/list" => Reply::Result(fixtures::templates()),
        "resources/read" => {
            let uri = params["uri"].as_str().unwrap_or("");
            match fixtures::read(uri) {
                Some(contents) => Reply::Result(contents),
                None => {
                    let mut error = RpcError::invalid_params("Resource not found");
                    error.data = Some(json!({ "uri": uri }));
                    Reply::Error(error)
                }
            }
        }
        "completion/complete" => {
            Reply::Result(json!({ "completion": { "values": [], "total": 0, "hasMore": false } }))
        }
        other => Reply::Error(RpcError::method_not_found(other)),
    }
}

fn unknown_tool(name: &str) -> Reply {
    Reply::Error(RpcError::invalid_params(format!("Unknown tool: {name}")))
}

/// Three log messages (those `logs` lets through), 50 ms apart, on the
/// call's stream before its answer.
fn logging(id: &Value, logs: impl Fn(&str) -> bool) -> Reply {
    let messages: Vec<Value> = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .iter()
    .filter(|_| logs("info"))
    .map(|text| {
        jsonrpc::notification_message(
            "notifications/message",
            json!({ "level": "info", "logger": "conformance", "data": text }),
        )
    })
    .collect();
    let answer = jsonrpc::result_message(
        id,
        fixtures::text_result("Tool with logging executed successfully"),
    );
    paced(messages, answer)
}

/// Progress 0, 50 and 100 (when the call has a token), 50 ms apart, then
/// the token as the answer.
fn progress(id: &Value, token: Value) -> Reply {
    let messages: Vec<Value> = if token.is_null() {
        Vec::new()
    } else {
        [0, 50, 100]
            .iter()
            .map(|step| {
                jsonrpc::notification_message(
                    "notifications/progress",
                    json!({ "progressToken": token, "progress": step, "total": 100,
                            "message": format!("Completed step {step} of 100") }),
                )
            })
            .collect()
    };
    let shown = match &token {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    paced(
        messages,
        jsonrpc::result_message(id, fixtures::text_result(&shown)),
    )
}

/// `messages`, 50 ms apart, then `answer`, as an SSE reply.
fn paced(messages: Vec<Value>, answer: Value) -> Reply {
    let notes = futures_util::stream::iter(messages).then(|message| async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        message
    });
    Reply::Stream(Box::pin(
        notes.chain(futures_util::stream::once(async move { answer })),
    ))
}

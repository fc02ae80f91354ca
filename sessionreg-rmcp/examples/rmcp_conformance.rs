//! The tools of the official conformance suite's server scenarios, written
//! with rmcp's macros, served by [`StreamableHttpService`]: what
//! `tests/interop` points the suite at to referee an rmcp handler on
//! sessionreg's layer.
//!
//! ```text
//! cargo run -p sessionreg-rmcp --example rmcp_conformance -- --addr 127.0.0.1:0
//! ```
//!
//! This version has the suite's content, logging, error and progress
//! tools, its input-required (2026-07-28) tools, its prompts, resources
//! and completions (written as JSON, parsed into rmcp's types); not yet
//! sampling or elicitation in a session, tasks, or the diagnostic and
//! `x-mcp-header` tools. The input-required tools keep their state in
//! plain JSON: the layer seals it (integrity, expiry, principal and
//! request bound) before it reaches the client.

// The suite still referees logging, which SEP-2577 deprecates.
#![allow(deprecated)]

#[path = "common/listen.rs"]
mod listen;
#[path = "common/process.rs"]
mod process;

use clap::Parser;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CompleteRequestParams, CompleteResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, InputRequest, InputRequests, InputRequiredResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ResourceContents, ServerCapabilities, ServerConfig,
    SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{schemars, tool, tool_handler, tool_router, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use sessionreg_rmcp::http::{Config, StreamableHttpService};
use std::net::SocketAddr;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

/// A 1x1 PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A WAV file with no samples.
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// `test_custom_header`'s arguments: `value` is mirrored in a header.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct CustomHeaderArgs {
    #[schemars(extend("x-mcp-header" = "Value"))]
    value: String,
}

/// `test_sampling`'s arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct PromptArgs {
    prompt: Option<String>,
}

/// `test_elicitation`'s arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct MessageArgs {
    message: Option<String>,
}

/// Asks the user `message` with form `schema` (in a session); answers
/// `{said}: action=...` with what came back.
async fn elicitation(
    context: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
    said: &str,
) -> Result<CallToolResult, ErrorData> {
    let params = typed(json!({ "mode": "form", "message": message, "requestedSchema": schema }))?;
    Ok(match context.peer.create_elicitation(params).await {
        Ok(result) => {
            let result = serde_json::to_value(&result).unwrap_or_default();
            let action = result["action"].as_str().unwrap_or("unknown");
            let content = &result["content"];
            CallToolResult::success(vec![ContentBlock::text(format!(
                "{said}: action={action}, content={content}"
            ))])
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
            "Elicitation error: {error}"
        ))]),
    })
}

/// The suite's tools.
struct Conformance {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Conformance {
    #[tool(description = "Answers a simple text")]
    fn test_simple_text(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(
            "This is a simple text response for testing.",
        )])
    }

    #[tool(description = "Answers an image")]
    fn test_image_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::image(PNG, "image/png")])
    }

    #[tool(description = "Answers an audio clip")]
    fn test_audio_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::audio(WAV, "audio/wav")])
    }

    #[tool(description = "Answers an embedded resource")]
    fn test_embedded_resource(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::resource(ResourceContents::text(
            "This is an embedded resource content.",
            "test://embedded-resource",
        ))])
    }

    #[tool(description = "Answers text, an image and a resource")]
    fn test_multiple_content_types(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG, "image/png"),
            ContentBlock::resource(
                ResourceContents::text(
                    r#"{"test":"data","value":123}"#,
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json"),
            ),
        ])
    }

    #[tool(description = "Logs three messages, then answers")]
    async fn test_tool_with_logging(&self, context: RequestContext<RoleServer>) -> CallToolResult {
        for message in [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ] {
            let log = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
                .with_logger("conformance-server");
            let _ = context.peer.notify_logging_message(log).await;
        }
        CallToolResult::success(vec![ContentBlock::text("Logging test completed")])
    }

    #[tool(description = "Asks the user's name (input required), then greets")]
    fn test_input_required_result_elicitation(
        &self,
        InputResponses(answers): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        match answer(&answers, "user_name", "/content/name") {
            Some(name) => done(format!("Hello, {name}!")),
            None => ask(&[("user_name", elicit("What is your name?", "name"))], None),
        }
    }

    #[tool(description = "Asks the client's model (input required), then answers")]
    fn test_input_required_result_sampling(
        &self,
        InputResponses(answers): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        match answer(&answers, "capital_question", "/content/text") {
            Some(text) => done(format!("Sampling response: {text}")),
            None => ask(
                &[("capital_question", sample("What is the capital of France?"))],
                None,
            ),
        }
    }

    #[tool(description = "Asks the client's roots (input required), then lists them")]
    fn test_input_required_result_list_roots(
        &self,
        InputResponses(answers): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        let roots = answers.as_ref().and_then(|a| a.get("client_roots"));
        match roots.and_then(|r| r.get("roots")).and_then(Value::as_array) {
            Some(roots) => {
                let uris: Vec<&str> = roots.iter().filter_map(|r| r["uri"].as_str()).collect();
                done(format!("Client roots: [{}]", uris.join(", ")))
            }
            None => ask(&[("client_roots", list_roots())], None),
        }
    }

    #[tool(description = "Asks a confirmation with a request state, then confirms")]
    fn test_input_required_result_request_state(
        &self,
        RequestState(state): RequestState,
    ) -> Result<CallToolResponse, ErrorData> {
        match state {
            Some(_) => done("Confirmed: state-ok".into()),
            None => ask(
                &[("confirm", elicit("Please confirm", "ok"))],
                Some(json!({ "stage": "confirm" })),
            ),
        }
    }

    #[tool(description = "As the request-state tool: a tampered state never reaches it")]
    fn test_input_required_result_tampered_state(
        &self,
        RequestState(state): RequestState,
    ) -> Result<CallToolResponse, ErrorData> {
        self.test_input_required_result_request_state(RequestState(state))
    }

    #[tool(description = "Asks three inputs at once, then answers")]
    fn test_input_required_result_multiple_inputs(
        &self,
        InputResponses(answers): InputResponses,
        RequestState(state): RequestState,
    ) -> Result<CallToolResponse, ErrorData> {
        let has = |key: &str| answers.as_ref().is_some_and(|a| a.contains_key(key));
        if state.is_some() && has("user_name") && has("greeting") && has("client_roots") {
            return done("All inputs received".into());
        }
        ask(
            &[
                ("user_name", elicit("What is your name?", "name")),
                ("greeting", sample("Generate a greeting")),
                ("client_roots", list_roots()),
            ],
            Some(json!({ "stage": "gather" })),
        )
    }

    #[tool(description = "Asks in two rounds, then answers")]
    fn test_input_required_result_multi_round(
        &self,
        RequestState(state): RequestState,
    ) -> Result<CallToolResponse, ErrorData> {
        let round = state
            .and_then(|state| serde_json::from_str::<Value>(&state).ok())
            .and_then(|state| state["round"].as_i64())
            .unwrap_or(0);
        match round {
            0 => ask(
                &[("step1", elicit("Step 1: What is your name?", "name"))],
                Some(json!({ "round": 1 })),
            ),
            1 => ask(
                &[(
                    "step2",
                    elicit("Step 2: What is your favorite color?", "color"),
                )],
                Some(json!({ "round": 2 })),
            ),
            _ => done("Multi-round flow complete".into()),
        }
    }

    #[tool(description = "Asks only what the client declared, then answers")]
    fn test_input_required_result_capabilities(
        &self,
        InputResponses(answers): InputResponses,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if answers.is_some() {
            return done("Capability-aware flow complete".into());
        }
        let declared = context.meta.client_capabilities().unwrap_or_default();
        let mut asked = Vec::new();
        if declared.elicitation.is_some() {
            asked.push(("user_name", elicit("What is your name?", "name")));
        }
        if declared.sampling.is_some() {
            asked.push(("greeting", sample("Generate a greeting")));
        }
        if declared.roots.is_some() {
            asked.push(("client_roots", list_roots()));
        }
        if asked.is_empty() {
            return done("Client declared no MRTR-capable capabilities".into());
        }
        ask(&asked, None)
    }

    #[tool(description = "Echoes a value the client mirrors in the Mcp-Param-Value header")]
    fn test_custom_header(
        &self,
        Parameters(CustomHeaderArgs { value }): Parameters<CustomHeaderArgs>,
    ) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(format!("value: {value}"))])
    }

    #[tool(description = "Requires the sampling client capability")]
    fn test_missing_capability(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let declared = context.meta.client_capabilities().unwrap_or_default();
        if declared.sampling.is_none() {
            return Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_sampling()
                    .build(),
            ));
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "Required capability declared",
        )]))
    }

    #[tool(description = "Answers input required with an elicitation")]
    fn test_streaming_elicitation(&self) -> Result<CallToolResponse, ErrorData> {
        ask(
            &[("streaming_elicitation", elicit("Provide a value", "value"))],
            None,
        )
    }

    #[tool(description = "Logs only when the request asked for a log level")]
    async fn test_logging_tool(&self, context: RequestContext<RoleServer>) -> CallToolResult {
        if let Some(level) = context.meta.log_level() {
            let log = LoggingMessageNotificationParam::new(level, json!("logLevel was requested"))
                .with_logger("conformance-server");
            let _ = context.peer.notify_logging_message(log).await;
        }
        CallToolResult::success(vec![ContentBlock::text("Logging tool completed")])
    }

    #[tool(description = "Asks the client's model (in a session), then answers with its text")]
    async fn test_sampling(
        &self,
        Parameters(PromptArgs { prompt }): Parameters<PromptArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let prompt = prompt.unwrap_or_else(|| "Hello".into());
        let params = typed(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": 100,
        }))?;
        Ok(match context.peer.create_message(params).await {
            Ok(result) => {
                let result = serde_json::to_value(&result).unwrap_or_default();
                let text = result.pointer("/content/text").and_then(Value::as_str);
                let text = text.unwrap_or("No text response");
                CallToolResult::success(vec![ContentBlock::text(format!("LLM response: {text}"))])
            }
            Err(error) => {
                CallToolResult::error(vec![ContentBlock::text(format!("Sampling error: {error}"))])
            }
        })
    }

    #[tool(description = "Asks the user (in a session), then answers with the response")]
    async fn test_elicitation(
        &self,
        Parameters(MessageArgs { message }): Parameters<MessageArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let message = message.unwrap_or_else(|| "Please provide your information".into());
        let schema = json!({ "type": "object", "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" },
        }, "required": ["username", "email"] });
        elicitation(&context, &message, schema, "User response").await
    }

    #[tool(description = "Asks the user with defaults for every field (SEP-1034)")]
    async fn test_elicitation_sep1034_defaults(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let schema = json!({ "type": "object", "properties": {
            "name": { "type": "string", "description": "User's name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User's age", "default": 30 },
            "score": { "type": "number", "description": "User's score", "default": 95.5 },
            "status": { "type": "string", "description": "User's status",
                "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "description": "Whether user is verified",
                "default": true },
        }});
        let message = "Please provide values (all have defaults)";
        elicitation(&context, message, schema, "Elicitation completed").await
    }

    #[tool(description = "Asks the user with every enum form (SEP-1330)")]
    async fn test_elicitation_sep1330_enums(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let choices = |titles: [&str; 3]| {
            json!([
                { "const": "value1", "title": titles[0] },
                { "const": "value2", "title": titles[1] },
                { "const": "value3", "title": titles[2] },
            ])
        };
        let schema = json!({ "type": "object", "properties": {
            "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
            "titledSingle": { "type": "string",
                "oneOf": choices(["First Option", "Second Option", "Third Option"]) },
            "legacyEnum": { "type": "string", "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"] },
            "untitledMulti": { "type": "array",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
            "titledMulti": { "type": "array",
                "items": { "anyOf": choices(["First Choice", "Second Choice", "Third Choice"]) } },
        }});
        let message = "Test enum schema improvements";
        elicitation(&context, message, schema, "Enum elicitation completed").await
    }

    #[tool(description = "Answers a tool error")]
    fn test_error_handling(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )])
    }

    #[tool(description = "Reports progress three times, then answers")]
    async fn test_tool_with_progress(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if let Some(token) = context.meta.get_progress_token() {
            for (progress, message) in [(0.0, "Starting"), (50.0, "Halfway"), (100.0, "Complete")] {
                let step = ProgressNotificationParam::new(token.clone(), progress)
                    .with_total(100.0)
                    .with_message(message);
                let _ = context.peer.notify_progress(step).await;
            }
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(
            "Progress test completed",
        )]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Conformance {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_completions()
                .build(),
        )
    }

    /// Listening at 2026-07-28: whatever the client asks of what
    /// `get_info` advertises (rmcp, and the layer, take the rest away).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        typed(json!({ "resources": [
            { "uri": "test://static-text", "name": "Static Text Resource",
              "description": "A static text resource", "mimeType": "text/plain" },
            { "uri": "test://static-binary", "name": "Static Binary Resource",
              "description": "A static binary resource", "mimeType": "image/png" },
        ]}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        typed(json!({ "resourceTemplates": [
            { "uriTemplate": "test://template/{id}/data", "name": "Dynamic Resource",
              "description": "A resource with a parameter", "mimeType": "application/json" },
        ]}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => json!({ "uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource." }),
            "test://static-binary" => json!({ "uri": uri, "mimeType": "image/png", "blob": PNG }),
            _ => {
                let id = uri
                    .strip_prefix("test://template/")
                    .and_then(|rest| rest.strip_suffix("/data"));
                let Some(id) = id else {
                    return Err(ErrorData::resource_not_found(
                        format!("no resource {uri}"),
                        Some(json!({ "uri": uri })),
                    ));
                };
                let text =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                json!({ "uri": uri, "mimeType": "application/json", "text": text.to_string() })
            }
        };
        let result: ReadResourceResult = typed(json!({ "contents": [contents] }))?;
        Ok(result.into())
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        typed(json!({ "prompts": [
            { "name": "test_simple_prompt", "description": "A prompt without arguments" },
            { "name": "test_prompt_with_arguments", "description": "A prompt with arguments",
              "arguments": [
                { "name": "arg1", "description": "First argument", "required": true },
                { "name": "arg2", "description": "Second argument", "required": false },
              ] },
            { "name": "test_prompt_with_embedded_resource", "description": "A prompt with a resource" },
            { "name": "test_prompt_with_image", "description": "A prompt with an image" },
            { "name": "test_input_required_result_prompt",
              "description": "A prompt that asks for context first" },
        ]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let text =
            |text: String| json!({ "role": "user", "content": { "type": "text", "text": text } });
        if request.name == "test_input_required_result_prompt" {
            let context = answer(&request.input_responses, "user_context", "/content/context");
            return match context {
                Some(context) => {
                    let message = text(format!("Prompt with elicited context: {context}"));
                    let result: GetPromptResult = typed(json!({ "messages": [message] }))?;
                    Ok(result.into())
                }
                None => {
                    let request: InputRequest =
                        typed(elicit("What context should the prompt use?", "context"))?;
                    let mut requests = InputRequests::new();
                    requests.insert("user_context".into(), request);
                    Ok(InputRequiredResult::from_input_requests(requests).into())
                }
            };
        }
        let messages = match request.name.as_str() {
            "test_simple_prompt" => json!([text("This is a simple test prompt.".into())]),
            "test_prompt_with_arguments" => {
                let arguments = request.arguments.unwrap_or_default();
                let arg = |name: &str| {
                    arguments
                        .get(name)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                json!([text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                ))])
            }
            "test_prompt_with_embedded_resource" => json!([
                text("Here is a resource:".into()),
                { "role": "user", "content": { "type": "resource", "resource": {
                    "uri": "test://static-text", "mimeType": "text/plain",
                    "text": "Resource content for prompt" } } },
            ]),
            "test_prompt_with_image" => json!([
                text("Here is an image:".into()),
                { "role": "user", "content": { "type": "image", "data": PNG, "mimeType": "image/png" } },
            ]),
            name => {
                return Err(ErrorData::invalid_params(format!("no prompt {name}"), None));
            }
        };
        let result: GetPromptResult = typed(json!({ "messages": messages }))?;
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let values = match request.argument.name.as_str() {
            "id" => json!(["1", "2", "3"]),
            "name" => json!(["Alice", "Bob", "Charlie"]),
            "style" => json!(["friendly", "formal", "casual"]),
            _ => json!([]),
        };
        typed(json!({ "completion": { "values": values, "hasMore": false } }))
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }
}

/// A complete tool result of one text.
fn done(text: String) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

/// The text at `pointer` in the client's answer to input request `key`.
fn answer<'a>(
    answers: &'a Option<rmcp::model::InputResponses>,
    key: &str,
    pointer: &str,
) -> Option<&'a str> {
    answers.as_ref()?.get(key)?.pointer(pointer)?.as_str()
}

/// An input-required result asking `asked`, with the handler's `state`.
fn ask(asked: &[(&str, Value)], state: Option<Value>) -> Result<CallToolResponse, ErrorData> {
    let mut requests = InputRequests::new();
    for (key, request) in asked {
        let request: InputRequest = typed(request.clone())?;
        requests.insert((*key).to_owned(), request);
    }
    let state = state.map(|state| state.to_string());
    Ok(InputRequiredResult::new(Some(requests), state).into())
}

/// An elicitation asking one string `field`.
fn elicit(message: &str, field: &str) -> Value {
    json!({ "method": "elicitation/create", "params": {
        "mode": "form", "message": message,
        "requestedSchema": { "type": "object",
            "properties": { field: { "type": "string" } }, "required": [field] },
    }})
}

/// A sampling request of one user message.
fn sample(text: &str) -> Value {
    json!({ "method": "sampling/createMessage", "params": {
        "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
        "maxTokens": 100,
    }})
}

/// A roots request.
fn list_roots() -> Value {
    json!({ "method": "roots/list" })
}

/// `value` as an rmcp type (the results above are written as JSON).
fn typed<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))
}

#[derive(Parser, Debug)]
#[command(about = "The conformance suite's tools, an rmcp handler on sessionreg's layer")]
struct Args {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
}

#[tokio::main]
async fn main() -> ExitCode {
    process::init_tracing();
    process::exit("rmcp_conformance", run(Args::parse()).await)
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let make = || {
        Ok(Conformance {
            tool_router: Conformance::tool_router(),
        })
    };
    let service = StreamableHttpService::try_new(make, Config::default())?;
    let router = axum::Router::new().nest_service("/mcp", service.clone());
    let token = CancellationToken::new();
    process::serve(args.addr, router, token, move || {
        service.manager().shutdown()
    })
    .await
}

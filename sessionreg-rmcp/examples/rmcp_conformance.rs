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
//! tools, its prompts, resources and completions (written as JSON, parsed
//! into rmcp's types); not yet sampling, elicitation, the input-required
//! fixtures, tasks, or the diagnostic and `x-mcp-header` tools.

// The suite still referees logging, which SEP-2577 deprecates.
#![allow(deprecated)]

#[path = "common/listen.rs"]
mod listen;
#[path = "common/process.rs"]
mod process;

use clap::Parser;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ResourceContents, ServerCapabilities, ServerConfig,
    SetLevelRequestParams,
};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, RoleServer, ServerHandler};
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
        ]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let text =
            |text: String| json!({ "role": "user", "content": { "type": "text", "text": text } });
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

//! The tools of the official conformance suite's server scenarios, written
//! with rmcp's macros, served by [`StreamableHttpService`]: what
//! `tests/interop` points the suite at to referee an rmcp handler on
//! sessionreg's layer.
//!
//! ```text
//! cargo run -p sessionreg-rmcp --example rmcp_conformance -- --addr 127.0.0.1:0
//! ```
//!
//! This version has the suite's content, logging, error and progress tools
//! only (no prompts, resources, completions, sampling or elicitation yet).

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
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, RoleServer, ServerHandler};
use serde_json::json;
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
                .build(),
        )
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }
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

//! The example's server: rmcp's usual tool server (tools `echo` and
//! `sleep`), mounted in axum as rmcp's own examples mount theirs. The tests
//! include this file (`#[path]`), so what they serve is what the example
//! serves.
// Each includer uses a part.
#![allow(dead_code)]

#[path = "../common/endpoint.rs"]
mod endpoint;

use axum::Router;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Arguments of `echo`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// The text to send back.
    pub text: String,
}

/// Arguments of `sleep`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SleepArgs {
    /// How long to sleep, in milliseconds.
    pub ms: u64,
}

/// The tool server.
#[derive(Debug, Clone)]
pub struct Demo {
    tool_router: ToolRouter<Self>,
}

impl Default for Demo {
    fn default() -> Self {
        Demo {
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_router]
impl Demo {
    #[tool(description = "Answer with the text it was given")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Sleep for `ms` milliseconds without a word, then answer")]
    async fn sleep(&self, Parameters(SleepArgs { ms }): Parameters<SleepArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("slept {ms} ms")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Demo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// The MCP endpoint at `/mcp` (rmcp's service with `manager`, behind the
/// [`StatusLayer`](sessionreg_rmcp::StatusLayer)) and `GET /metrics` (whatever `metrics` renders).
/// Cancelling `token` ends rmcp's sessions and streams.
pub fn router<M: SessionManager>(
    manager: Arc<M>,
    token: CancellationToken,
    metrics: impl Fn() -> String + Clone + Send + Sync + 'static,
) -> Router {
    let config = StreamableHttpServerConfig::default().with_cancellation_token(token);
    router_with(manager, config, metrics)
}

/// [`router`] with rmcp's server configuration given whole (a
/// `session_store`, say).
pub fn router_with<M: SessionManager>(
    manager: Arc<M>,
    config: StreamableHttpServerConfig,
    metrics: impl Fn() -> String + Clone + Send + Sync + 'static,
) -> Router {
    let mcp = StreamableHttpService::new(|| Ok(Demo::default()), manager, config);
    endpoint::endpoint(mcp, metrics)
}

//! An rmcp counter, as any rmcp server is written: a `#[tool_router]`
//! struct implementing `ServerHandler`. Nothing in it knows which service
//! serves it. Included by the example and by `tests/http_service.rs`.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ErrorData, InputRequest, InputRequests,
    InputRequiredResult, ProgressNotificationParam, ServerCapabilities, ServerConfig,
    SubscriptionFilter,
};
use rmcp::service::RequestContext;
use rmcp::{schemars, tool, tool_handler, tool_router, RoleServer, ServerHandler};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicI64, Ordering};

/// `add`'s arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// What to add to the count.
    pub by: i64,
}

/// `header`'s arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct HeaderArgs {
    /// The header to read.
    pub name: String,
}

/// A count per handler: per session at 2025-11-25, per request at
/// 2026-07-28 (the factory makes one for each, as rmcp's service does).
pub struct Counter {
    count: AtomicI64,
    tool_router: ToolRouter<Self>,
}

impl Counter {
    /// A counter at zero.
    pub fn new() -> Counter {
        Counter {
            count: AtomicI64::new(0),
            tool_router: Self::tool_router(),
        }
    }
}

impl Default for Counter {
    fn default() -> Counter {
        Counter::new()
    }
}

#[tool_router]
impl Counter {
    #[tool(description = "Add 1 to the count and answer the count")]
    fn increment(&self) -> String {
        // Relaxed: the count is this counter's only shared state.
        (self.count.fetch_add(1, Ordering::Relaxed) + 1).to_string()
    }

    #[tool(description = "Add `by` to the count and answer the count")]
    fn add(&self, Parameters(AddArgs { by }): Parameters<AddArgs>) -> String {
        (self.count.fetch_add(by, Ordering::Relaxed) + by).to_string()
    }

    #[tool(description = "Count to 3, reporting progress when asked for it, and answer done")]
    async fn count_to_three(&self, context: RequestContext<RoleServer>) -> String {
        if let Some(token) = context.meta.get_progress_token() {
            for step in 1..=3 {
                let progress = ProgressNotificationParam::new(token.clone(), f64::from(step));
                let _ = context.peer.notify_progress(progress).await;
            }
        }
        "done".to_owned()
    }

    #[tool(description = "Ask the client's name (a 2026-07-28 input request), then greet it")]
    fn greet(
        &self,
        InputResponses(responses): InputResponses,
        RequestState(state): RequestState,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = responses
            .as_ref()
            .and_then(|responses| responses.get("name"))
            .and_then(|answer| answer.pointer("/content/name"))
            .and_then(Value::as_str);
        if let (Some(name), Some(state)) = (name, state) {
            let hello = format!("Hello, {name}! (state {state})");
            return Ok(CallToolResult::success(vec![ContentBlock::text(hello)]).into());
        }
        let ask: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "What is your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": { "name": { "type": "string" } },
                    "required": ["name"],
                },
            },
        }))
        .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let mut requests = InputRequests::new();
        requests.insert("name".into(), ask);
        Ok(InputRequiredResult::new(Some(requests), Some("asked-once".into())).into())
    }

    #[tool(description = "Tell every client listening that the tool list changed")]
    async fn announce(&self, context: RequestContext<RoleServer>) -> String {
        match context.peer.notify_tool_list_changed().await {
            Ok(()) => "announced".to_owned(),
            Err(error) => format!("not announced: {error}"),
        }
    }

    #[tool(description = "Ask the client for its roots (in a session) and list them")]
    // Roots are deprecated by SEP-2577, still in 2025-11-25's clients.
    #[allow(deprecated)]
    async fn roots(&self, context: RequestContext<RoleServer>) -> String {
        match context.peer.list_roots().await {
            Ok(listed) => {
                let uris: Vec<&str> = listed.roots.iter().map(|root| root.uri.as_str()).collect();
                format!("roots: {}", uris.join(", "))
            }
            Err(error) => format!("no roots: {error}"),
        }
    }

    #[tool(description = "Answer the value of an HTTP header of the request")]
    fn header(
        &self,
        Parameters(HeaderArgs { name }): Parameters<HeaderArgs>,
        context: RequestContext<RoleServer>,
    ) -> String {
        let parts = context.extensions.get::<http::request::Parts>();
        let value = parts.and_then(|parts| parts.headers.get(name.as_str()));
        match value.and_then(|value| value.to_str().ok()) {
            Some(value) => value.to_owned(),
            None => "(none)".to_owned(),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Counter {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_instructions("A counter: increment, add, header.")
    }

    /// 2026-07-28 clients may listen for what `announce` tells: the tools
    /// list's changes.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }
}

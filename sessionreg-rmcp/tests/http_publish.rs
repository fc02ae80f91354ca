//! What an rmcp handler publishes, served by
//! `sessionreg_rmcp::http::StreamableHttpService`, as 2026-07-28 listen
//! streams hear it: a resource's update only by the listeners of the
//! principal whose request sent it (rmcp sends it on that client's session
//! only), a list's change by everyone.

#[path = "../examples/common/listen.rs"]
mod listen;
#[path = "support/loopback.rs"]
mod loopback;

use http::StatusCode;
use loopback::Loopback;
use mcp_test_client::{tool_call, with_meta, Client, SseStream};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::RequestContext;
use rmcp::{schemars, tool, tool_handler, tool_router, RoleServer, ServerHandler};
use serde_json::{json, Value};
use sessionreg::http::BearerTokens;
use sessionreg_rmcp::http::StreamableHttpService;
use std::time::Duration;

/// `touch`'s arguments.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct TouchArgs {
    /// The resource updated.
    uri: String,
}

/// Notes: `touch` says a resource was updated, `rename` that the tools
/// list changed, each on the request's peer, as an rmcp handler does.
struct Notes {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Notes {
    #[tool(description = "Say that a resource was updated")]
    async fn touch(
        &self,
        Parameters(TouchArgs { uri }): Parameters<TouchArgs>,
        context: RequestContext<RoleServer>,
    ) -> String {
        let param = ResourceUpdatedNotificationParam::new(uri);
        match context.peer.notify_resource_updated(param).await {
            Ok(()) => "touched".to_owned(),
            Err(error) => format!("not touched: {error}"),
        }
    }

    #[tool(description = "Say that the tools list changed")]
    async fn rename(&self, context: RequestContext<RoleServer>) -> String {
        match context.peer.notify_tool_list_changed().await {
            Ok(()) => "renamed".to_owned(),
            Err(error) => format!("not renamed: {error}"),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Notes {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }
}

/// Opens a listen stream for the tools list and `uri`; past its
/// acknowledgement.
async fn listen_to(client: &Client, uri: &str) -> SseStream {
    let body = with_meta(json!({
        "jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
        "params": { "notifications": {
            "toolsListChanged": true, "resourceSubscriptions": [uri],
        } },
    }));
    let request =
        client.modern_request(body.to_string(), &[("mcp-method", "subscriptions/listen")]);
    let response = client.send_raw(request).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseStream::new(response.into_body());
    let ack = next(&mut stream).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "toolsListChanged": true, "resourceSubscriptions": [uri] }),
        "{ack}"
    );
    stream
}

/// The next message of a stream (a safety bound, not a measure).
async fn next(stream: &mut SseStream) -> Value {
    stream
        .next_within(Duration::from_secs(10))
        .await
        .expect("the stream reads")
        .expect("the stream is open")
}

async fn call(client: &Client, tool: &str, arguments: Value) -> Value {
    let answer = client
        .post_modern(
            &with_meta(tool_call(1, tool, arguments)),
            &[("mcp-method", "tools/call"), ("mcp-name", tool)],
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    answer.json()
}

#[tokio::test]
async fn a_resources_update_reaches_the_callers_principal_only_a_list_change_everyone() {
    let tokens = BearerTokens::new(
        [("ada", "token-ada"), ("eve", "token-eve")].map(|(n, t)| (n.to_string(), t.to_string())),
    )
    .unwrap();
    let factory = || {
        Ok(Notes {
            tool_router: Notes::tool_router(),
        })
    };
    let service: StreamableHttpService<Notes> = StreamableHttpService::builder(factory)
        .unwrap()
        .authenticator(tokens)
        .build()
        .unwrap()
        .into();
    let served = Loopback::serve(axum::Router::new().nest_service("/mcp", service)).await;

    let ada = Client::with_bearer(&served.url, "token-ada");
    let eve = Client::with_bearer(&served.url, "token-eve");
    let shared = "notes://shared";
    let mut ada_hears = listen_to(&ada, shared).await;
    let mut eve_hears = listen_to(&eve, shared).await;

    let touched = call(&ada, "touch", json!({ "uri": shared })).await;
    assert_eq!(touched["result"]["content"][0]["text"], "touched");
    let heard = next(&mut ada_hears).await;
    assert_eq!(
        heard["method"], "notifications/resources/updated",
        "{heard}"
    );
    assert_eq!(heard["params"]["uri"], shared);

    // Then a change everyone hears: eve's next message is that one, so
    // ada's update, published before it, never reached her.
    let renamed = call(&eve, "rename", json!({})).await;
    assert_eq!(renamed["result"]["content"][0]["text"], "renamed");
    let heard = next(&mut eve_hears).await;
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
    let heard = next(&mut ada_hears).await;
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
}

//! rmcp's own client (`StreamableHttpClientTransport`, reqwest) against the
//! example's server: initialize, list tools, call, then close, which sends
//! DELETE; afterwards nothing is live and `/metrics` says so.

mod support;

use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use sessionreg::Reason;
use support::{eventually, Server};

#[tokio::test]
async fn rmcp_client_lists_calls_and_deletes() {
    let server = Server::start(|b| b.node_id(0xa7)).await;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.clone()),
    );
    let client = ClientConfig::default()
        .serve(transport)
        .await
        .expect("initialize");
    assert_eq!(server.live(), 1);

    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(names, ["echo", "sleep"]);

    let args = serde_json::json!({ "text": "hello from rmcp" });
    let result = client
        .call_tool(
            CallToolRequestParams::new("echo").with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .expect("tools/call echo");
    assert_ne!(result.is_error, Some(true));
    let text = result.content[0]
        .as_text()
        .expect("a text item")
        .text
        .clone();
    assert_eq!(text, "hello from rmcp");

    // close() ends the session with a DELETE (rmcp's client waits for it).
    client.cancel().await.expect("close");
    assert!(eventually(|| server.live() == 0).await);
    let closes = server.closes.each_once();
    assert_eq!(closes.len(), 1);
    let (id, reason) = closes.into_iter().next().unwrap();
    assert_eq!(reason, Reason::Deleted);
    assert!(
        id.starts_with("a7"),
        "the node id leads the session id: {id}"
    );

    let metrics = server.client().metrics().await;
    assert_eq!(metrics["sessionreg_sessions_live"], 0.0);
    assert_eq!(metrics["sessionreg_sessions_created_total"], 1.0);
    assert_eq!(
        metrics["sessionreg_sessions_terminated_total{reason=\"deleted\"}"],
        1.0
    );
    assert_eq!(metrics["sessionreg_node_id"], 167.0);
    server.stop().await;
}

//! Sessions restored from rmcp's `SessionStore`
//! (`StreamableHttpServerConfig::session_store`): after a restart, and on
//! another node that did not make them, with no balancer routing by owner.
//! rmcp asks the manager to restore an id it does not hold and the store
//! knows, then replays `initialize` on it; the session gets a fresh entry
//! (a new slot, a registry id with the restoring node's prefix) that the
//! client's id leads to.

mod support;

use http::StatusCode;
use rmcp::model::{CallToolRequestParams, ClientConfig};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::json;
use sessionreg::Reason;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use support::stores::Sessions;
use support::{client, eventually, text_of, Server};

/// rmcp's config with the shared session store.
fn with_store(store: &Arc<Sessions>) -> StreamableHttpServerConfig {
    let mut config = StreamableHttpServerConfig::default();
    config.session_store = Some(store.clone());
    config
}

/// Two nodes share the store, and each request goes wherever it goes (no
/// routing by the id's prefix): node 2 restores node 1's session on the
/// first request that reaches it, under the client's id, on an entry of its
/// own; the client never re-initializes.
#[tokio::test]
async fn another_node_restores_a_session_it_did_not_make() {
    let store = Arc::new(Sessions::default());
    let one = Server::start_configured("127.0.0.1:0", with_store(&store), |b| b.node_id(1)).await;
    let two = Server::start_configured("127.0.0.1:0", with_store(&store), |b| b.node_id(2)).await;
    let id = client(&one.url).open().await;
    assert!(id.starts_with("01"), "{id}");
    assert_eq!(store.ids(), [id.as_str()], "rmcp stored the session");

    // The first request on node 2: restored (the replay of initialize
    // included), then answered.
    let echo = client(&two.url)
        .call(&id, "echo", json!({ "text": "on two" }))
        .await;
    assert_eq!(echo.status, StatusCode::OK, "{echo:?}");
    assert_eq!(text_of(&echo.answer().unwrap()), Some("on two"));
    assert_eq!(two.manager.stats().created, 1);
    // Later requests find it at once, on either node.
    for (node, text) in [(&two, "two again"), (&one, "one again")] {
        let echo = client(&node.url)
            .call(&id, "echo", json!({ "text": text }))
            .await;
        assert_eq!(text_of(&echo.answer().unwrap()), Some(text), "{echo:?}");
    }
    assert_eq!(two.manager.stats().created, 1, "restored once");
    assert_eq!(store.loads.load(Ordering::Relaxed), 1);

    // A DELETE ends the copy of the node it reaches (and rmcp removes the
    // store's entry): node 2's entry has node 2's prefix.
    assert_eq!(
        client(&two.url).delete(&id).await.status,
        StatusCode::ACCEPTED
    );
    assert!(eventually(|| two.live() == 0).await);
    let closes = two.closes.each_once();
    let (entry, reason) = closes.into_iter().next().unwrap();
    assert_eq!(reason, Reason::Deleted);
    assert!(
        entry.starts_with("02"),
        "the restoring node's prefix: {entry}"
    );
    assert_ne!(entry, id, "a fresh entry, not the client's id");
    assert!(store.ids().is_empty());
    let gone = client(&two.url)
        .call(&id, "echo", json!({ "text": "?" }))
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    // Node 1's copy is its own, and ends as node 1's sessions end.
    assert_eq!(one.live(), 1);
    one.stop().await;
    two.stop().await;
}

/// The same server restarted (a new process would do the same: a new
/// manager over the same store, on the same address), and rmcp's own client
/// carrying on with its session as if nothing happened.
#[tokio::test]
async fn a_restarted_server_restores_rmcp_clients_sessions() {
    let store = Arc::new(Sessions::default());
    let first = Server::start_configured("127.0.0.1:0", with_store(&store), |b| b.node_id(7)).await;
    let addr = first.addr();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(first.url.clone()),
    );
    let rmcp_client = ClientConfig::default()
        .serve(transport)
        .await
        .expect("initialize");
    let call = |text: &str| {
        let args = json!({ "text": text });
        CallToolRequestParams::new("echo").with_arguments(args.as_object().unwrap().clone())
    };
    let before = rmcp_client.call_tool(call("before")).await.expect("a call");
    assert_eq!(before.content[0].as_text().unwrap().text, "before");
    let id = store.ids().pop().expect("stored at initialize");

    first.stop().await;
    let second = Server::start_configured(&addr, with_store(&store), |b| b.node_id(7)).await;
    let after = rmcp_client
        .call_tool(call("after"))
        .await
        .expect("a call after the restart");
    assert_eq!(after.content[0].as_text().unwrap().text, "after");
    assert_eq!(second.manager.stats().created, 1);
    let restored: Vec<_> = second
        .manager
        .sessions()
        .into_iter()
        .map(|handle| handle.id().to_string())
        .collect();
    assert_eq!(restored, [id.as_str()], "listed under the client's id");

    rmcp_client.cancel().await.expect("close");
    assert!(eventually(|| second.live() == 0).await);
    assert_eq!(second.closes.count_reason(Reason::Deleted), 1);
    assert!(store.ids().is_empty());
    second.stop().await;
}

/// A restore is a new session: at capacity it is refused, 503 behind the
/// StatusLayer, and nothing is left behind.
#[tokio::test]
async fn a_restore_at_capacity_is_refused_with_503() {
    let store = Arc::new(Sessions::default());
    let one = Server::start_configured("127.0.0.1:0", with_store(&store), |b| b.node_id(1)).await;
    let two = Server::start_configured("127.0.0.1:0", with_store(&store), |b| {
        b.node_id(2).capacity(1)
    })
    .await;
    let theirs = client(&one.url).open().await;
    let _full = client(&two.url).open().await;
    let refused = client(&two.url)
        .call(&theirs, "echo", json!({ "text": "?" }))
        .await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{refused:?}"
    );
    assert_eq!(two.live(), 1);
    assert!(two.manager.session(&theirs).is_none());
    one.stop().await;
    two.stop().await;
}

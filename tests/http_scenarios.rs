//! The four seed scenarios over real sockets: sessions created by a real
//! `initialize` handshake and ended by DELETE (A, B) or by the idle timeout
//! (C), and 2026-07-28 requests that must register nothing (D).
#![cfg(feature = "http")]

mod http_support;

use http::{Method, StatusCode};
use http_body_util::Full;
use http_support::{eventually, initialize_body, Client, Server};
use serde_json::json;
use sessionreg::Reason;
use std::time::Duration;

const N: usize = 60;

/// One full session life: initialize, initialized, a tool call.
async fn handshake(client: &Client) -> String {
    let id = client.initialize().await;
    assert_eq!(client.initialized(&id).await.status, StatusCode::ACCEPTED);
    let call = client.call(&id, "echo", json!({ "text": "hi" })).await;
    assert_eq!(call.status, StatusCode::OK);
    assert_eq!(call.json()["result"]["echo"]["text"], "hi");
    id
}

async fn delete_all(server: &Server) {
    let client = Client::new(&server.url);
    let mut ids = Vec::new();
    for _ in 0..N {
        ids.push(handshake(&client).await);
    }
    assert_eq!(server.live(), N as u64);
    for id in &ids {
        assert_eq!(client.delete(id).await.status, StatusCode::OK);
    }
    // Right after the DELETE responses, with nothing else happening.
    assert_eq!(server.live(), 0);
    assert_eq!(server.closes.count_reason(Reason::Deleted), N);
    // And across a quiet window.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.live(), 0);
    assert_eq!(server.manager.registry().len(), 0);
    assert_all_closed_and_gone(server, &client, &ids).await;
}

/// Every session closed once, and every id answered 404 afterwards.
async fn assert_all_closed_and_gone(server: &Server, client: &Client, ids: &[String]) {
    assert_eq!(server.closes.count(), N);
    server.closes.assert_each_once();
    for id in ids {
        assert_eq!(
            client.call(id, "echo", json!({})).await.status,
            StatusCode::NOT_FOUND
        );
    }
}

#[tokio::test]
async fn a_sessions_ended_by_delete_leave_nothing() {
    let server = Server::start().await;
    delete_all(&server).await;
}

#[tokio::test]
async fn b_delete_with_an_idle_timeout_configured() {
    let server = Server::start_with(|b| b.idle_timeout(Some(Duration::from_secs(30)))).await;
    delete_all(&server).await;
    assert_eq!(server.closes.count_reason(Reason::IdleTimeout), 0);
}

#[tokio::test]
async fn c_abandoned_sessions_end_by_idle_timeout() {
    let server = Server::start_with(|b| b.idle_timeout(Some(Duration::from_millis(300)))).await;
    let client = Client::new(&server.url);
    let mut ids = Vec::new();
    for _ in 0..N {
        ids.push(handshake(&client).await);
    }
    assert!(
        eventually(|| server.live() == 0).await,
        "live = {}",
        server.live()
    );
    assert!(eventually(|| server.closes.count() == N).await);
    assert_eq!(server.closes.count_reason(Reason::IdleTimeout), N);
    assert_all_closed_and_gone(&server, &client, &ids).await;
}

#[tokio::test]
async fn d_stateless_version_registers_nothing() {
    let server = Server::start_with(|b| b.serve_modern(true)).await;
    let client = Client::new(&server.url);
    let post = |body: serde_json::Value, with_id: bool| {
        let body = http_support::with_meta(body);
        let mut request = client
            .request(Method::POST)
            .header("content-type", "application/json")
            .header("accept", http_support::ACCEPT_BOTH)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", body["method"].as_str().unwrap());
        if let Some(name) = body["params"]["name"].as_str() {
            request = request.header("mcp-name", name);
        }
        if with_id {
            // Even a (bogus) id is not looked up or echoed at this version.
            request = request.header(
                "mcp-session-id",
                "0123456789abcdef0123456789abcdef0123456789abcdef",
            );
        }
        request.body(Full::new(body.to_string().into())).unwrap()
    };
    for i in 0..N {
        let init = client
            .send(post(initialize_body("stateless"), i % 2 == 0))
            .await;
        // initialize was removed at 2026-07-28: 404 with -32601, and no id.
        assert_eq!(init.status, StatusCode::NOT_FOUND);
        assert_eq!(init.json()["error"]["code"], -32601);
        assert!(init.session_id().is_none(), "no id at 2026-07-28");
        let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": { "name": "echo", "arguments": { "i": i } } });
        let reply = client.send(post(call, false)).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.json()["result"]["echo"]["i"], i);
        assert!(reply.session_id().is_none());
    }
    for method in [Method::GET, Method::DELETE] {
        let request = client
            .request(method)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header(
                "mcp-session-id",
                "0123456789abcdef0123456789abcdef0123456789abcdef",
            )
            .body(Full::default())
            .unwrap();
        let reply = client.send(request).await;
        assert_eq!(reply.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(reply.headers["allow"], "POST");
    }
    let stats = server.manager.stats();
    assert_eq!((stats.created, stats.live), (0, 0));
    assert_eq!(stats.terminated_total(), 0);
    assert_eq!(server.closes.count(), 0);
}

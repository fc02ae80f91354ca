//! The seed's four scenarios against the rmcp example over real sockets:
//! sessions made by a real `initialize` handshake and ended by DELETE (A, B)
//! or by the idle timeout (C), and 2026-07-28 requests, which rmcp serves
//! without sessions (D, rmcp's automatic per-version mode): every scenario
//! ends with nothing live and every session closed exactly once.

mod support;

use http::{Method, StatusCode};
use http_body_util::Full;
use serde_json::json;
use sessionreg::Reason;
use std::time::Duration;
use support::{eventually, initialize_body, text_of, Client, Server};

const N: usize = 40;

/// One session's life: initialize, initialized, a tool call.
async fn handshake(client: &Client) -> String {
    let id = client.open().await;
    assert_eq!(id.len(), 48, "a registry id: {id}");
    assert!(id.starts_with("00"), "node 0 prefixes every id: {id}");
    let call = client.call(&id, "echo", json!({ "text": "hi" })).await;
    assert_eq!(call.status, StatusCode::OK);
    assert_eq!(text_of(&call.answer().expect("an answer")), Some("hi"));
    id
}

async fn delete_all(server: &Server) {
    let client = server.client();
    let mut ids = Vec::new();
    for _ in 0..N {
        ids.push(handshake(&client).await);
    }
    assert_eq!(server.live(), N as u64);
    for id in &ids {
        assert_eq!(client.delete(id).await.status, StatusCode::ACCEPTED);
    }
    // Right after the DELETE answers, with nothing else happening.
    assert_eq!(server.live(), 0);
    // And after the workers have exited and rmcp has called close_session
    // again for each: still one close per session, every one `deleted`.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.live(), 0);
    let closes = server.closes.each_once();
    assert_eq!(closes.len(), N);
    assert!(closes.values().all(|r| *r == Reason::Deleted), "{closes:?}");
    assert_gone(&client, &ids).await;
    let stats = server.manager.stats();
    assert_eq!(stats.terminated(Reason::Deleted), N as u64);
    assert_eq!(stats.terminated_total(), N as u64);
}

/// Every ended id answers 404, to a call and to a second DELETE.
async fn assert_gone(client: &Client, ids: &[String]) {
    for id in ids {
        let call = client.call(id, "echo", json!({ "text": "late" })).await;
        assert_eq!(call.status, StatusCode::NOT_FOUND, "{call:?}");
        assert_eq!(call.answer().unwrap()["error"]["code"], -32001);
        assert_eq!(client.delete(id).await.status, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn a_sessions_ended_by_delete_leave_nothing() {
    let server = Server::start(|b| b.no_idle_timeout()).await;
    delete_all(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn b_delete_with_an_idle_timeout_configured() {
    let server = Server::start(|b| b.idle_timeout(Duration::from_secs(30))).await;
    delete_all(&server).await;
    assert_eq!(server.closes.count_reason(Reason::IdleTimeout), 0);
    server.stop().await;
}

#[tokio::test]
async fn c_abandoned_sessions_end_by_idle_timeout() {
    let server = Server::start(|b| b.idle_timeout(Duration::from_millis(300))).await;
    let client = server.client();
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
    let closes = server.closes.each_once();
    assert!(
        closes.values().all(|r| *r == Reason::IdleTimeout),
        "{closes:?}"
    );
    assert_gone(&client, &ids).await;
    server.stop().await;
}

#[tokio::test]
async fn d_stateless_version_registers_nothing() {
    let server = Server::start(|b| b).await;
    let client = server.client();
    let post = |body: serde_json::Value, with_id: bool| {
        let mut request = client
            .request(Method::POST)
            .header("content-type", "application/json")
            .header("accept", support::ACCEPT_BOTH)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo");
        if with_id {
            // Even a (bogus) id is neither looked up nor echoed at this version.
            request = request.header(
                "mcp-session-id",
                "0123456789abcdef0123456789abcdef0123456789abcdef",
            );
        }
        request.body(Full::new(body.to_string().into())).unwrap()
    };
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "stateless", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for i in 0..N {
        let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": { "name": "echo", "arguments": { "text": format!("{i}") },
                                       "_meta": meta } });
        let reply = client.send(post(call, i % 2 == 0)).await;
        assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
        assert!(reply.session_id().is_none(), "no id at 2026-07-28");
        let answer = reply.answer().expect("an answer");
        assert_eq!(text_of(&answer), Some(format!("{i}").as_str()), "{answer}");
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
        assert_eq!(
            client.send(request).await.status,
            StatusCode::METHOD_NOT_ALLOWED
        );
    }
    let stats = server.manager.stats();
    assert_eq!((stats.created, stats.live), (0, 0));
    // A 2025 initialize still opens a session (the version decides), which
    // DELETE then ends: the registry saw that one and nothing else.
    let init = client.post(None, &initialize_body("legacy")).await;
    let id = init.session_id().expect("a session at 2025-06-18");
    assert_eq!(client.delete(&id).await.status, StatusCode::ACCEPTED);
    let stats = server.manager.stats();
    assert_eq!((stats.created, stats.live), (1, 0));
    assert_eq!(stats.terminated(Reason::Deleted), 1);
    server.stop().await;
}

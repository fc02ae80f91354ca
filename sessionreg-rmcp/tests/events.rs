//! SSE resumption with and without an event store, as with rmcp's
//! `LocalSessionManager`: rmcp's own client resuming a call's stream that
//! the server closed (SEP-1699) with `Last-Event-ID`; a restarted server
//! replaying a session's events from the shared store; and rmcp's stateless
//! replay of a 2026-07-28 answer, which needs the manager's event store.

mod support;

use axum::extract::Request;
use axum::middleware::{self, Next};
use http::{Method, StatusCode};
use http_body_util::Full;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, ContentBlock,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::EventStore;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use sessionreg_rmcp::RegistrySessionManager;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::stores::{Events, Sessions};
use support::{client, eventually, read_sse, sse_events, sse_ids, text_of, Server};
use tokio::sync::Notify;

/// A tool server whose one tool, `gated`, says it has started and then
/// waits for the test to let it answer.
#[derive(Clone, Default)]
struct Gated {
    entered: Arc<Notify>,
    release: Arc<Notify>,
}

impl ServerHandler for Gated {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.entered.notify_one();
        self.release.notified().await;
        Ok(CallToolResult::success(vec![ContentBlock::text("released")]).into())
    }
}

/// `gated` served on 127.0.0.1:0 with `manager`; counts the requests that
/// carry `Last-Event-ID` (resumptions), each once it has been answered (its
/// stream handed over). Returns the URL and the count.
async fn serve_gated(
    gated: &Gated,
    manager: Arc<RegistrySessionManager>,
) -> (String, Arc<AtomicUsize>) {
    let gated = gated.clone();
    let service = StreamableHttpService::new(
        move || Ok(gated.clone()),
        manager,
        StreamableHttpServerConfig::default(),
    );
    let resumed = Arc::new(AtomicUsize::new(0));
    let count = resumed.clone();
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let resuming = request.headers().contains_key("last-event-id");
            let count = count.clone();
            async move {
                let response = next.run(request).await;
                if resuming {
                    count.fetch_add(1, Ordering::Relaxed);
                }
                response
            }
        }));
    let (url, _stop, _task) = support::serve(router).await;
    (url, resumed)
}

/// rmcp's client calls `gated`; while it runs, the server closes the
/// call's SSE stream (SEP-1699, through the session's handle); once the
/// client has reconnected with `Last-Event-ID`, the call answers, on the
/// resumed stream. Returns how many resumptions there were.
///
/// (The answer waits for the reconnection because rmcp 3.11's worker,
/// whichever manager holds it, drops a request's cache when it routes the
/// answer: an answer sent while no stream is open is lost unless an event
/// store kept it. rmcp's own test of that case accepts an empty replay.)
async fn a_call_resumed_after_its_stream_closed(manager: RegistrySessionManager) -> usize {
    let gated = Gated::default();
    let manager = Arc::new(manager);
    let (url, resumed) = serve_gated(&gated, manager.clone()).await;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let rmcp_client = ClientConfig::default()
        .serve(transport)
        .await
        .expect("initialize");
    let peer = rmcp_client.peer().clone();
    let call =
        tokio::spawn(async move { peer.call_tool(CallToolRequestParams::new("gated")).await });
    gated.entered.notified().await;

    let sessions = manager.sessions();
    assert_eq!(sessions.len(), 1);
    // The session's first request stream is rmcp's number 0 (`initialize`
    // is answered apart from them).
    sessions[0]
        .close_sse_stream(0, Some(Duration::from_millis(10)))
        .await
        .expect("the call's stream is open");
    assert!(eventually(|| resumed.load(Ordering::Relaxed) >= 1).await);
    gated.release.notify_one();

    let result = call
        .await
        .unwrap()
        .expect("the answer, on the resumed stream");
    assert_eq!(result.content[0].as_text().unwrap().text, "released");
    rmcp_client.cancel().await.expect("close");
    resumed.load(Ordering::Relaxed)
}

#[tokio::test]
async fn rmcp_client_resumes_a_closed_stream_from_the_event_store() {
    let events = Events::default();
    let manager = RegistrySessionManager::builder()
        .event_store(Arc::new(events.clone()))
        .build()
        .unwrap();
    let resumed = a_call_resumed_after_its_stream_closed(manager).await;
    assert!(resumed >= 1, "the client came back with Last-Event-ID");
    assert_eq!(
        events.replays.load(Ordering::Relaxed),
        resumed,
        "each resumption replayed from the store"
    );
    assert!(
        events.ids().iter().any(|(_, answer)| *answer),
        "the answer was stored"
    );
}

#[tokio::test]
async fn rmcp_client_resumes_a_closed_stream_from_the_workers_cache() {
    let resumed = a_call_resumed_after_its_stream_closed(RegistrySessionManager::default()).await;
    assert!(resumed >= 1, "the client came back with Last-Event-ID");
}

/// A restarted server (a new manager over the same stores) restores the
/// session and replays, from the event store, what followed the last event
/// its client saw.
#[tokio::test]
async fn a_restarted_server_replays_a_sessions_events_from_the_store() {
    let sessions = Arc::new(Sessions::default());
    let events = Events::default();
    let config = || {
        let mut config = StreamableHttpServerConfig::default();
        config.session_store = Some(sessions.clone());
        config
    };
    let store: Arc<dyn EventStore> = Arc::new(events.clone());
    let first =
        Server::start_configured("127.0.0.1:0", config(), |b| b.event_store(store.clone())).await;
    let raw = client(&first.url);
    let id = raw.open().await;
    let call = raw.call(&id, "echo", json!({ "text": "kept" })).await;
    assert_eq!(text_of(&call.answer().unwrap()), Some("kept"));
    // The call's stream: a priming event, then the answer, both with the
    // store's ids.
    let ids = sse_ids(&call.text());
    assert_eq!(ids.len(), 2, "{}", call.text());
    assert!(ids.iter().all(|(id, _)| id.starts_with("ev-")), "{ids:?}");
    first.stop().await;

    let second =
        Server::start_configured("127.0.0.1:0", config(), |b| b.event_store(store.clone())).await;
    let raw = client(&second.url);
    let mut replay = raw.open_stream(&id, Some(&ids[0].0)).await;
    assert_eq!(replay.status(), StatusCode::OK);
    let (text, ended) = read_sse(replay.body_mut(), Duration::from_secs(20), |_| false).await;
    assert!(ended, "a replay from the store ends: {text}");
    let replayed: Vec<_> = sse_events(&text).into_iter().map(|(_, m)| m).collect();
    assert_eq!(replayed.len(), 1, "{text}");
    assert_eq!(text_of(&replayed[0]), Some("kept"));
    assert_eq!(events.replays.load(Ordering::Relaxed), 1);
    assert_eq!(second.manager.stats().created, 1, "restored");
    second.stop().await;
}

/// A 2026-07-28 `tools/call` (no session) with `Mcp-Method` and friends.
fn modern_call(raw: &support::Client, text: &str) -> http::Request<Full<bytes::Bytes>> {
    let body = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {
            "name": "echo", "arguments": { "text": text },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    });
    raw.request(Method::POST)
        .header("content-type", "application/json")
        .header("accept", support::ACCEPT_BOTH)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .body(Full::from(body.to_string()))
        .unwrap()
}

/// A `GET` without a session at 2026-07-28, resuming after `last`.
fn modern_replay(raw: &support::Client, last: &str) -> http::Request<Full<bytes::Bytes>> {
    raw.request(Method::GET)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("last-event-id", last)
        .body(Full::default())
        .unwrap()
}

/// rmcp persists the answers of 2026-07-28 requests it serves without a
/// session in the manager's event store, and a `GET` with `Last-Event-ID`
/// replays them (on any server sharing the store); without a store, such a
/// `GET` is 405, as with rmcp's own manager.
#[tokio::test]
async fn stateless_answers_are_replayed_from_the_managers_event_store() {
    let events = Events::default();
    let server = Server::start(|b| b.event_store(Arc::new(events.clone()))).await;
    let raw = client(&server.url);
    let answer = raw.send(modern_call(&raw, "stateless")).await;
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    assert!(answer.session_id().is_none());
    assert_eq!(text_of(&answer.answer().unwrap()), Some("stateless"));
    let ids = sse_ids(&answer.text());
    assert!(
        !ids.is_empty(),
        "the events carry the store's ids: {}",
        answer.text()
    );

    let replay = raw.send(modern_replay(&raw, &ids[0].0)).await;
    assert_eq!(replay.status, StatusCode::OK, "{replay:?}");
    assert_eq!(text_of(&replay.answer().unwrap()), Some("stateless"));
    assert_eq!(events.replays.load(Ordering::Relaxed), 1);
    server.stop().await;

    let without = Server::start(|b| b).await;
    let raw = client(&without.url);
    let refused = raw.send(modern_replay(&raw, &ids[0].0)).await;
    assert_eq!(refused.status, StatusCode::METHOD_NOT_ALLOWED);
    without.stop().await;
}

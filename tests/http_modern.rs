//! Protocol version 2026-07-28 (no sessions) over real sockets. Test names
//! cite the sections of that revision's Streamable HTTP page
//! (`basic/transports/streamable-http`).
#![cfg(feature = "http")]

mod http_support;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::Full;
use http_support::{eventually, read_sse, sse_events, with_meta, Answer, Client, Server};
use serde_json::{json, Value};
use sessionreg::http::jsonrpc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A 2026-07-28 POST of `body` with the given extra headers.
fn request(client: &Client, body: &Value, headers: &[(&str, &str)]) -> http::Request<Full<Bytes>> {
    client.modern_request(body.to_string(), headers)
}

async fn post(client: &Client, body: &Value, headers: &[(&str, &str)]) -> Answer {
    client.post_modern(body, headers).await
}

/// A 2026-07-28 `tools/call` of `tool` with its headers.
fn call_request(client: &Client, tool: &str) -> http::Request<Full<Bytes>> {
    request(
        client,
        &call(tool),
        &[("mcp-method", "tools/call"), ("mcp-name", tool)],
    )
}

fn call(tool: &str) -> Value {
    with_meta(json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": { "name": tool, "arguments": { "x": 1 } } }))
}

async fn stateless_server() -> Server {
    Server::start_with(|b| b.serve_modern(true)).await
}

/// Session-less serving is a switch, on by default (both eras on one
/// endpoint); off, the version is unsupported (Protocol Version Header: 400
/// listing the supported ones).
#[tokio::test]
async fn protocol_version_header_modern_serving_can_be_switched_off() {
    let server = Server::start_with(|b| b.serve_modern(false)).await;
    let client = Client::new(&server.url);
    let answer = post(
        &client,
        &call("echo"),
        &[("mcp-method", "tools/call"), ("mcp-name", "echo")],
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let error = &answer.json()["error"];
    assert_eq!(
        error["code"],
        jsonrpc::RpcError::UNSUPPORTED_PROTOCOL_VERSION
    );
    assert_eq!(error["data"]["requested"], "2026-07-28");
    assert!(!error["data"]["supported"]
        .as_array()
        .unwrap()
        .contains(&json!("2026-07-28")));
}

/// Server Validation: headers that disagree with the body, or are missing,
/// are 400 with `HeaderMismatch` (-32020) and the request's id; nothing
/// runs.
#[tokio::test]
async fn server_validation_mismatched_or_missing_headers_are_400_header_mismatch() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    // The issue's case: the header says tools/list, the body calls tools/call.
    for headers in [
        &[("mcp-method", "tools/list"), ("mcp-name", "echo")][..],
        &[("mcp-method", "tools/call"), ("mcp-name", "other")][..],
        &[("mcp-name", "echo")][..],
        &[("mcp-method", "tools/call")][..],
    ] {
        let answer = post(&client, &call("echo"), headers).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{headers:?}");
        let body = answer.json();
        assert_eq!(
            body["error"]["code"],
            jsonrpc::RpcError::HEADER_MISMATCH,
            "{headers:?}"
        );
        assert_eq!(body["id"], 5);
        assert!(body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Header mismatch"));
    }
    // Value Encoding: a Base64-sentinel name is decoded before comparing.
    let answer = post(
        &client,
        &call("echo"),
        &[
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?ZWNobw==?="),
        ],
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["result"]["echo"]["x"], 1);
    assert_eq!(server.created(), 0);
}

/// Protocol Version Header: a method the server does not implement is 404
/// with -32601, telling a modern server from a legacy endpoint.
#[tokio::test]
async fn protocol_version_header_unknown_method_is_404_method_not_found() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    let body = with_meta(json!({ "jsonrpc": "2.0", "id": 9, "method": "no/such" }));
    let answer = post(&client, &body, &[("mcp-method", "no/such")]).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(
        answer.json()["error"]["code"],
        jsonrpc::RpcError::METHOD_NOT_FOUND
    );
    assert_eq!(answer.json()["id"], 9);
}

/// Per-request protocol fields (the `basic` page): a request without its
/// `_meta` protocol version and client capabilities is malformed: 400,
/// -32602; nothing runs.
#[tokio::test]
async fn per_request_protocol_fields_are_required() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    let bare = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": { "name": "hang", "arguments": {} } });
    let answer = post(
        &client,
        &bare,
        &[("mcp-method", "tools/call"), ("mcp-name", "hang")],
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer.json()["error"]["code"],
        jsonrpc::RpcError::INVALID_PARAMS
    );
    assert_eq!(answer.json()["id"], 4);
    assert_eq!(server.probes.started.load(Ordering::SeqCst), 0);
}

/// A member of `params` the layer reads, given twice, is 400 with -32602
/// and the handler never runs (the layer and the application could
/// otherwise read it differently: serde_json keeps the last, other parsers
/// the first). Before, a second `inputResponses` was answered 200.
#[tokio::test]
async fn a_member_the_layer_reads_given_twice_is_refused() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    for params in [
        format!(r#"{{"name":"hang","name":"echo","arguments":{{}},"_meta":{meta}}}"#),
        format!(r#"{{"name":"echo","inputResponses":{{}},"inputResponses":{{}},"_meta":{meta}}}"#),
        format!(r#"{{"name":"echo","requestState":"a","requestState":"b","_meta":{meta}}}"#),
        format!(r#"{{"name":"echo","_meta":{meta},"_meta":{meta}}}"#),
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{params}}}"#);
        let headers = [("mcp-method", "tools/call"), ("mcp-name", "echo")];
        let answer = client.send(client.modern_request(body, &headers)).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{params}");
        assert_eq!(
            answer.json()["error"]["code"],
            jsonrpc::RpcError::INVALID_PARAMS
        );
        assert_eq!(answer.json()["id"], 6);
    }
}

/// Sending Messages: the client must not send JSON-RPC responses;
/// notifications are 202.
#[tokio::test]
async fn sending_messages_responses_are_refused_notifications_accepted() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    let response = json!({ "jsonrpc": "2.0", "id": 1, "result": {} });
    assert_eq!(
        post(&client, &response, &[]).await.status,
        StatusCode::BAD_REQUEST
    );
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(post(&client, &note, &[]).await.status, StatusCode::ACCEPTED);
}

/// Cancellation: closing the connection before the answer cancels the
/// request: its handler is dropped.
#[tokio::test]
async fn cancellation_closing_the_connection_drops_the_handler() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    let pending = client.send_raw(request(
        &client,
        &call("hang"),
        &[("mcp-method", "tools/call"), ("mcp-name", "hang")],
    ));
    let probes = &server.probes;
    tokio::select! {
        _ = pending => panic!("hang answered"),
        true = eventually(|| probes.started.load(Ordering::SeqCst) == 1) => {}
    }
    // The request future (and its connection) is gone now.
    assert!(
        eventually(|| probes.dropped.load(Ordering::SeqCst) == 1).await,
        "the handler was cancelled"
    );
}

/// Cancellation: closing the connection before the answer also cancels the
/// request's token, so work the handler handed elsewhere stops too (the
/// handler is still waiting, on the request's own task, when it goes).
#[tokio::test]
async fn cancellation_closing_the_connection_cancels_the_handed_off_token() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    let pending = client.send_raw(request(
        &client,
        &call("hand_off"),
        &[("mcp-method", "tools/call"), ("mcp-name", "hand_off")],
    ));
    let probes = &server.probes;
    tokio::select! {
        _ = pending => panic!("hand_off answered"),
        true = eventually(|| probes.started.load(Ordering::SeqCst) == 1) => {}
    }
    assert!(
        eventually(|| probes.handed_off_cancelled.load(Ordering::SeqCst) == 1).await,
        "the token handed off was cancelled"
    );
}

/// Cancellation: closing the SSE response stream cancels the request: the
/// handler's reply stream is dropped.
#[tokio::test]
async fn cancellation_closing_the_sse_stream_drops_the_reply_stream() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    let mut response = client
        .send_raw(call_request(&client, "stream_forever"))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (text, _) = read_sse(response.body_mut(), Duration::from_secs(10), |t| {
        !sse_events(t).is_empty()
    })
    .await;
    assert_eq!(sse_events(&text)[0].1["params"]["progress"], 1);
    assert_eq!(server.probes.dropped.load(Ordering::SeqCst), 0);
    drop(response);
    assert!(
        eventually(|| server.probes.dropped.load(Ordering::SeqCst) == 1).await,
        "the reply stream was dropped"
    );
}

/// In a session (2025-11-25), a disconnect is not a cancellation: the
/// handler goes on until the session ends.
#[tokio::test]
async fn in_a_session_a_disconnect_does_not_cancel() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let pending = client.call(&id, "hang", json!({}));
    let probes = &server.probes;
    tokio::select! {
        _ = pending => panic!("hang answered"),
        true = eventually(|| probes.started.load(Ordering::SeqCst) == 1) => {}
    }
    // Another request makes a round trip: time for a cancel to have landed.
    assert_eq!(
        client.call(&id, "echo", json!({})).await.status,
        StatusCode::OK
    );
    assert_eq!(probes.dropped.load(Ordering::SeqCst), 0);
}

/// Backward Compatibility: a 2026-07-28 request carrying a live legacy
/// session's id is served on its own: the id is neither echoed nor used
/// (the handler sees no session state), and the session is left as it was.
#[tokio::test]
async fn backward_compatibility_a_live_sessions_id_on_a_modern_request_is_ignored() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    let session = client.initialize_as("legacy-client").await;
    let body = with_meta(json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                 "params": { "name": "whoami", "arguments": {} } }));
    let answer = post(
        &client,
        &body,
        &[
            ("mcp-method", "tools/call"),
            ("mcp-name", "whoami"),
            ("mcp-session-id", &session),
        ],
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.session_id().is_none(), "never echoed");
    assert_eq!(answer.json()["result"]["state"], Value::Null);
    assert_eq!(answer.json()["result"]["resultType"], "complete");
    assert_eq!((server.created(), server.live()), (1, 1));
    assert_eq!(server.closes.count(), 0);
    // The session still serves its own client.
    assert_eq!(
        client.call(&session, "whoami", json!({})).await.json()["result"]["state"],
        "legacy-client"
    );
}

/// The envelope: the methods 2026-07-28 removed are 404 with -32601 before
/// the application sees them (this one answers `ping` and `initialize`
/// itself), and `server/discover` is the layer's.
#[tokio::test]
async fn the_envelope_answers_removed_methods_and_discovery_itself() {
    let server = stateless_server().await;
    let client = Client::new(&server.url);
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let body = with_meta(json!({ "jsonrpc": "2.0", "id": 8, "method": method }));
        let answer = post(&client, &body, &[("mcp-method", method)]).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{method}");
        assert_eq!(
            answer.json()["error"]["code"],
            jsonrpc::RpcError::METHOD_NOT_FOUND
        );
        assert_eq!(answer.json()["id"], 8);
    }
    let body = with_meta(json!({ "jsonrpc": "2.0", "id": 9, "method": "server/discover" }));
    let answer = post(&client, &body, &[("mcp-method", "server/discover")]).await;
    assert_eq!(answer.status, StatusCode::OK);
    let result = &answer.json()["result"];
    assert_eq!(result["resultType"], "complete");
    let versions = result["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")));
    assert_eq!(server.created(), 0);
}

/// A server whose handler timeout is `ms` milliseconds.
async fn timed_out_after(ms: u64) -> Server {
    Server::start_with(|b| {
        b.serve_modern(true)
            .handler_timeout(Some(Duration::from_millis(ms)))
    })
    .await
}

/// The handler timeout: a handler still waiting when it passes is dropped
/// where it waits, its token cancelled, and the request answered `-32603`
/// with the limit.
#[tokio::test]
async fn a_handler_past_the_timeout_is_dropped_and_answered_with_the_limit() {
    let server = timed_out_after(100).await;
    let client = Client::new(&server.url);
    let answer = post(
        &client,
        &call("hand_off"),
        &[("mcp-method", "tools/call"), ("mcp-name", "hand_off")],
    )
    .await;
    let error = &answer.json()["error"];
    assert_eq!(
        error["code"],
        jsonrpc::RpcError::INTERNAL_ERROR,
        "{answer:?}"
    );
    assert_eq!(error["data"]["timeoutMs"], 100);
    let probes = &server.probes;
    assert!(
        eventually(|| probes.handed_off_cancelled.load(Ordering::SeqCst) == 1).await,
        "the token handed off was cancelled"
    );
}

/// The handler timeout bounds a streamed reply too, from when its handler
/// began: past it, the stream gets the error with the limit and ends, and
/// the reply stream is dropped.
#[tokio::test]
async fn a_streamed_reply_past_the_timeout_ends_with_the_limit() {
    let server = timed_out_after(300).await;
    let client = Client::new(&server.url);
    let mut response = client
        .send_raw(call_request(&client, "stream_forever"))
        .await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (text, _) = read_sse(response.body_mut(), Duration::from_secs(10), |t| {
        sse_events(t).iter().any(|(_, m)| m.get("error").is_some())
    })
    .await;
    let events = sse_events(&text);
    let last = &events.last().expect("an event").1;
    assert_eq!(last["id"], 5, "{text}");
    assert_eq!(last["error"]["code"], jsonrpc::RpcError::INTERNAL_ERROR);
    assert_eq!(last["error"]["data"]["timeoutMs"], 300);
    assert!(
        eventually(|| server.probes.dropped.load(Ordering::SeqCst) == 1).await,
        "the reply stream was dropped"
    );
}

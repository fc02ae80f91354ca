//! One test per status-code rule of the streamable-HTTP transport, over
//! real sockets.
#![cfg(feature = "http")]

mod http_support;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;
use http_support::{
    assert_clean, assert_refused_initialize, eventually, id_parts, init_text, initialize_body,
    post_raw, read_sse, served, sse_events, Client, Server, ACCEPT_BOTH, JSON_BOTH,
};
use serde_json::{json, Value};
use sessionreg::http::jsonrpc;
use sessionreg::{Miss, Reason};
use std::time::Duration;

/// A client that goes before its `initialize` is answered takes the
/// handler with it (the work ran on the request's own task: nobody could
/// learn the session's id any more); the session it made idles out like
/// any unused one, and the server serves on.
#[tokio::test]
async fn a_client_gone_before_its_initialize_is_answered_drops_the_handler() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let probes = &server.probes;
    let body = initialize_body("hang-initialize");
    tokio::select! {
        _ = client.post(None, &body) => panic!("answered"),
        true = eventually(|| probes.started.load(std::sync::atomic::Ordering::SeqCst) == 1) => {}
    }
    assert!(
        eventually(|| probes.dropped.load(std::sync::atomic::Ordering::SeqCst) == 1).await,
        "the initialize handler was dropped with its request"
    );
    assert!(!client.initialize().await.is_empty());
}

#[tokio::test]
async fn initialize_answers_with_a_session_id() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let answer = client.post(None, &initialize_body("client")).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.headers["content-type"], "application/json");
    let id = answer.session_id().unwrap();
    assert_eq!(id.len(), 48);
    assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    assert_eq!(answer.json()["id"], 1);
    assert_eq!(server.live(), 1);
}

#[tokio::test]
async fn wrong_content_type_is_415_and_creates_nothing() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let answer = post_raw(
        &client,
        &[("content-type", "text/plain"), ("accept", ACCEPT_BOTH)],
        init_text(),
    )
    .await;
    assert_refused_initialize(&server, &answer, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
    let answer = post_raw(&client, &[("accept", ACCEPT_BOTH)], init_text()).await;
    assert_refused_initialize(&server, &answer, StatusCode::UNSUPPORTED_MEDIA_TYPE).await;
}

#[tokio::test]
async fn insufficient_accept_is_406_and_creates_nothing() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    for accept in [
        None,
        Some("application/json"),
        Some("text/event-stream"),
        Some("text/html"),
    ] {
        let mut headers = vec![("content-type", "application/json")];
        if let Some(accept) = accept {
            headers.push(("accept", accept));
        }
        let answer = post_raw(&client, &headers, init_text()).await;
        assert_refused_initialize(&server, &answer, StatusCode::NOT_ACCEPTABLE).await;
    }
    // GET needs text/event-stream.
    let id = client.initialize().await;
    let request = client
        .request(Method::GET)
        .header("accept", "application/json")
        .header("mcp-session-id", &id)
        .body(Full::default())
        .unwrap();
    assert_eq!(
        client.send(request).await.status,
        StatusCode::NOT_ACCEPTABLE
    );
}

#[tokio::test]
async fn bad_json_is_400_with_a_parse_error() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let answer = post_raw(
        &client,
        &JSON_BOTH,
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
    )
    .await;
    assert_refused_initialize(&server, &answer, StatusCode::BAD_REQUEST).await;
    assert_eq!(
        answer.json()["error"]["code"],
        jsonrpc::RpcError::PARSE_ERROR
    );
    // Valid JSON, not JSON-RPC: invalid request.
    for body in [r#"{"id":1,"method":"initialize"}"#, r#"[]"#, r#"42"#] {
        let answer = post_raw(&client, &JSON_BOTH, body).await;
        assert_refused_initialize(&server, &answer, StatusCode::BAD_REQUEST).await;
        assert_eq!(
            answer.json()["error"]["code"],
            jsonrpc::RpcError::INVALID_REQUEST,
            "{body}"
        );
    }
}

/// An `initialize` carrying 2026-07-28's per-request `_meta` but no
/// `MCP-Protocol-Version` header is a modern request that forgot its
/// header: refused as one (HeaderMismatch), no session made.
#[tokio::test]
async fn initialize_with_the_modern_meta_and_no_version_header_is_refused() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let mut body = initialize_body("client");
    body["params"]["_meta"] = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
    let answer = client.post(None, &body).await;
    assert_refused_initialize(&server, &answer, StatusCode::BAD_REQUEST).await;
    assert_eq!(
        answer.json()["error"]["code"],
        jsonrpc::RpcError::HEADER_MISMATCH
    );
    // Any other `_meta` is an initialize's own business.
    body["params"]["_meta"] = json!({ "progressToken": 1 });
    let answer = client.post(None, &body).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.session_id().is_some());
}

#[tokio::test]
async fn initialize_without_a_protocol_version_is_400_and_creates_nothing() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    for params in [
        None,
        Some(json!({})),
        Some(json!({ "protocolVersion": 2025 })),
    ] {
        let mut body = initialize_body("client");
        match params {
            Some(params) => body["params"] = params,
            None => drop(body.as_object_mut().unwrap().remove("params")),
        }
        let answer = client.post(None, &body).await;
        assert_refused_initialize(&server, &answer, StatusCode::BAD_REQUEST).await;
        assert_eq!(
            answer.json()["error"]["code"],
            jsonrpc::RpcError::INVALID_PARAMS
        );
    }
}

#[tokio::test]
async fn oversized_body_is_413_and_creates_nothing() {
    let server = Server::start_with(|b| b.max_body_bytes(1024)).await;
    let client = Client::new(&server.url);
    let mut body = initialize_body("client");
    body["params"]["padding"] = Value::String("x".repeat(2000));
    let answer = post_raw(&client, &JSON_BOTH, body.to_string()).await;
    assert_refused_initialize(&server, &answer, StatusCode::PAYLOAD_TOO_LARGE).await;
    // Without a Content-Length (chunked), the limit still holds.
    let chunks = futures_util::stream::iter((0..8).map(|_| {
        Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(vec![b' '; 512])))
    }));
    let request = client
        .request(Method::POST)
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .body(http_body_util::StreamBody::new(chunks))
        .unwrap();
    let response =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http()
            .request(request)
            .await
            .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(server.created(), 0);
    // A declared length over the limit is refused before any of the body
    // is read (the client never sends one byte of it).
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut raw = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
             accept: {ACCEPT_BOTH}\r\ncontent-length: 1025\r\n\r\n",
            server.addr
        );
        raw.write_all(head.as_bytes()).await.unwrap();
        let mut sent = vec![0u8; 12];
        tokio::time::timeout(Duration::from_secs(30), raw.read_exact(&mut sent))
            .await
            .expect("answered before the body")
            .unwrap();
        assert_eq!(&sent, b"HTTP/1.1 413");
    }
    // Under the limit is fine.
    client.initialize().await;
}

#[tokio::test]
async fn unsupported_protocol_version_is_400_and_supported_ones_pass() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let mut headers = JSON_BOTH.to_vec();
    headers.push(("mcp-protocol-version", "1999-01-01"));
    let answer = post_raw(&client, &headers, init_text()).await;
    assert_refused_initialize(&server, &answer, StatusCode::BAD_REQUEST).await;

    let id = client.initialize().await;
    let ping = json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" }).to_string();
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut headers = JSON_BOTH.to_vec();
        headers.push(("mcp-protocol-version", version));
        headers.push(("mcp-session-id", &id));
        let answer = post_raw(&client, &headers, ping.clone()).await;
        assert_eq!(answer.status, StatusCode::OK, "{version}");
    }
    let mut headers = JSON_BOTH.to_vec();
    headers.push(("mcp-protocol-version", "2025-13-01"));
    headers.push(("mcp-session-id", &id));
    assert_eq!(
        post_raw(&client, &headers, ping).await.status,
        StatusCode::BAD_REQUEST
    );
    // DELETE is checked too.
    let request = client
        .request(Method::DELETE)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "nope")
        .body(Full::default())
        .unwrap();
    assert_eq!(client.send(request).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(server.live(), 1);

    // The refusal lists the versions served (the modern one only when it
    // is served), and echoes the one asked for.
    for modern in [false, true] {
        let server = Server::start_with(|b| b.serve_modern(modern)).await;
        let client = Client::new(&server.url).with_header("mcp-protocol-version", "1999-01-01");
        let answer = client.post(None, &initialize_body("c")).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST);
        let error = &answer.json()["error"];
        assert_eq!(
            error["code"],
            jsonrpc::RpcError::UNSUPPORTED_PROTOCOL_VERSION
        );
        assert_eq!(error["data"]["requested"], "1999-01-01");
        let supported: Vec<&str> = error["data"]["supported"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(supported.contains(&"2025-11-25") && supported.contains(&"2024-11-05"));
        assert_eq!(supported.contains(&"2026-07-28"), modern, "{supported:?}");
    }
}

#[tokio::test]
async fn other_methods_are_405_with_allow() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    for method in [Method::PUT, Method::PATCH, Method::OPTIONS] {
        let answer = client
            .send(
                client
                    .request(method.clone())
                    .body(Full::default())
                    .unwrap(),
            )
            .await;
        assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(answer.headers["allow"], "GET, POST, DELETE");
    }
    assert_eq!(server.created(), 0);
    // With the standalone stream disabled, GET is 405 too.
    let server = Server::start_with(|b| b.standalone_stream(false)).await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let answer = client.open_stream(&id, None).await;
    assert_eq!(answer.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(answer.headers()["allow"], "POST, DELETE");
}

#[tokio::test]
async fn requests_without_a_session_id_are_400() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    client.initialize().await;
    let ping = json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" });
    assert_eq!(
        client.post(None, &ping).await.status,
        StatusCode::BAD_REQUEST
    );
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(
        client.post(None, &note).await.status,
        StatusCode::BAD_REQUEST
    );
    let get = client
        .request(Method::GET)
        .header("accept", "text/event-stream")
        .body(Full::default())
        .unwrap();
    assert_eq!(client.send(get).await.status, StatusCode::BAD_REQUEST);
    let delete = client
        .request(Method::DELETE)
        .body(Full::default())
        .unwrap();
    assert_eq!(client.send(delete).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(server.created(), 1);
    assert_eq!(server.live(), 1);
}

/// Every kind of bad id gets 404 with a JSON-RPC error body, and is counted
/// under its cause.
#[tokio::test]
async fn bad_ids_are_404_with_a_json_rpc_error() {
    let server = Server::start_with(|b| {
        b.idle_timeout(Some(Duration::from_millis(100)))
            // No reaper sweep but the test's own: the lookup finds it expired.
            .reap_interval(Duration::from_secs(3600))
    })
    .await;
    let client = Client::new(&server.url);
    let live = client.initialize().await;

    let mut forged = live.clone().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
    let forged = String::from_utf8(forged).unwrap();
    let unknown = format!("000000000fffffff{}", &live[16..]);
    let stale = client.initialize().await;
    assert_eq!(client.delete(&stale).await.status, StatusCode::OK);

    let cases = [
        ("malformed", "not-a-session-id".to_string(), Miss::Malformed),
        ("unknown", unknown, Miss::Unknown),
        ("forged", forged, Miss::Forged),
    ];
    for (what, id, cause) in &cases {
        let before = server.manager.stats().misses(*cause);
        let answer = client.call(id, "echo", json!({})).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{what}");
        assert_eq!(
            answer.json()["error"]["code"],
            jsonrpc::RpcError::SESSION_NOT_FOUND,
            "{what}"
        );
        assert!(
            server.manager.stats().misses(*cause) > before,
            "{what} counted"
        );
    }
    // Terminated (stale generation after reuse, or just ended).
    let answer = client.call(&stale, "echo", json!({})).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(
        answer.json()["error"]["code"],
        jsonrpc::RpcError::SESSION_NOT_FOUND
    );
    // GET and DELETE with bad ids: 404 too.
    for (_, id, _) in &cases {
        assert_eq!(
            client.open_stream(id, None).await.status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(client.delete(id).await.status, StatusCode::NOT_FOUND);
    }
    // The live one is untouched by all that.
    assert_eq!(
        client.call(&live, "echo", json!({})).await.status,
        StatusCode::OK
    );
    // Expired: idle past the timeout, found by the lookup. No hot path reads
    // the clock: a sweep starts the idle time of `live` (its last request
    // ended without a reading), and a lookup decides with the latest
    // reading taken, here a touch of another session 250 ms later.
    let other = client.initialize().await;
    let registry = server.manager.registry();
    assert_eq!(registry.reap_idle(), 0);
    tokio::time::sleep(Duration::from_millis(250)).await;
    registry.get(&other.parse().unwrap()).unwrap().touch();
    let before = server.manager.stats().misses(Miss::Expired);
    let answer = client.call(&live, "echo", json!({})).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(server.manager.stats().misses(Miss::Expired), before + 1);
    assert_eq!(server.closes.count_reason(Reason::IdleTimeout), 1);
    assert_eq!(server.live(), 1, "the touched session lives on");
}

#[tokio::test]
async fn delete_is_200_then_404() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    assert_eq!(server.live(), 0);
    assert_eq!(server.closes.count_reason(Reason::Deleted), 1);
    let again = client.delete(&id).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    assert_eq!(
        again.json()["error"]["code"],
        jsonrpc::RpcError::SESSION_NOT_FOUND
    );
    assert_eq!(server.closes.count(), 1);
}

#[tokio::test]
async fn notifications_and_responses_are_202() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let answer = client.initialized(&id).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert!(answer.body.is_empty());
    let response = json!({ "jsonrpc": "2.0", "id": "server-1", "result": {} });
    assert_eq!(
        client.post(Some(&id), &response).await.status,
        StatusCode::ACCEPTED
    );
    let error =
        json!({ "jsonrpc": "2.0", "id": "server-2", "error": { "code": 1, "message": "no" } });
    assert_eq!(
        client.post(Some(&id), &error).await.status,
        StatusCode::ACCEPTED
    );
    // A request gets its JSON response, with its id.
    let answer = client
        .post(
            Some(&id),
            &json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" }),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["id"], "p");
}

#[tokio::test]
async fn initialize_with_a_session_id_is_400() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let answer = client.post(Some(&id), &initialize_body("again")).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(server.created(), 1);
}

#[tokio::test]
async fn refused_open_creates_nothing() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let answer = client.post(None, &initialize_body("refuse-open")).await;
    assert_refused_initialize(&server, &answer, StatusCode::BAD_REQUEST).await;
    assert_eq!(answer.json()["error"]["code"], -32000);
    assert_eq!(server.closes.count(), 0);
}

#[tokio::test]
async fn initialize_answered_with_an_error_ends_the_session_rejected() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let answer = client
        .post(None, &initialize_body("reject-initialize"))
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.session_id().is_none());
    assert_eq!(server.live(), 0);
    assert_eq!(server.manager.stats().terminated(Reason::Rejected), 1);
    assert_eq!(server.closes.count_reason(Reason::Rejected), 1);
}

#[tokio::test]
async fn capacity_is_503_with_retry_after_and_creates_nothing() {
    let server = Server::start_with(|b| b.capacity(3)).await;
    let client = Client::new(&server.url);
    let ids = [
        client.initialize().await,
        client.initialize().await,
        client.initialize().await,
    ];
    for _ in 0..5 {
        let answer = client.post(None, &initialize_body("one-too-many")).await;
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(answer.headers["retry-after"], "1");
        assert!(answer.session_id().is_none());
    }
    assert_eq!(server.created(), 3);
    assert_eq!(server.live(), 3);
    // The live sessions are not evicted...
    for id in &ids {
        assert_eq!(
            client.call(id, "echo", json!({})).await.status,
            StatusCode::OK
        );
    }
    // ...and room comes back when one ends.
    assert_eq!(client.delete(&ids[0]).await.status, StatusCode::OK);
    client.initialize().await;
    assert_eq!(server.live(), 3);
}

#[tokio::test]
async fn standalone_stream_second_is_409_and_keep_alives_flow() {
    let server = Server::start_with(|b| b.sse_keep_alive(Some(Duration::from_millis(50)))).await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let mut first = client.open_stream(&id, None).await;
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(first.headers()["content-type"], "text/event-stream");
    let second = client.open_stream(&id, None).await;
    assert_eq!(second.status(), StatusCode::CONFLICT);
    let (text, ended) = read_sse(first.body_mut(), Duration::from_secs(10), |t| {
        t.contains(": keep-alive")
    })
    .await;
    assert!(!ended && text.starts_with(": keep-alive"), "{text:?}");
    // Another session has its own stream.
    let other = client.initialize().await;
    assert_eq!(
        client.open_stream(&other, None).await.status(),
        StatusCode::OK
    );
    // Once the first stream is gone, a new one may open.
    drop(first);
    let client2 = Client::new(&server.url);
    assert!(
        eventually_async(|| async {
            client2.open_stream(&id, None).await.status() == StatusCode::OK
        })
        .await,
        "a new stream opens after the old one dropped"
    );
}

async fn eventually_async<F: std::future::Future<Output = bool>>(mut f: impl FnMut() -> F) -> bool {
    for _ in 0..200 {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// An open GET stream counts as in flight: the session does not idle out
/// under it. When it drops, the session stays, and its idle clock runs.
#[tokio::test]
async fn dropped_stream_keeps_the_session_but_starts_its_idle_clock() {
    let server = Server::start_with(|b| b.idle_timeout(Some(Duration::from_millis(200)))).await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let stream = client.open_stream(&id, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    // Well past the timeout with the stream open: still live.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        server.live(),
        1,
        "an open stream keeps the session from idling out"
    );
    // Dropping the stream does not end the session.
    drop(stream);
    assert_eq!(server.closes.count(), 0);
    // ...but it does start the idle clock.
    assert!(eventually(|| server.live() == 0).await);
    // The close callback runs just after the live count drops, on the
    // reaper's thread: wait for it.
    assert!(eventually(|| server.closes.count_reason(Reason::IdleTimeout) == 1).await);
    assert_eq!(server.closes.count(), 1);
}

#[tokio::test]
async fn stream_survives_a_dropped_stream_and_posts_still_work() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let stream = client.open_stream(&id, None).await;
    drop(stream);
    assert_eq!(
        client.call(&id, "echo", json!({ "x": 1 })).await.status,
        StatusCode::OK
    );
    assert_eq!(server.live(), 1);
}

#[tokio::test]
async fn a_request_may_be_answered_with_an_sse_stream() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let answer = client.call(&id, "stream", json!({})).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.headers["content-type"], "text/event-stream");
    let events = sse_events(std::str::from_utf8(&answer.body).unwrap());
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].1["result"]["streamed"], true);
    assert_eq!(events[2].1["id"], 7);
    let ids: Vec<(u64, u64)> = events
        .iter()
        .map(|(id, _)| id_parts(id.as_deref().unwrap()))
        .collect();
    // One stream of its own (not the standalone 0), counted from 1.
    assert!(ids
        .iter()
        .all(|(stream, _)| *stream == ids[0].0 && *stream != 0));
    assert_eq!(
        ids.iter().map(|(_, seq)| *seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
}

#[tokio::test]
async fn metrics_text_has_the_stable_names() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    client.delete(&id).await;
    let text = server.manager.metrics();
    for line in [
        "# TYPE sessionreg_sessions_live gauge",
        "sessionreg_sessions_live 0",
        "# TYPE sessionreg_sessions_created_total counter",
        "sessionreg_sessions_created_total 1",
        "# TYPE sessionreg_sessions_terminated_total counter",
        "sessionreg_sessions_terminated_total{reason=\"deleted\"} 1",
        "# TYPE sessionreg_lookups_rejected_total counter",
        "# TYPE sessionreg_sessions_capacity gauge",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?}");
    }
}

/// The manager is a `tower_service::Service` (what axum's `route_service`
/// mounts): the same rules apply through it.
#[tokio::test]
async fn usable_as_a_tower_service() {
    use tower_service::Service;
    let server = Server::start().await;
    let mut service = server.manager.clone();
    std::future::poll_fn(|cx| Service::<http::Request<Full<Bytes>>>::poll_ready(&mut service, cx))
        .await
        .unwrap();
    let request = http::Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", ACCEPT_BOTH)
        .body(Full::new(Bytes::from(init_text())))
        .unwrap();
    let response = service.call(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let delete = http::Request::delete("/mcp")
        .header("mcp-session-id", &id)
        .body(Full::<Bytes>::default())
        .unwrap();
    assert_eq!(service.call(delete).await.unwrap().status(), StatusCode::OK);
    assert_eq!(server.live(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_oversized_non_ascii_and_duplicated_session_ids() {
    let server = Server::start_short(|b| b).await;
    let client = server.client();
    let id = client.initialize().await;
    let oversized = "a".repeat(40_000);
    let non_ascii = b"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
    let bad: [(&[&[u8]], StatusCode); 6] = [
        (&[b"zz"], StatusCode::NOT_FOUND),
        (&[oversized.as_bytes()], StatusCode::NOT_FOUND),
        (&[non_ascii], StatusCode::NOT_FOUND),
        (&[&id.as_bytes()[..31]], StatusCode::NOT_FOUND),
        (&[id.as_bytes(), id.as_bytes()], StatusCode::BAD_REQUEST),
        (&[id.as_bytes(), b"zz"], StatusCode::BAD_REQUEST),
    ];
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }).to_string();
    for (values, status) in bad {
        for method in [Method::POST, Method::GET, Method::DELETE] {
            let mut request = client
                .request(method.clone())
                .header("content-type", "application/json")
                .header("accept", ACCEPT_BOTH);
            for value in values {
                request = request.header(
                    "mcp-session-id",
                    http::HeaderValue::from_bytes(value).unwrap(),
                );
            }
            let body = if method == Method::POST {
                call.clone()
            } else {
                String::new()
            };
            let answer = client
                .send(request.body(Full::new(Bytes::from(body))).unwrap())
                .await;
            assert_eq!(answer.status, status, "{method} with {values:?}");
            assert!(answer.json()["error"]["code"].is_i64());
        }
    }
    // None of it touched the real session.
    assert_eq!(
        client.call(&id, "echo", json!({})).await.status,
        StatusCode::OK
    );
    served(&server).await;
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    drop(client);
    assert_clean(&server).await;
}

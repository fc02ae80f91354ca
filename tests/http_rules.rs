//! One test per status-code rule of the streamable-HTTP transport, over
//! real sockets.
#![cfg(feature = "http")]

mod http_support;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;
use http_support::{
    eventually, id_parts, initialize_body, read_sse, sse_events, Answer, Client, Server,
    ACCEPT_BOTH,
};
use serde_json::{json, Value};
use sessionreg::http::{jsonrpc, RebindingProtection};
use sessionreg::{Reason, Rejection};
use std::time::Duration;

/// A POST to the endpoint with the given headers and raw body.
async fn post_raw(client: &Client, headers: &[(&str, &str)], body: impl Into<Bytes>) -> Answer {
    let mut request = client.request(Method::POST);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    client
        .send(request.body(Full::new(body.into())).unwrap())
        .await
}

const JSON_BOTH: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", ACCEPT_BOTH),
];

fn init_text() -> String {
    initialize_body("client").to_string()
}

/// A first request that is refused: `status`, no id echoed, nothing created.
async fn assert_refused_initialize(server: &Server, answer: &Answer, status: StatusCode) {
    assert_eq!(answer.status, status, "body: {:?}", answer.body);
    assert!(
        answer.session_id().is_none(),
        "a refused first request echoes no id"
    );
    assert_eq!(
        server.created(),
        0,
        "a refused first request creates nothing"
    );
    assert_eq!(server.live(), 0);
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
    assert_eq!(answer.json()["error"]["code"], jsonrpc::PARSE_ERROR);
    // Valid JSON, not JSON-RPC: invalid request.
    for body in [r#"{"id":1,"method":"initialize"}"#, r#"[]"#, r#"42"#] {
        let answer = post_raw(&client, &JSON_BOTH, body).await;
        assert_refused_initialize(&server, &answer, StatusCode::BAD_REQUEST).await;
        assert_eq!(
            answer.json()["error"]["code"],
            jsonrpc::INVALID_REQUEST,
            "{body}"
        );
    }
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
        assert_eq!(answer.json()["error"]["code"], jsonrpc::INVALID_PARAMS);
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
        b.idle_timeout(Duration::from_millis(100))
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
        (
            "malformed",
            "not-a-session-id".to_string(),
            Rejection::Malformed,
        ),
        ("unknown", unknown, Rejection::Unknown),
        ("forged", forged, Rejection::Forged),
    ];
    for (what, id, cause) in &cases {
        let before = server.manager.stats().rejected(*cause);
        let answer = client.call(id, "echo", json!({})).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{what}");
        assert_eq!(
            answer.json()["error"]["code"],
            jsonrpc::SESSION_NOT_FOUND,
            "{what}"
        );
        assert!(
            server.manager.stats().rejected(*cause) > before,
            "{what} counted"
        );
    }
    // Terminated (stale generation after reuse, or just ended).
    let answer = client.call(&stale, "echo", json!({})).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(answer.json()["error"]["code"], jsonrpc::SESSION_NOT_FOUND);
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
    let before = server.manager.stats().rejected(Rejection::Expired);
    let answer = client.call(&live, "echo", json!({})).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(
        server.manager.stats().rejected(Rejection::Expired),
        before + 1
    );
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
    assert_eq!(again.json()["error"]["code"], jsonrpc::SESSION_NOT_FOUND);
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
    let server = Server::start_with(|b| b.keep_alive(Some(Duration::from_millis(50)))).await;
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
    let server = Server::start_with(|b| b.idle_timeout(Duration::from_millis(200))).await;
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
    assert_eq!(server.closes.count_reason(Reason::IdleTimeout), 1);
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
async fn server_messages_have_unique_ids_and_resume_with_last_event_id() {
    let server = Server::start_with(|b| b.event_log(16)).await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let mut stream = client.open_stream(&id, None).await;
    let answer = client.call(&id, "notify", json!({ "n": 3 })).await;
    assert_eq!(answer.json()["result"]["delivered"], 3);
    let (text, _) = read_sse(stream.body_mut(), Duration::from_secs(10), |t| {
        sse_events(t).len() >= 3
    })
    .await;
    let events = sse_events(&text);
    let ids: Vec<(u64, u64)> = events
        .iter()
        .map(|(id, _)| id_parts(id.as_deref().expect("every event has an id")))
        .collect();
    assert_eq!(ids.len(), 3);
    // The standalone stream is stream 0; its events count from 1.
    assert_eq!(ids, [(0, 1), (0, 2), (0, 3)]);
    drop(stream);
    // Two more while the client has no stream (the server may not have
    // noticed yet; either way the log keeps them).
    let answer = client.call(&id, "notify", json!({ "n": 2 })).await;
    assert_eq!(answer.status, StatusCode::OK);
    let last = events[2].0.clone().unwrap();
    // 409 until the server has seen the old connection go.
    let mut resumed = None;
    for _ in 0..500 {
        let response = client.open_stream(&id, Some(&last)).await;
        if response.status() != StatusCode::CONFLICT {
            resumed = Some(response);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut resumed = resumed.expect("the old stream was noticed gone");
    assert_eq!(resumed.status(), StatusCode::OK);
    let (text, _) = read_sse(resumed.body_mut(), Duration::from_secs(10), |t| {
        sse_events(t).len() >= 2
    })
    .await;
    let replayed = sse_events(&text);
    assert_eq!(replayed.len(), 2, "{text:?}");
    let replayed_ids: Vec<(u64, u64)> = replayed
        .iter()
        .map(|(id, _)| id_parts(id.as_deref().unwrap()))
        .collect();
    assert_eq!(replayed_ids, [(0, 4), (0, 5)]);
    assert_eq!(replayed[0].1["params"]["i"], 0);
    assert_eq!(replayed[1].1["params"]["i"], 1);
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

async fn with_headers(client: &Client, headers: &[(&str, &str)]) -> Answer {
    let mut all = JSON_BOTH.to_vec();
    all.extend_from_slice(headers);
    post_raw(client, &all, init_text()).await
}

#[tokio::test]
async fn foreign_host_or_origin_is_403_by_default_on_loopback() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let answer = with_headers(&client, &[("host", "evil.example.com")]).await;
    assert_refused_initialize(&server, &answer, StatusCode::FORBIDDEN).await;
    let answer = with_headers(&client, &[("origin", "https://evil.example.com")]).await;
    assert_refused_initialize(&server, &answer, StatusCode::FORBIDDEN).await;
    let answer = with_headers(&client, &[("origin", "null")]).await;
    assert_refused_initialize(&server, &answer, StatusCode::FORBIDDEN).await;
    // Loopback hosts and origins are fine.
    let port = server.addr.port().to_string();
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        assert_eq!(
            with_headers(&client, &[("host", &host)]).await.status,
            StatusCode::OK,
            "{host}"
        );
    }
    let origin = format!("http://localhost:{port}");
    assert_eq!(
        with_headers(&client, &[("origin", &origin)]).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn allow_lists_and_protection_off() {
    let server = Server::start_with(|b| b.allow_origin("https://app.example")).await;
    let client = Client::new(&server.url);
    assert_eq!(
        with_headers(&client, &[("origin", "https://app.example")])
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        with_headers(&client, &[("origin", "https://other.example")])
            .await
            .status,
        StatusCode::FORBIDDEN
    );

    let server = Server::start_with(|b| b.rebinding_protection(RebindingProtection::Off)).await;
    let client = Client::new(&server.url);
    assert_eq!(
        with_headers(&client, &[("host", "evil.example.com")])
            .await
            .status,
        StatusCode::OK
    );

    let server = Server::start_with(|b| {
        b.rebinding_protection(RebindingProtection::Off)
            .allow_host("mcp.example")
    })
    .await;
    let client = Client::new(&server.url);
    assert_eq!(
        with_headers(&client, &[("host", "mcp.example:443")])
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        with_headers(&client, &[("host", "evil.example.com")])
            .await
            .status,
        StatusCode::FORBIDDEN
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

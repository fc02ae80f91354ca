//! Resumable SSE streams per MCP 2025-11-25 ("Resumability and
//! Redelivery", "Sending Messages to the Server" 6), over real sockets.
#![cfg(feature = "http")]

mod http_support;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::Full;
use http_support::{id_parts, read_sse, sse_events, sse_ids, Client, Server, ACCEPT_BOTH};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

async fn server() -> Server {
    Server::start_with(|b| {
        b.event_log_events(64)
            .sse_retry(Some(Duration::from_millis(250)))
    })
    .await
}

/// A tools/call at `version`, with the body left unread.
async fn call_raw(
    client: &Client,
    session: &str,
    version: &str,
    tool: &str,
    arguments: Value,
) -> http::Response<hyper::body::Incoming> {
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": { "name": tool, "arguments": arguments } });
    client
        .send_raw(
            client
                .request(Method::POST)
                .header("content-type", "application/json")
                .header("accept", ACCEPT_BOTH)
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", version)
                .body(Full::new(Bytes::from(body.to_string())))
                .unwrap(),
        )
        .await
}

/// GET with `Last-Event-ID` at 2025-11-25.
async fn resume(
    client: &Client,
    session: &str,
    last: &str,
) -> http::Response<hyper::body::Incoming> {
    client
        .send_raw(
            client
                .request(Method::GET)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25")
                .header("last-event-id", last)
                .body(Full::default())
                .unwrap(),
        )
        .await
}

fn has_result(text: &str) -> bool {
    sse_events(text)
        .iter()
        .any(|(_, m)| m.get("result").is_some())
}

/// Priming: an id and empty data first, with `retry`, for clients at
/// 2025-11-25; none for older ones.
#[tokio::test]
async fn post_streams_start_with_a_priming_event_for_2025_11_25_clients() {
    let server = server().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let response = call_raw(&client, &id, "2025-11-25", "stream", json!({})).await;
    let text = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let text = std::str::from_utf8(&text).unwrap();
    let ids = sse_ids(text);
    let (stream, seq) = id_parts(&ids[0].0);
    assert_eq!((seq, ids[0].1), (0, Some(250)), "{text:?}");
    assert!(text.starts_with(&format!("id: {stream}-0\nretry: 250\ndata: \n\n")));
    assert_eq!(sse_events(text).len(), 3);
    // 2025-06-18 clients get no priming event.
    let response = call_raw(&client, &id, "2025-06-18", "stream", json!({})).await;
    let text = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let ids = sse_ids(std::str::from_utf8(&text).unwrap());
    assert!(ids
        .iter()
        .all(|(id, retry)| id_parts(id).1 > 0 && retry.is_none()));
    // The standalone stream primes too.
    let mut standalone = resume_none(&client, &id).await;
    let (text, _) = read_sse(standalone.body_mut(), WAIT, |t| !sse_ids(t).is_empty()).await;
    assert_eq!(sse_ids(&text)[0], ("0-0".to_string(), Some(250)));
}

async fn resume_none(client: &Client, session: &str) -> http::Response<hyper::body::Incoming> {
    client
        .send_raw(
            client
                .request(Method::GET)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25")
                .body(Full::default())
                .unwrap(),
        )
        .await
}

/// SSE polling: the server closes the POST stream's connection mid-call;
/// the client resumes with GET + Last-Event-ID and gets the rest of that
/// stream, and only of that stream.
#[tokio::test]
async fn a_post_stream_closed_mid_call_resumes_with_its_own_events_only() {
    let server = server().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    // Standalone events before and during the call: they must not show up
    // in the POST stream's replay.
    let mut standalone = resume_none(&client, &id).await;
    assert_eq!(
        client.call(&id, "notify", json!({ "n": 2 })).await.json()["result"]["delivered"],
        2
    );
    let response = call_raw(
        &client,
        &id,
        "2025-11-25",
        "slow_stream",
        json!({ "n": 3, "ms": 30, "close": true }),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let first = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let first = std::str::from_utf8(&first).unwrap();
    let ids = sse_ids(first);
    assert_eq!(
        ids.len(),
        1,
        "only the priming event before the close: {first:?}"
    );
    let priming = ids[0].0.clone();
    let (stream, _) = id_parts(&priming);
    assert_ne!(stream, 0);
    client.call(&id, "notify", json!({ "n": 2 })).await;

    let mut resumed = resume(&client, &id, &priming).await;
    assert_eq!(resumed.status(), StatusCode::OK);
    let (text, ended) = read_sse(resumed.body_mut(), WAIT, |_| false).await;
    assert!(ended, "a finished stream ends after its replay: {text:?}");
    let events = sse_events(&text);
    assert_eq!(events.len(), 4, "{text:?}");
    for (event_id, _) in &events {
        assert_eq!(id_parts(event_id.as_deref().unwrap()).0, stream, "{text:?}");
    }
    let seqs: Vec<u64> = events
        .iter()
        .map(|(e, _)| id_parts(e.as_deref().unwrap()).1)
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    assert_eq!(events[3].1["result"]["closed"], true);
    assert_eq!(events[3].1["id"], 7);
    // The standalone stream got its four, none of the POST stream's.
    let (text, _) = read_sse(standalone.body_mut(), WAIT, |t| sse_events(t).len() >= 4).await;
    let events = sse_events(&text);
    assert_eq!(events.len(), 4);
    assert!(events
        .iter()
        .all(|(e, m)| id_parts(e.as_deref().unwrap()).0 == 0 && m.get("result").is_none()));
}

/// A client that loses a POST stream's connection does not cancel it: the
/// handler runs on, its events are logged, the resume gets the response.
#[tokio::test]
async fn a_dropped_post_stream_runs_on_and_resumes() {
    let server = server().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let mut response = call_raw(
        &client,
        &id,
        "2025-11-25",
        "slow_stream",
        json!({ "n": 5, "ms": 40 }),
    )
    .await;
    let (text, _) = read_sse(response.body_mut(), WAIT, |t| !sse_events(t).is_empty()).await;
    let last = sse_events(&text)[0].0.clone().unwrap();
    drop(response);
    // The server notices the drop at its next write; until then the
    // stream is connected (409).
    let mut resumed = None;
    for _ in 0..500 {
        let r = resume(&client, &id, &last).await;
        if r.status() != StatusCode::CONFLICT {
            resumed = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut resumed = resumed.expect("the dropped connection was noticed");
    assert_eq!(resumed.status(), StatusCode::OK);
    let (text, ended) = read_sse(resumed.body_mut(), WAIT, |_| false).await;
    assert!(ended && has_result(&text), "{text:?}");
    let seqs: Vec<u64> = sse_events(&text)
        .iter()
        .map(|(e, _)| id_parts(e.as_deref().unwrap()).1)
        .collect();
    assert_eq!(seqs, (2..=6).collect::<Vec<u64>>(), "{text:?}");
}

/// The case: a GET with Last-Event-ID while the standalone stream
/// is connected used to replace it silently; it is a conflict.
#[tokio::test]
async fn resuming_a_connected_stream_is_409() {
    let server = server().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let mut live = resume_none(&client, &id).await;
    let (text, _) = read_sse(live.body_mut(), WAIT, |t| !sse_ids(t).is_empty()).await;
    assert_eq!(sse_ids(&text)[0].0, "0-0");
    let second = resume(&client, &id, "0-0").await;
    assert_eq!(second.status(), StatusCode::CONFLICT);
    // The live stream still works.
    assert_eq!(
        client.call(&id, "notify", json!({ "n": 1 })).await.json()["result"]["delivered"],
        1
    );
    let (text, _) = read_sse(live.body_mut(), WAIT, |t| !sse_events(t).is_empty()).await;
    assert_eq!(sse_events(&text)[0].0.as_deref(), Some("0-1"));
}

/// A Last-Event-ID naming no stream (or event) of this session: 400, with
/// nothing opened.
#[tokio::test]
async fn an_id_of_no_stream_of_this_session_is_400() {
    let server = server().await;
    let client = Client::new(&server.url);
    let a = client.initialize().await;
    let b = client.initialize().await;
    // Session b's POST stream.
    let response = call_raw(&client, &b, "2025-11-25", "stream", json!({})).await;
    let text = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    let b_stream = sse_ids(std::str::from_utf8(&text).unwrap())[0].0.clone();
    for last in ["garbage", "12", "99-1", "0-999", b_stream.as_str()] {
        let response = resume(&client, &a, last).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{last}");
    }
    assert_eq!(
        resume(&client, &b, &b_stream).await.status(),
        StatusCode::OK
    );
}

/// Ids drawn under the lock: concurrent notify calls deliver strictly
/// increasing ids on the standalone stream.
#[tokio::test]
async fn concurrent_notifications_have_strictly_increasing_ids() {
    let server = server().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let mut live = resume_none(&client, &id).await;
    let calls = (0..8).map(|_| client.call(&id, "notify", json!({ "n": 8 })));
    let delivered: u64 = futures_util::future::join_all(calls)
        .await
        .iter()
        .map(|a| a.json()["result"]["delivered"].as_u64().unwrap())
        .sum();
    let (text, _) = read_sse(live.body_mut(), WAIT, |t| {
        sse_events(t).len() as u64 >= delivered
    })
    .await;
    let seqs: Vec<u64> = sse_events(&text)
        .iter()
        .map(|(e, _)| id_parts(e.as_deref().unwrap()).1)
        .collect();
    assert_eq!(seqs.len() as u64, delivered);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[tokio::test]
async fn server_messages_have_unique_ids_and_resume_with_last_event_id() {
    let server = Server::start_with(|b| b.event_log_events(16)).await;
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

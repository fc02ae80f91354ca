//! What a client can make the layer keep of the resource URIs it names,
//! over real sockets: every URI bounded in bytes, every filter (and every
//! legacy session's subscriptions) in count and bytes, every principal's
//! URIs and all of them together in bytes; a listen request's id, which its
//! stream keeps, in bytes; and a `resources/subscribe` that races its
//! session's `DELETE` leaves nothing behind in the topic index.
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::*;
use mcp_test_client::SseStream;
use serde_json::{json, Value};
use sessionreg::http::{BearerTokens, Publisher};
use std::time::Duration;

fn listen_body(id: Value, notifications: Value) -> String {
    with_meta(json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "subscriptions/listen",
        "params": { "notifications": notifications },
    }))
    .to_string()
}

/// A listen: its status, its JSON-RPC error (when refused), its stream
/// (when 200).
async fn listen(
    client: &Client,
    id: Value,
    notifications: Value,
) -> (StatusCode, Value, Option<SseStream>) {
    let request = client.modern_request(
        listen_body(id, notifications),
        &[("mcp-method", "subscriptions/listen")],
    );
    let response = client.send_raw(request).await;
    let status = response.status();
    if status == StatusCode::OK {
        return (
            status,
            Value::Null,
            Some(SseStream::new(response.into_body())),
        );
    }
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let error = serde_json::from_slice::<Value>(&bytes).map_or(Value::Null, |v| v["error"].clone());
    (status, error, None)
}

async fn ack(stream: &mut SseStream) -> Value {
    let ack = stream
        .next_within(Duration::from_secs(10))
        .await
        .expect("the stream reads")
        .expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    ack["params"]["notifications"].clone()
}

fn metrics(server: &Server) -> std::collections::HashMap<String, f64> {
    server
        .manager
        .metrics()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(name, value)| Some((name.to_string(), value.parse().ok()?)))
        .collect()
}

fn two_principals(b: Builder) -> Builder {
    b.authenticator(
        BearerTokens::new(
            [("ada", "token-ada"), ("eve", "token-eve")]
                .map(|(n, t)| (n.to_string(), t.to_string())),
        )
        .unwrap(),
    )
}

/// Connections each sending a filter of 256 URIs of 16,000 bytes: each is
/// refused, `-32602` naming `listen_uri_bytes`, and nothing is kept: no
/// stream, no URI, no byte.
#[tokio::test]
async fn filters_of_long_uris_are_refused_and_keep_nothing() {
    let server = Server::start_with(|b| b.publisher(Publisher::new())).await;
    let client = Client::new(&server.url);
    let uris: Vec<String> = (0..256)
        .map(|i| format!("basket://{i:05}/{}", "x".repeat(16_000)))
        .collect();
    let mut held = Vec::new();
    for i in 0..4 {
        let (status, error, stream) =
            listen(&client, json!(i), json!({ "resourceSubscriptions": uris })).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "listen {i}: {error}");
        assert_eq!(error["code"], -32602, "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap_or("")
                .contains("listen_uri_bytes"),
            "{error}"
        );
        held.extend(stream);
    }
    let metrics = metrics(&server);
    assert_eq!(metrics["sessionreg_listeners_live"], 0.0);
    assert_eq!(metrics["sessionreg_listeners_resources"], 0.0);
    assert_eq!(metrics["sessionreg_listeners_uri_bytes"], 0.0);
}

/// A filter is honoured for its first URIs that fit in `listen_filter_bytes`
/// together (the acknowledgement lists them); each stream's URIs count in
/// the gauge of bytes kept, and come back when it ends.
#[tokio::test]
async fn a_filter_is_honoured_for_the_uris_that_fit_its_bytes() {
    let server = Server::start_with(|b| {
        b.publisher(Publisher::new())
            .listen_uri_bytes(100)
            .listen_filter_bytes(250)
    })
    .await;
    let client = Client::new(&server.url);
    let uri = |c: char| format!("basket://{}", c.to_string().repeat(91));
    let (status, _, stream) = listen(
        &client,
        json!(1),
        json!({ "resourceSubscriptions": [uri('a'), uri('b'), uri('c')] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let mut stream = stream.unwrap();
    let honoured = ack(&mut stream).await;
    assert_eq!(
        honoured["resourceSubscriptions"],
        json!([uri('a'), uri('b')])
    );
    // Each URI is charged its bytes and what the index keeps beside them.
    let overhead = sessionreg::http::Defaults::LISTEN_URI_OVERHEAD as f64;
    assert_eq!(
        metrics(&server)["sessionreg_listeners_uri_bytes"],
        200.0 + 2.0 * overhead
    );
    drop(stream);
    assert!(eventually(|| metrics(&server)["sessionreg_listeners_uri_bytes"] == 0.0).await);
    assert_eq!(metrics(&server)["sessionreg_listeners_resources"], 0.0);
}

/// Bytes are shared fairly: one principal past its share of URI bytes gets
/// 429 naming `listen_bytes_share` and nobody else notices; all principals
/// together past `listen_bytes` get 503 naming it.
#[tokio::test]
async fn a_principal_past_its_share_of_uri_bytes_is_429_and_nobody_else_notices() {
    let server = Server::start_with(|b| {
        two_principals(b.publisher(Publisher::new()))
            .listen_uri_bytes(100)
            .listen_filter_bytes(200)
            .listen_bytes(2_500)
            .listen_bytes_share(Some(2_000))
    })
    .await;
    let ada = Client::with_bearer(&server.url, "token-ada");
    let eve = Client::with_bearer(&server.url, "token-eve");
    let uris = |who: &str, n: usize| -> Value {
        json!({ "resourceSubscriptions": (0..n)
            .map(|i| format!("basket://{who}/{i}/{}", "x".repeat(100)))
            .map(|u| u[..100].to_string())
            .collect::<Vec<_>>() })
    };
    let mut held = Vec::new();
    let (status, _, stream) = listen(&ada, json!(1), uris("ada", 2)).await;
    assert_eq!(status, StatusCode::OK);
    held.push(stream.unwrap());
    let (status, error, _) = listen(&ada, json!(2), uris("ada", 2)).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{error}");
    assert_eq!(error["data"]["bound"], "listen_bytes_share", "{error}");
    // Eve is not affected by ada's share...
    let (status, _, stream) = listen(&eve, json!(1), uris("eve", 2)).await;
    assert_eq!(status, StatusCode::OK);
    held.push(stream.unwrap());
    // ...until all of them together reach the bound of all.
    let (status, error, _) = listen(&eve, json!(2), uris("eve", 1)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{error}");
    assert_eq!(error["data"]["bound"], "listen_bytes", "{error}");
    // Two streams of two URIs of 100 bytes, each URI charged 100 + 512.
    assert_eq!(
        metrics(&server)["sessionreg_listeners_uri_bytes"],
        4.0 * 612.0
    );
    assert_eq!(metrics(&server)["sessionreg_listeners_live"], 2.0);
}

/// A listen request's id is kept by its stream and stamped on every frame:
/// one past `Defaults::LISTEN_ID_BYTES` is refused (`-32600`).
#[tokio::test]
async fn a_listen_id_past_its_bound_is_refused() {
    let server = Server::start_with(|b| b.publisher(Publisher::new())).await;
    let client = Client::new(&server.url);
    let long = "i".repeat(sessionreg::http::Defaults::LISTEN_ID_BYTES);
    let (status, error, _) =
        listen(&client, json!(long), json!({ "toolsListChanged": true })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    assert_eq!(error["code"], -32600, "{error}");
    let (status, _, stream) =
        listen(&client, json!("short"), json!({ "toolsListChanged": true })).await;
    assert_eq!(status, StatusCode::OK);
    drop(stream);
    assert_eq!(metrics(&server)["sessionreg_listeners_uri_bytes"], 0.0);
}

fn subscribe(uri: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": 7, "method": "resources/subscribe", "params": { "uri": uri } })
}

/// A legacy session's `resources/subscribe` has a listen filter's bounds,
/// and the layer refuses past them itself (the application is not asked,
/// and the session keeps nothing of the URI): a URI past
/// `listen_uri_bytes`, a subscription past `listen_uris` or past
/// `listen_filter_bytes`, each `-32602` naming the bound.
#[tokio::test]
async fn a_legacy_subscribe_past_its_bounds_is_refused_and_keeps_nothing() {
    let server = Server::start_with(|b| {
        b.publisher(Publisher::new())
            .listen_uris(2)
            .listen_uri_bytes(64)
            .listen_filter_bytes(100)
    })
    .await;
    let client = Client::new(&server.url);
    let session = client.initialize().await;
    let refused = |reply: &mcp_test_client::Reply, bound: &str| {
        let error = reply.json()["error"].clone();
        assert_eq!(error["code"], -32602, "{error}");
        assert!(
            error["message"].as_str().unwrap_or("").contains(bound),
            "{bound}: {error}"
        );
    };
    let long = format!("basket://{}", "x".repeat(100));
    refused(
        &client.post(Some(&session), &subscribe(&long)).await,
        "listen_uri_bytes",
    );
    let a = format!("basket://a/{}", "x".repeat(40));
    let b = format!("basket://b/{}", "x".repeat(40));
    // Within the bounds the application answers (this one: no such
    // method), and the session hears the resource's updates.
    let answered = |reply: &mcp_test_client::Reply| {
        assert_ne!(reply.json()["error"]["code"], -32602, "{:?}", reply.json());
    };
    for uri in [&a, &a] {
        answered(&client.post(Some(&session), &subscribe(uri)).await);
    }
    refused(
        &client.post(Some(&session), &subscribe(&b)).await,
        "listen_filter_bytes",
    );
    let short = |n: u8| format!("basket://{n}");
    answered(&client.post(Some(&session), &subscribe(&short(1))).await);
    refused(
        &client.post(Some(&session), &subscribe(&short(2))).await,
        "listen_uris",
    );
    let metrics = metrics(&server);
    assert_eq!(metrics["sessionreg_listeners_resources"], 2.0);
    let overhead = sessionreg::http::Defaults::LISTEN_URI_OVERHEAD;
    assert_eq!(
        metrics["sessionreg_listeners_uri_bytes"],
        (a.len() + short(1).len() + 2 * overhead) as f64
    );
    client.delete(&session).await;
    assert!(eventually(|| metrics_of(&server, "sessionreg_listeners_uri_bytes") == 0.0).await);
    assert_eq!(metrics_of(&server, "sessionreg_listeners_resources"), 0.0);
}

fn metrics_of(server: &Server, name: &str) -> f64 {
    metrics(server).get(name).copied().unwrap_or(0.0)
}

/// A `resources/subscribe` that races its session's `DELETE` (on another
/// connection, at once) never joins the URI's topic after the session's
/// end emptied its list: once every session has ended, the index holds no
/// URI and no byte (RELIABILITY.md says what the unfixed layer left).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribe_racing_delete_leaves_nothing_in_the_index() {
    let server = Server::start_with(|b| b.publisher(Publisher::new())).await;
    let pad = "p".repeat(256 * 1024);
    let url = server.url.clone();
    for i in 0..400u64 {
        let deleter = Client::new(&url);
        let session = deleter.initialize().await;
        // Subscribes one after another on a connection of their own, each
        // with a member the layer reads past (so that reading its params
        // takes a while, between finding the session live and joining the
        // URI's topic), until the session is gone; the DELETE comes in
        // among them, after a pause that spreads where it lands.
        let subscriber = Client::new(&url);
        let (session_for_subscribes, pad) = (session.clone(), pad.clone());
        let subscribing = tokio::spawn(async move {
            for k in 0.. {
                let body = json!({ "jsonrpc": "2.0", "id": k, "method": "resources/subscribe",
                    "params": { "uri": format!("basket://{i}/{k}"), "pad": pad } });
                let request =
                    subscriber.post_request(Some(&session_for_subscribes), body.to_string());
                match subscriber.try_send(request).await {
                    Ok(reply) if reply.status == StatusCode::OK => {}
                    _ => break,
                }
            }
        });
        tokio::time::sleep(Duration::from_micros(500 * (i % 40))).await;
        deleter.delete(&session).await;
        subscribing.await.unwrap();
    }
    assert!(eventually(|| server.live() == 0).await);
    let metrics = metrics(&server);
    assert_eq!(
        metrics["sessionreg_listeners_resources"], 0.0,
        "URIs left indexed"
    );
    assert_eq!(metrics["sessionreg_listeners_uri_bytes"], 0.0);
}

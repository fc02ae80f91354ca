//! `subscriptions/listen` (2026-07-28, SEP-2575) over real sockets: the
//! acknowledgement first, only the kinds asked for, every frame stamped with
//! the subscription id, the graceful close at shutdown and drain; each
//! stream a registry entry whose every end is counted once; fair shares; a
//! listener that does not read is ended, never waited for; a resource's
//! update reaches only the principals it is published to; and the same
//! publication reaches legacy sessions as their revision has it.
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::*;
use mcp_test_client::SseStream;
use serde_json::{json, Value};
use sessionreg::http::{Audience, BearerTokens, Principal, Publisher};
use std::time::Duration;

const SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

fn listen_body(id: Value, notifications: Value) -> String {
    with_meta(json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "subscriptions/listen",
        "params": { "notifications": notifications },
    }))
    .to_string()
}

/// Opens a listen stream: its status, the stream when 200, the headers.
async fn listen(
    client: &Client,
    id: Value,
    notifications: Value,
) -> (StatusCode, Option<SseStream>, http::HeaderMap) {
    let request = client.modern_request(
        listen_body(id, notifications),
        &[("mcp-method", "subscriptions/listen")],
    );
    let response = client.send_raw(request).await;
    let status = response.status();
    let headers = response.headers().clone();
    match status {
        StatusCode::OK => (status, Some(SseStream::new(response.into_body())), headers),
        _ => (status, None, headers),
    }
}

/// The next message of a stream (a safety bound against one that never
/// delivers, not a measure).
async fn next(stream: &mut SseStream) -> Option<Value> {
    stream
        .next_within(Duration::from_secs(10))
        .await
        .expect("the stream reads")
}

/// The manager's metrics, by sample name (labels included).
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

async fn start(publisher: &Publisher, configure: impl FnOnce(Builder) -> Builder) -> Server {
    let publisher = publisher.clone();
    Server::start_with(move |b| configure(b.publisher(publisher))).await
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

/// The application narrows what the layer honours (`App::listen_filter`):
/// the acknowledgement lists only what is left ("the subset the server
/// agreed to honor"), and only that arrives; an application that serves no
/// listening for a principal answers -32601 (404) and no stream opens.
#[tokio::test]
async fn the_application_narrows_the_filter_or_serves_no_listening() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| {
        b.authenticator(
            BearerTokens::new(
                [("narrow", "token-narrow"), ("deaf", "token-deaf")]
                    .map(|(n, t)| (n.to_string(), t.to_string())),
            )
            .unwrap(),
        )
    })
    .await;
    let narrow = Client::with_bearer(&server.url, "token-narrow");
    let everything = json!({
        "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
        "resourceSubscriptions": ["narrow://1", "other://2"],
    });
    let (status, stream, _) = listen(&narrow, json!(1), everything.clone()).await;
    assert_eq!(status, StatusCode::OK);
    let mut stream = stream.unwrap();
    let ack = next(&mut stream).await.unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "toolsListChanged": true, "resourceSubscriptions": ["narrow://1"] })
    );
    // Taken away: prompts, the resources list, another URI.
    publisher.prompts_changed();
    publisher.resources_changed();
    publisher.resource_updated("other://2", Audience::Everyone);
    publisher.tools_changed();
    publisher.resource_updated("narrow://1", Audience::Everyone);
    assert_eq!(
        next(&mut stream).await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    let updated = next(&mut stream).await.unwrap();
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "narrow://1");

    let deaf = Client::with_bearer(&server.url, "token-deaf");
    let (status, stream, _) = listen(&deaf, json!(2), everything).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(stream.is_none());
    assert_eq!(metrics(&server)["sessionreg_listeners_live"], 1.0);
}

/// Subscriptions page, "Acknowledgment" and "Receiving Notifications": the
/// acknowledgement comes first with the honoured filter, every frame carries
/// the listen request's id, and only the kinds asked for arrive (a kind not
/// asked for, published first, never shows up before the one asked for).
#[tokio::test]
async fn acknowledges_first_then_sends_only_what_was_asked_stamped_with_its_id() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| b).await;
    let client = Client::new(&server.url);
    let (status, stream, headers) = listen(
        &client,
        json!("listen-1"),
        json!({ "toolsListChanged": true, "resourceSubscriptions": ["basket://a"] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/event-stream");
    let mut stream = stream.unwrap();
    let ack = next(&mut stream).await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION], "listen-1");
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "toolsListChanged": true, "resourceSubscriptions": ["basket://a"] })
    );
    // Not asked for: prompts, another resource.
    publisher.prompts_changed();
    publisher.resource_updated("basket://b", Audience::Everyone);
    publisher.tools_changed();
    publisher.resource_updated("basket://a", Audience::Everyone);
    let first = next(&mut stream).await.unwrap();
    assert_eq!(first["method"], "notifications/tools/list_changed");
    assert_eq!(first["params"]["_meta"][SUBSCRIPTION], "listen-1");
    let second = next(&mut stream).await.unwrap();
    assert_eq!(second["method"], "notifications/resources/updated");
    assert_eq!(second["params"]["uri"], "basket://a");
    assert_eq!(second["params"]["_meta"][SUBSCRIPTION], "listen-1");
    assert_eq!(metrics(&server)["sessionreg_listeners_live"], 1.0);
}

/// "Graceful Closure": a shutdown ends every stream with the listen
/// request's result (`resultType: complete`, the subscription id), then the
/// stream ends; each end counted once, as `shutdown`.
#[tokio::test]
async fn shutdown_ends_every_stream_gracefully_with_its_result() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| b).await;
    let client = Client::new(&server.url);
    let mut streams = Vec::new();
    for i in 0..3 {
        let (_, stream, _) = listen(&client, json!(i), json!({ "toolsListChanged": true })).await;
        let mut stream = stream.unwrap();
        assert_eq!(
            next(&mut stream).await.unwrap()["method"],
            "notifications/subscriptions/acknowledged"
        );
        streams.push(stream);
    }
    server.manager.shutdown();
    for (i, stream) in streams.iter_mut().enumerate() {
        let result = next(stream).await.unwrap();
        assert_eq!(result["id"], i);
        assert_eq!(result["result"]["resultType"], "complete");
        assert_eq!(result["result"]["_meta"][SUBSCRIPTION], i);
        assert_eq!(next(stream).await, None, "the stream ends after its result");
    }
    let metrics = metrics(&server);
    assert_eq!(
        metrics["sessionreg_listeners_ended_total{reason=\"shutdown\"}"],
        3.0
    );
    assert_eq!(metrics["sessionreg_listeners_live"], 0.0);
}

/// A draining node ends its listen streams gracefully (their clients
/// re-listen elsewhere) and refuses new ones with 503 and `Retry-After`.
#[tokio::test]
async fn a_draining_node_ends_its_streams_and_refuses_new_ones() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| b).await;
    let client = Client::new(&server.url);
    let (_, stream, _) = listen(&client, json!(1), json!({ "toolsListChanged": true })).await;
    let mut stream = stream.unwrap();
    next(&mut stream).await.unwrap();
    server.manager.start_drain();
    let result = next(&mut stream).await.unwrap();
    assert_eq!(result["result"]["resultType"], "complete");
    let (status, _, headers) = listen(&client, json!(2), json!({ "toolsListChanged": true })).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(headers.contains_key("retry-after"));
    let metrics = metrics(&server);
    assert_eq!(
        metrics["sessionreg_listeners_ended_total{reason=\"drained\"}"],
        1.0
    );
}

/// The client closing its stream ends the listener (`disconnected`), once;
/// its topics forget it (a later publication reaches nobody).
#[tokio::test]
async fn a_client_that_closes_its_stream_ends_its_listener_once() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| b).await;
    let client = Client::new(&server.url);
    let (_, stream, _) = listen(&client, json!(1), json!({ "toolsListChanged": true })).await;
    let mut stream = stream.unwrap();
    next(&mut stream).await.unwrap();
    drop(stream);
    assert!(
        eventually(|| {
            metrics(&server)["sessionreg_listeners_ended_total{reason=\"disconnected\"}"] == 1.0
        })
        .await
    );
    let delivered = metrics(&server)["sessionreg_listeners_notifications_total"];
    publisher.tools_changed();
    let metrics = metrics(&server);
    assert_eq!(metrics["sessionreg_listeners_live"], 0.0);
    assert_eq!(
        metrics["sessionreg_listeners_notifications_total"], delivered,
        "nothing is delivered to a listener that has ended"
    );
}

/// Fair shares: one principal past its share of listen streams gets 429
/// naming the bound; another principal listens on as if nothing happened;
/// the global bound is a 503 that says the store is full.
#[tokio::test]
async fn a_listen_flood_by_one_principal_is_429_and_nobody_else_notices() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| {
        two_principals(b).listen_capacity(6).listen_share(Some(3))
    })
    .await;
    let ada = Client::with_bearer(&server.url, "token-ada");
    let eve = Client::with_bearer(&server.url, "token-eve");
    let mut held = Vec::new();
    for i in 0..3 {
        let (status, stream, _) = listen(&ada, json!(i), json!({ "toolsListChanged": true })).await;
        assert_eq!(status, StatusCode::OK, "ada's listen {i}");
        held.push(stream.unwrap());
    }
    let (status, _, headers) = listen(&ada, json!(9), json!({ "toolsListChanged": true })).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(headers.contains_key("retry-after"));
    for i in 0..3 {
        let (status, stream, _) = listen(&eve, json!(i), json!({ "toolsListChanged": true })).await;
        assert_eq!(status, StatusCode::OK, "eve's listen {i} is not affected");
        held.push(stream.unwrap());
    }
    // Both at their shares, the store at its capacity: a third principal
    // would find it full; here, ada again after one of hers ends... but the
    // store is full first for anyone past it.
    let request = eve.modern_request(
        listen_body(json!(99), json!({ "toolsListChanged": true })),
        &[("mcp-method", "subscriptions/listen")],
    );
    let answer = eve.send(request).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        answer.json()["error"]["data"]["bound"],
        "listen_share",
        "{:?}",
        answer.json()
    );
}

/// A listener whose client reads nothing is ended when its queue of a
/// resource's updates fills (`lagged`), gracefully if it ever reads again;
/// the publisher never waits for it, and a reading listener beside it keeps
/// receiving.
#[tokio::test]
async fn a_listener_that_never_reads_is_ended_and_slows_nobody() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| b.listen_queue(4)).await;
    let client = Client::new(&server.url);
    let filter = json!({ "toolsListChanged": true, "resourceSubscriptions": ["basket://s"] });
    let (_, stalled, _) = listen(&client, json!("stalled"), filter.clone()).await;
    let stalled = stalled.unwrap();
    let (_, reader, _) = listen(&client, json!("reader"), filter).await;
    let mut reader = reader.unwrap();
    next(&mut reader).await.unwrap();
    // Publish until the stalled listener's socket buffers and queue are
    // full and it is ended (a bounded number of publications); the reader
    // takes each publication as it comes, and is never the one ended. The
    // queue holds the resource's updates; the list changes merge.
    let mut published = 0u64;
    let ended = loop {
        publisher.tools_changed();
        publisher.resource_updated("basket://s", Audience::Everyone);
        published += 1;
        let message = next(&mut reader).await.unwrap();
        assert_eq!(message["method"], "notifications/tools/list_changed");
        let message = next(&mut reader).await.unwrap();
        assert_eq!(message["method"], "notifications/resources/updated");
        if published % 256 == 0
            && metrics(&server)["sessionreg_listeners_ended_total{reason=\"lagged\"}"] >= 1.0
        {
            break true;
        }
        if published >= 1_000_000 {
            break false;
        }
    };
    assert!(
        ended,
        "the stalled listener was ended after {published} publications"
    );
    let metrics = metrics(&server);
    assert_eq!(
        metrics["sessionreg_listeners_ended_total{reason=\"lagged\"}"],
        1.0
    );
    assert_eq!(
        metrics["sessionreg_listeners_live"], 1.0,
        "the reader lives on"
    );
    drop(stalled);
}

/// A burst of list changes (a server registering tools one by one, each
/// publishing the change) while a listener does not read: they merge, one
/// per kind, so the listener is not ended however long the burst, and it
/// then hears each list changed once, in one frame, and nothing more.
#[tokio::test]
async fn a_burst_of_list_changes_merges_and_ends_nobody() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| b.listen_queue(4)).await;
    let client = Client::new(&server.url);
    let filter = json!({ "toolsListChanged": true, "promptsListChanged": true });
    let (_, stream, _) = listen(&client, json!("burst"), filter).await;
    let mut stream = stream.unwrap();
    next(&mut stream).await.unwrap();
    let before = metrics(&server);
    for _ in 0..1_000 {
        publisher.tools_changed();
        publisher.prompts_changed();
    }
    let mut heard = vec![
        next(&mut stream).await.unwrap()["method"].clone(),
        next(&mut stream).await.unwrap()["method"].clone(),
    ];
    heard.sort_by_key(|m| m.to_string());
    assert_eq!(
        heard,
        [
            json!("notifications/prompts/list_changed"),
            json!("notifications/tools/list_changed")
        ]
    );
    let after = metrics(&server);
    assert_eq!(after["sessionreg_listeners_live"], 1.0, "not ended");
    assert_eq!(
        after["sessionreg_listeners_ended_total{reason=\"lagged\"}"],
        before["sessionreg_listeners_ended_total{reason=\"lagged\"}"]
    );
    // The test's runtime has one thread, which the burst holds: the
    // stream took nothing before it ended. Two changes raised, the rest
    // merged into them.
    let notified = after["sessionreg_listeners_notifications_total"]
        - before["sessionreg_listeners_notifications_total"];
    assert_eq!(notified, 2.0);
    assert_eq!(after["sessionreg_listeners_merged_total"], 1_998.0);
    // Nothing else is waiting: the next change is the next thing heard.
    publisher.prompts_changed();
    let more = next(&mut stream).await.unwrap();
    assert_eq!(more["method"], "notifications/prompts/list_changed");
}

/// A filter of ten thousand resource URIs costs what the bound allows: the
/// acknowledgement lists the honoured ones (the first, in order).
#[tokio::test]
async fn ten_thousand_uris_in_one_filter_are_bounded() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| b.listen_uris(16)).await;
    let client = Client::new(&server.url);
    let uris: Vec<String> = (0..10_000).map(|i| format!("basket://{i}")).collect();
    let (status, stream, _) =
        listen(&client, json!(1), json!({ "resourceSubscriptions": uris })).await;
    assert_eq!(status, StatusCode::OK);
    let mut stream = stream.unwrap();
    let ack = next(&mut stream).await.unwrap();
    let honoured = ack["params"]["notifications"]["resourceSubscriptions"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(honoured.len(), 16);
    assert_eq!(honoured[0], "basket://0");
    assert_eq!(metrics(&server)["sessionreg_listeners_resources"], 16.0);
}

/// A resource's update reaches only the principals it is published to: a
/// listener of another principal, subscribed to the same URI, hears
/// nothing of it.
#[tokio::test]
async fn an_update_reaches_only_its_audience() {
    let publisher = Publisher::new();
    let server = start(&publisher, two_principals).await;
    let ada = Client::with_bearer(&server.url, "token-ada");
    let eve = Client::with_bearer(&server.url, "token-eve");
    let filter = json!({ "resourceSubscriptions": ["basket://ada", "basket://public"] });
    let (_, a, _) = listen(&ada, json!(1), filter.clone()).await;
    let (_, e, _) = listen(&eve, json!(1), filter).await;
    let (mut a, mut e) = (a.unwrap(), e.unwrap());
    next(&mut a).await.unwrap();
    next(&mut e).await.unwrap();
    publisher.resource_updated("basket://ada", Audience::principal(Principal::new("ada")));
    publisher.resource_updated("basket://public", Audience::Everyone);
    // A listener's updates come in the order they were published.
    let uri = |m: Value| m["params"]["uri"].clone();
    assert_eq!(uri(next(&mut a).await.unwrap()), "basket://ada");
    assert_eq!(uri(next(&mut a).await.unwrap()), "basket://public");
    // Eve's next message is the public update: ada's never reached her.
    assert_eq!(uri(next(&mut e).await.unwrap()), "basket://public");
}

/// At a legacy version there is no `subscriptions/listen`: the session
/// era's answer is the application's (here, method not found); the same
/// publications reach the session on its standalone `GET` stream (list
/// changes) and after `resources/subscribe` (a resource's updates).
#[tokio::test]
async fn legacy_sessions_hear_the_same_publications_as_their_revision_has_it() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| b).await;
    let client = Client::new(&server.url);
    let session = client.initialize().await;
    let listen = client
        .post(
            Some(&session),
            &json!({ "jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen", "params": {} }),
        )
        .await;
    assert_eq!(listen.json()["error"]["code"], -32601);
    let subscribe = client
        .post(
            Some(&session),
            &json!({ "jsonrpc": "2.0", "id": 6, "method": "resources/subscribe",
                     "params": { "uri": "basket://x" } }),
        )
        .await;
    assert_eq!(subscribe.status, StatusCode::OK);
    let response = client.send_raw(client.get_request(&session, None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseStream::new(response.into_body());
    // The stream joined its topics when it opened: wait until it did.
    assert!(
        eventually(|| {
            publisher.prompts_changed();
            metrics(&server)["sessionreg_listeners_notifications_total"] >= 1.0
        })
        .await
    );
    publisher.resource_updated("basket://x", Audience::Everyone);
    let mut methods = Vec::new();
    while let Ok(Some(message)) = stream.next_within(Duration::from_secs(5)).await {
        let method = message["method"].as_str().unwrap_or("").to_string();
        let done = method == "notifications/resources/updated";
        methods.push(method);
        if done {
            break;
        }
    }
    assert!(methods
        .iter()
        .any(|m| m == "notifications/prompts/list_changed"));
    assert_eq!(methods.last().unwrap(), "notifications/resources/updated");
}

/// The global bound: past `listen_capacity` streams (all principals
/// together) a listen gets 503 with `Retry-After`, its JSON-RPC error naming
/// the bound; a stream that ends makes room for the next.
#[tokio::test]
async fn a_full_listen_store_is_503_naming_its_bound_and_an_ended_stream_makes_room() {
    let publisher = Publisher::new();
    let server = start(&publisher, |b| b.listen_capacity(2).listen_share(None)).await;
    let client = Client::new(&server.url);
    let mut held = Vec::new();
    for i in 0..2 {
        let (status, stream, _) =
            listen(&client, json!(i), json!({ "toolsListChanged": true })).await;
        assert_eq!(status, StatusCode::OK, "listen {i}");
        held.push(stream.unwrap());
    }
    let request = client.modern_request(
        listen_body(json!(2), json!({ "toolsListChanged": true })),
        &[("mcp-method", "subscriptions/listen")],
    );
    let answer = client.send(request).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(answer.headers.contains_key("retry-after"));
    assert_eq!(
        answer.json()["error"]["data"]["bound"],
        "listen_capacity",
        "{:?}",
        answer.json()
    );
    drop(held.pop());
    assert!(eventually(|| metrics(&server)["sessionreg_listeners_live"] == 1.0).await);
    let (status, _, _) = listen(&client, json!(3), json!({ "toolsListChanged": true })).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the ended stream's place is free again"
    );
}

/// A listen stream is not a handler: the handler timeout, long past, does
/// not end it (the issue: "the handler timeout must NOT end it").
#[tokio::test]
async fn the_handler_timeout_does_not_end_a_listen_stream() {
    let publisher = Publisher::new();
    let timeout = Duration::from_millis(200);
    let server = start(&publisher, |b| b.handler_timeout(Some(timeout))).await;
    let client = Client::new(&server.url);
    let (_, stream, _) = listen(&client, json!(1), json!({ "toolsListChanged": true })).await;
    let mut stream = stream.unwrap();
    next(&mut stream).await.unwrap();
    // Five times the timeout: had it applied, the stream would have ended.
    tokio::time::sleep(timeout * 5).await;
    publisher.tools_changed();
    let message = next(&mut stream).await.unwrap();
    assert_eq!(message["method"], "notifications/tools/list_changed");
    assert_eq!(metrics(&server)["sessionreg_listeners_live"], 1.0);
}

/// `serve`'s own shutdown (what the example servers run on SIGTERM): the
/// connections are told to finish, and a listen stream, which never
/// finishes by itself, gets its result, so the shutdown completes within its
/// deadline (drained), not by dropping the connection at it.
#[tokio::test]
async fn serves_shutdown_ends_listen_streams_with_their_result_and_drains() {
    let publisher = Publisher::new();
    let mut server = start(&publisher, |b| b).await;
    let client = Client::new(&server.url);
    let (_, stream, _) = listen(&client, json!("s"), json!({ "toolsListChanged": true })).await;
    let mut stream = stream.unwrap();
    next(&mut stream).await.unwrap();
    let report = server.shutdown().await;
    let result = next(&mut stream).await.unwrap();
    assert_eq!(result["id"], "s");
    assert_eq!(result["result"]["resultType"], "complete");
    assert_eq!(next(&mut stream).await, None);
    assert!(report.drained, "{report:?}");
    assert_eq!(
        metrics(&server)["sessionreg_listeners_ended_total{reason=\"shutdown\"}"],
        1.0
    );
}

/// A static token withdrawn by a reload of the token set (what SIGHUP does
/// in the examples) ends the streams opened with it: its listen stream
/// gracefully with the listen request's result, its legacy session's `GET`
/// stream, each counted `credential_withdrawn`; another token's listen
/// stream, kept by the reload, hears on; the withdrawn token's session
/// stays (it belongs to the principal), unreachable by that token.
#[tokio::test]
async fn a_withdrawn_token_ends_its_streams_and_no_other_ones() {
    let publisher = Publisher::new();
    let tokens = BearerTokens::new(
        [("ada", "token-ada"), ("eve", "token-eve")].map(|(n, t)| (n.to_string(), t.to_string())),
    )
    .unwrap();
    let server = start(&publisher, |b| b.authenticator(tokens.clone())).await;
    let ada = Client::with_bearer(&server.url, "token-ada");
    let eve = Client::with_bearer(&server.url, "token-eve");
    let filter = json!({ "toolsListChanged": true });
    let (_, ada_listen, _) = listen(&ada, json!("ada"), filter.clone()).await;
    let mut ada_listen = ada_listen.unwrap();
    next(&mut ada_listen).await.unwrap();
    let (_, eve_listen, _) = listen(&eve, json!("eve"), filter).await;
    let mut eve_listen = eve_listen.unwrap();
    next(&mut eve_listen).await.unwrap();
    let session = ada.initialize().await;
    let response = ada.send_raw(ada.get_request(&session, None)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut ada_get = SseStream::new(response.into_body());

    tokens
        .replace([("eve".to_string(), "token-eve".to_string())])
        .unwrap();
    let result = next(&mut ada_listen)
        .await
        .expect("a result before the end");
    assert_eq!(result["id"], "ada");
    assert_eq!(result["result"]["resultType"], "complete");
    assert_eq!(next(&mut ada_listen).await, None);
    assert_eq!(next(&mut ada_get).await, None, "the GET stream ends");
    let metrics = metrics(&server);
    assert_eq!(
        metrics.get("sessionreg_listeners_ended_total{reason=\"credential_withdrawn\"}"),
        Some(&1.0),
        "{metrics:?}"
    );
    assert_eq!(
        metrics.get("sessionreg_http_streams_ended_total{reason=\"credential_withdrawn\"}"),
        Some(&1.0),
        "{metrics:?}"
    );
    assert_eq!(metrics["sessionreg_listeners_live"], 1.0);
    publisher.tools_changed();
    let heard = next(&mut eve_listen).await.unwrap();
    assert_eq!(heard["method"], "notifications/tools/list_changed");
    assert_eq!(server.live(), 1, "ada's session stays");
    assert_eq!(
        ada.send_raw(ada.get_request(&session, None)).await.status(),
        StatusCode::UNAUTHORIZED
    );
}

/// A publication made on a thread outside the runtime (an application's
/// background thread) reaches the streams: its wakes are handed to the
/// runtime in batches, and every stream, parked, hears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publication_from_outside_the_runtime_reaches_every_parked_stream() {
    let publisher = Publisher::new();
    // No keep-alives: nothing but the publication's wake polls a stream.
    let server = start(&publisher, |b| b.sse_keep_alive(None)).await;
    let client = Client::new(&server.url);
    let mut streams = Vec::new();
    // More than one batch of wakes.
    for i in 0..300 {
        let (status, stream, _) =
            listen(&client, json!(i), json!({ "toolsListChanged": true })).await;
        assert_eq!(status, StatusCode::OK);
        let mut stream = stream.unwrap();
        next(&mut stream).await.unwrap();
        streams.push(stream);
    }
    let outside = publisher.clone();
    std::thread::spawn(move || outside.tools_changed())
        .join()
        .unwrap();
    for stream in &mut streams {
        let heard = next(stream).await.unwrap();
        assert_eq!(heard["method"], "notifications/tools/list_changed");
    }
}

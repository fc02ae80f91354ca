//! Draining one node for a rolling restart, over real sockets: new sessions
//! refused with 503 and `Retry-After`, creating nothing; live ones served
//! until they end or a deadline passes; the readiness and liveness answers
//! a balancer checks. (tests/fleet.rs drains a node behind real balancers.)
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_body_util::BodyExt;
use http_support::{initialize_body, Client, Server};
use serde_json::{json, Value};
use sessionreg::http::Body;
use std::time::Duration;

/// A probe's status and JSON body.
async fn probe(response: http::Response<Body>) -> (StatusCode, Value) {
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn a_draining_node_takes_no_new_session_and_serves_its_own() {
    let server = Server::start_with(|b| b.node_id(9)).await;
    let client = Client::new(&server.url);
    let first = client.initialize().await;
    let second = client.initialize().await;
    let manager = &server.manager;
    let (status, body) = probe(manager.readiness()).await;
    assert_eq!((status, &body["status"]), (StatusCode::OK, &json!("ready")));
    assert_eq!(body["node"], 9);
    assert_eq!(body["sessions"], 2);

    assert!(manager.start_drain(), "this call started it");
    assert!(!manager.start_drain(), "already draining");
    assert!(manager.is_draining());

    // initialize: 503, Retry-After, no id, nothing created.
    let created = server.created();
    let refused = client.post(None, &initialize_body("late")).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(refused.session_id(), None);
    assert_eq!(
        refused.json()["id"],
        1,
        "the JSON-RPC error answers the request"
    );
    assert_eq!(server.created(), created);
    assert_eq!(server.live(), 2);

    // Out of the round-robin, still serving its ids.
    let (status, body) = probe(manager.readiness()).await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::SERVICE_UNAVAILABLE, &json!("draining"))
    );
    let (status, body) = probe(manager.liveness()).await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::OK, &json!("draining"))
    );
    assert_eq!(
        client.call(&first, "echo", json!({})).await.status,
        StatusCode::OK
    );

    // The drain ends when the last session does, not before: with one left,
    // it is still waiting a while later (a check that cannot fail when the
    // drain is right, however slow the machine).
    let draining = manager.clone();
    let mut drain = tokio::spawn(async move { draining.drain(Duration::from_secs(120)).await });
    assert_eq!(client.delete(&first).await.status, StatusCode::OK);
    assert_eq!(
        client.call(&second, "echo", json!({})).await.status,
        StatusCode::OK
    );
    let early = tokio::time::timeout(Duration::from_millis(500), &mut drain).await;
    assert!(
        early.is_err(),
        "the drain ended with a session live: {early:?}"
    );
    assert_eq!(client.delete(&second).await.status, StatusCode::OK);
    let report = drain.await.unwrap();
    assert_eq!(report.remaining, 0);
    assert_eq!(server.live(), 0);
}

#[tokio::test]
async fn a_drain_gives_up_at_its_deadline_and_shutdown_ends_the_rest() {
    let mut server = Server::start().await;
    let client = Client::new(&server.url);
    let _kept = client.initialize().await;
    let report = server.manager.drain(Duration::from_millis(100)).await;
    assert_eq!(report.remaining, 1);
    assert_eq!(server.shutdown().await.sessions_ended, 1);
    assert_eq!(server.live(), 0);
}

#[tokio::test]
async fn probes_say_full_and_shutting_down() {
    let server = Server::start_with(|b| b.capacity(1)).await;
    let client = Client::new(&server.url);
    let _only = client.initialize().await;
    let (status, body) = probe(server.manager.readiness()).await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::SERVICE_UNAVAILABLE, &json!("full"))
    );
    assert_eq!(probe(server.manager.liveness()).await.0, StatusCode::OK);

    server.manager.shutdown();
    let (status, body) = probe(server.manager.readiness()).await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::SERVICE_UNAVAILABLE, &json!("shutting_down"))
    );
    let (status, body) = probe(server.manager.liveness()).await;
    assert_eq!(
        (status, &body["status"]),
        (StatusCode::SERVICE_UNAVAILABLE, &json!("shutting_down"))
    );
}

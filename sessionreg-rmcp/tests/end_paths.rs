//! The ends other than DELETE and the idle timeout, over real sockets:
//! capacity (503, nothing created), shutdown, and a worker stopped by rmcp's
//! own cancellation token. Each session is closed exactly once, for its
//! reason.

mod support;

use http::StatusCode;
use http_body_util::BodyExt;
use serde_json::json;
use sessionreg::Reason;
use std::time::Duration;
use support::{eventually, initialize_body, Server};

#[tokio::test]
async fn at_capacity_initialize_gets_503_and_creates_nothing() {
    let server = Server::start(|b| b.capacity(2)).await;
    let client = server.client();
    let first = client.open().await;
    let _second = client.open().await;

    let refused = client.post(None, &initialize_body("third")).await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{refused:?}"
    );
    assert_eq!(refused.headers["retry-after"], "1");
    assert!(refused.session_id().is_none());
    assert_eq!(refused.answer().unwrap()["error"]["code"], -32000);
    let stats = server.manager.stats();
    assert_eq!((stats.created, stats.live), (2, 2));

    // Room again once a session ends.
    assert_eq!(client.delete(&first).await.status, StatusCode::ACCEPTED);
    client.open().await;
    assert_eq!(server.manager.stats().created, 3);
    server.stop().await;
}

#[tokio::test]
async fn shutdown_ends_every_session_and_refuses_new_ones() {
    let server = Server::start(|b| b).await;
    let client = server.client();
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(client.open().await);
    }
    let stream = client.open_stream(&ids[0], None).await;
    assert_eq!(stream.status(), StatusCode::OK);

    assert_eq!(server.manager.shutdown(), 5);
    assert_eq!(server.live(), 0);
    // The open stream ends cleanly: its session's worker stopped.
    let body = tokio::time::timeout(Duration::from_secs(20), stream.into_body().collect()).await;
    assert!(
        matches!(body, Ok(Ok(_))),
        "the stream did not end cleanly: {body:?}"
    );

    let refused = client.post(None, &initialize_body("late")).await;
    assert_eq!(
        refused.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{refused:?}"
    );
    for id in &ids {
        let call = client.call(id, "echo", json!({ "text": "x" })).await;
        assert_eq!(call.status, StatusCode::NOT_FOUND);
    }
    let closes = server.closes.each_once();
    assert_eq!(closes.len(), 5);
    assert!(closes.values().all(|r| *r == Reason::Shutdown));
    assert_eq!(server.manager.stats().created, 5);
    server.stop().await;
}

/// rmcp's cancellation token stops every session's serve loop and worker
/// without the manager being asked: the worker's exit ends each session.
#[tokio::test]
async fn a_worker_stopped_by_rmcp_ends_its_session() {
    let server = Server::start(|b| b).await;
    let client = server.client();
    for _ in 0..5 {
        client.open().await;
    }
    server.rmcp_token.cancel();
    assert!(eventually(|| server.live() == 0).await);
    let closes = server.closes.each_once();
    assert_eq!(closes.len(), 5);
    // The manager was not given the token: a worker that stopped on its own
    // has failed, as far as it can tell.
    assert!(closes.values().all(|r| *r == Reason::Failed), "{closes:?}");
    server.stop().await;
}

/// The same with the token given to the manager: counted as a shutdown.
#[tokio::test]
async fn with_the_token_the_workers_end_is_a_shutdown() {
    let token = tokio_util::sync::CancellationToken::new();
    let server = Server::start_with_token(token.clone(), |b| b.cancellation_token(token)).await;
    let client = server.client();
    for _ in 0..5 {
        client.open().await;
    }
    server.rmcp_token.cancel();
    assert!(eventually(|| server.live() == 0).await);
    let closes = server.closes.each_once();
    assert_eq!(closes.len(), 5);
    assert!(
        closes.values().all(|r| *r == Reason::Shutdown),
        "{closes:?}"
    );
    server.stop().await;
}

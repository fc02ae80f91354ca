//! Failures and endings: handler errors and panics end only their own
//! session, the reaper never cancels a running handler, graceful shutdown.
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{eventually, initialize_body, read_sse, Client, Server};
use serde_json::json;
use sessionreg::{Reason, SessionId};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_panic_ends_only_its_session() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let victim = client.initialize().await;
    let bystander = client.initialize().await;
    // The bystander keeps a request in flight across the panic.
    let slow = {
        let client = Client::new(&server.url);
        let id = bystander.clone();
        tokio::spawn(async move { client.call(&id, "sleep", json!({ "ms": 200 })).await })
    };
    let answer = client.call(&victim, "panic", json!({})).await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(answer.json()["error"]["code"], -32603);
    assert_eq!(server.closes.count_reason(Reason::Failed), 1);
    assert_eq!(
        client.call(&victim, "echo", json!({})).await.status,
        StatusCode::NOT_FOUND
    );
    // Everyone else is served on.
    assert_eq!(slow.await.unwrap().status, StatusCode::OK);
    assert_eq!(
        client.call(&bystander, "echo", json!({})).await.status,
        StatusCode::OK
    );
    let fresh = client.initialize().await;
    assert_eq!(
        client.call(&fresh, "echo", json!({})).await.status,
        StatusCode::OK
    );
    assert_eq!(server.live(), 2);
    assert_eq!(server.manager.stats().terminated(Reason::Failed), 1);
}

#[tokio::test]
async fn handler_error_ends_its_session_failed() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let answer = client.call(&id, "fail", json!({})).await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(answer.json()["id"], 7);
    assert_eq!(server.live(), 0);
    assert_eq!(server.closes.count_reason(Reason::Failed), 1);
    assert_eq!(client.delete(&id).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn panic_in_initialize_leaves_nothing_and_shows_no_id() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let answer = client
        .post(None, &initialize_body("panic-initialize"))
        .await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(answer.session_id().is_none());
    assert_eq!(server.live(), 0);
    assert_eq!(server.closes.count_reason(Reason::Failed), 1);
    client.initialize().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reaper_never_cancels_a_running_handler() {
    let server = Server::start_with(|b| {
        b.idle_timeout(Some(Duration::from_millis(100)))
            .reap_interval(Duration::from_millis(5))
    })
    .await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let answer = client.call(&id, "sleep", json!({ "ms": 800 })).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["result"]["slept"], 800);
    assert_eq!(server.closes.count(), 0, "not reaped while the call ran");
    // Its activity was stamped when the call ended.
    assert_eq!(
        client.call(&id, "echo", json!({})).await.status,
        StatusCode::OK
    );
    // And once really idle, it goes.
    assert!(eventually(|| server.live() == 0).await);
    // The live count drops when the reaper wins the session, its close
    // callback runs just after, on the reaper's thread: wait for it.
    assert!(eventually(|| server.closes.count_reason(Reason::IdleTimeout) == 1).await);
    assert_eq!(server.closes.count(), 1);
}

/// A handler still running when its client goes away runs to its end (the
/// transport says a disconnect is not a cancellation): the request stays in
/// flight until the handler finishes, and the session lives on. The handler
/// is first polled on the connection's task, so this checks that a pending
/// one is handed to a task of its own rather than dropped with the
/// connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_does_not_cancel_its_handler() {
    let server = Server::start().await;
    let id = Client::new(&server.url).initialize().await;
    let session = server
        .manager
        .registry()
        .get(&id.parse::<SessionId>().unwrap())
        .unwrap();
    let call = {
        let client = Client::new(&server.url);
        let id = id.clone();
        tokio::spawn(async move { client.call(&id, "sleep", json!({ "ms": 1000 })).await })
    };
    assert!(eventually(|| session.in_flight() == 1).await);
    // Dropping the request (and the client with it) closes its connection.
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(session.in_flight(), 1, "the handler was cancelled");
    assert!(eventually(|| session.in_flight() == 0).await);
    assert_eq!(server.closes.count(), 0);
    let client = Client::new(&server.url);
    assert_eq!(
        client.call(&id, "echo", json!({})).await.status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_ends_sessions_and_waits_for_requests() {
    let mut server = Server::start().await;
    let client = Client::new(&server.url);
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(client.initialize().await);
    }
    // A standalone stream on one session...
    let mut stream = client.open_stream(&ids[0], None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    // ...and a long call in flight on another.
    let call = {
        let client = Client::new(&server.url);
        let id = ids[1].clone();
        tokio::spawn(async move { client.call(&id, "sleep", json!({ "ms": 500 })).await })
    };
    let busy = server
        .manager
        .registry()
        .get(&ids[1].parse::<SessionId>().unwrap())
        .unwrap();
    assert!(eventually(|| busy.in_flight() > 0).await);
    drop(busy);

    let report = server.shutdown().await;
    assert_eq!(report.sessions_ended, 5);
    assert!(
        report.drained,
        "in-flight requests finished within the deadline"
    );
    assert_eq!(server.live(), 0);
    assert_eq!(server.closes.count_reason(Reason::Shutdown), 5);
    server.closes.assert_each_once();
    // The call in flight completed normally.
    let answer = call.await.unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["result"]["slept"], 500);
    // The stream got a clean end.
    let (_, ended) = read_sse(stream.body_mut(), Duration::from_secs(10), |_| false).await;
    assert!(ended, "the SSE stream ended cleanly");
    // Not accepting any more.
    assert!(tokio::net::TcpStream::connect(server.addr).await.is_err());
}

#[tokio::test]
async fn shutdown_refuses_new_sessions() {
    let server = Server::start().await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    assert_eq!(server.manager.shutdown(), 1);
    let answer = client.post(None, &initialize_body("late")).await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(answer.session_id().is_none());
    assert_eq!(
        client.call(&id, "echo", json!({})).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(server.live(), 0);
    assert_eq!(server.created(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_only_up_to_its_deadline() {
    let mut server = Server::start_full(|b| b, Duration::from_millis(300)).await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let call = {
        let client = Client::new(&server.url);
        let id = id.clone();
        tokio::spawn(async move { client.call(&id, "sleep", json!({ "ms": 60_000 })).await })
    };
    let busy = server
        .manager
        .registry()
        .get(&id.parse::<SessionId>().unwrap())
        .unwrap();
    assert!(eventually(|| busy.in_flight() > 0).await);
    drop(busy);
    let report = server.shutdown().await;
    assert!(
        !report.drained,
        "a request still running at the deadline is reported"
    );
    assert_eq!(report.sessions_ended, 1);
    assert_eq!(server.closes.count_reason(Reason::Shutdown), 1);
    call.abort();
}

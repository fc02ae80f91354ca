//! A tool call that stays silent for longer than the idle timeout keeps its
//! session here, where rmcp's `LocalSessionManager` (its `keep_alive` set to
//! the same timeout) loses it mid-call. Both run the example's server, over
//! real sockets, with the same raw client. An open GET stream keeps its
//! session too, and once it is dropped the session idles out. rmcp's own
//! knob, `SessionConfig::keep_alive`, sets the same timeout with the same
//! rule.

mod support;

use http::StatusCode;
use rmcp::transport::streamable_http_server::session::local::SessionConfig;
use serde_json::json;
use sessionreg::Reason;
use std::time::Duration;
use support::{eventually, text_of, LocalServer, Server};

const TIMEOUT: Duration = Duration::from_millis(300);
const CALL_MS: u64 = 1_500;

#[tokio::test]
async fn a_silent_long_call_keeps_its_session() {
    let server = Server::start(|b| b.idle_timeout(TIMEOUT)).await;
    a_silent_long_call_keeps(server).await;
}

/// An rmcp user's configuration, carried over: `keep_alive` is the idle
/// timeout, with the in-flight rule (where rmcp's manager, given the same
/// config, loses the call: `local_session_manager_loses_it`).
#[tokio::test]
async fn keep_alive_is_the_idle_timeout_and_a_silent_call_keeps_its_session() {
    let mut config = SessionConfig::default();
    config.keep_alive = Some(TIMEOUT);
    let server = Server::start(|b| b.session_config(config)).await;
    assert_eq!(server.manager.idle_timeout(), Some(TIMEOUT));
    a_silent_long_call_keeps(server).await;
}

async fn a_silent_long_call_keeps(server: Server) {
    let client = server.client();
    let id = client.open().await;

    let call = client.call(&id, "sleep", json!({ "ms": CALL_MS })).await;
    assert_eq!(call.status, StatusCode::OK);
    let answer = call.answer().expect("the sleep call's answer");
    assert_eq!(text_of(&answer), Some("slept 1500 ms"), "{answer}");

    // The session outlived the call (five idle timeouts long) and serves on.
    let echo = client
        .call(&id, "echo", json!({ "text": "still here" }))
        .await;
    assert_eq!(echo.status, StatusCode::OK);
    assert_eq!(text_of(&echo.answer().unwrap()), Some("still here"));
    assert_eq!(server.closes.count(), 0);

    // Left alone, it does idle out.
    assert!(eventually(|| server.live() == 0).await);
    assert_eq!(server.closes.count_reason(Reason::IdleTimeout), 1);
    server.stop().await;
}

/// The baseline: the same call on rmcp's own manager. Its worker's
/// `keep_alive` timer restarts on worker events only, and a silent handler
/// makes none, so the worker quits mid-call: the call's stream ends with no
/// answer and the session is gone (rmcp answers the next call 500 while the
/// dead session's handle is still in its map, 404 once it is removed).
#[tokio::test]
async fn local_session_manager_loses_it() {
    let server = LocalServer::start(TIMEOUT).await;
    let client = server.client();
    let id = client.open().await;

    let call = client.call(&id, "sleep", json!({ "ms": CALL_MS })).await;
    assert_eq!(call.status, StatusCode::OK);
    assert!(call.answer().is_none(), "rmcp 3.11 answered: {call:?}");

    let echo = client
        .call(&id, "echo", json!({ "text": "still here?" }))
        .await;
    assert!(
        [StatusCode::NOT_FOUND, StatusCode::INTERNAL_SERVER_ERROR].contains(&echo.status),
        "{echo:?}"
    );
    assert!(echo.answer().is_none());
}

#[tokio::test]
async fn an_open_stream_keeps_its_session_until_dropped() {
    let server = Server::start(|b| b.idle_timeout(TIMEOUT)).await;
    let client = server.client();
    let id = client.open().await;
    let stream = client.open_stream(&id, None).await;
    assert_eq!(stream.status(), StatusCode::OK);

    tokio::time::sleep(TIMEOUT * 4).await;
    assert_eq!(server.live(), 1, "an open stream is in flight");
    assert_eq!(server.closes.count(), 0);

    drop(stream);
    assert!(eventually(|| server.live() == 0).await);
    assert_eq!(server.closes.count_reason(Reason::IdleTimeout), 1);
    server.stop().await;
}

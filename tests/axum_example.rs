//! `examples/axum_server` over a real socket: the example's own `run` (the
//! file is included here, so these tests drive exactly its code) on
//! 127.0.0.1:0, with a shutdown signal the test holds instead of SIGTERM.
//! Also the token and allow-list files the examples re-read on SIGHUP.
#![cfg(feature = "http")]

#[allow(dead_code)]
#[path = "../examples/axum_server.rs"]
mod axum_server;
mod http_support;

use axum_server::mcp_app::ops::{self, Flags};
use clap::Parser;
use http::{Method, StatusCode};
use http_body_util::Full;
use http_support::{initialize_body, read_sse, Client};
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    flags: Flags,
}

fn flags(args: &[&str]) -> Flags {
    let mut argv = vec!["axum_server", "--addr", "127.0.0.1:0"];
    argv.extend_from_slice(args);
    Cli::parse_from(argv).flags
}

struct Running {
    addr: SocketAddr,
    url: String,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<bool>,
}

async fn start(args: &[&str]) -> Running {
    let flags = flags(args);
    let listener = tokio::net::TcpListener::bind(flags.addr).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum_server::run(&flags, listener, async move {
            let _ = stopped.await;
        })
        .await
        .expect("the example serves")
    });
    Running {
        addr,
        url: format!("http://{addr}/mcp"),
        stop: Some(stop),
        task,
    }
}

impl Running {
    /// Sends the shutdown signal; returns whether `run` drained in time.
    async fn shutdown(mut self) -> bool {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("run returns after the signal")
            .unwrap()
    }

    async fn get(&self, path: &str) -> (StatusCode, String) {
        let client = Client::new(&format!("http://{}{path}", self.addr));
        let answer = client
            .send(client.request(Method::GET).body(Full::default()).unwrap())
            .await;
        (
            answer.status,
            String::from_utf8(answer.body.to_vec()).unwrap(),
        )
    }

    async fn metric(&self, name: &str) -> String {
        let (status, text) = self.get("/metrics").await;
        assert_eq!(status, StatusCode::OK);
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing from {text}"))
            .to_string()
    }
}

/// Mounted in axum, nobody called `serve` or `set_local_addr`: a foreign
/// `Host` is still refused (DNS rebinding), the ordinary route still works.
#[tokio::test]
async fn rebinding_is_refused_in_axum() {
    let server = start(&[]).await;
    let evil = Client::new(&server.url).with_header("host", "evil.example");
    let answer = evil.post(None, &initialize_body("c")).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(answer.session_id().is_none());
    assert_eq!(
        server.metric("sessionreg_sessions_created_total").await,
        "0"
    );
    assert_eq!(
        server.get("/healthz").await,
        (StatusCode::OK, "ok\n".into())
    );
    // --allowed-host lets a public name in.
    let named = start(&["--allowed-host", "mcp.example"]).await;
    let client = Client::new(&named.url).with_header("host", "mcp.example");
    assert_eq!(
        client.post(None, &initialize_body("c")).await.status,
        StatusCode::OK
    );
    assert!(server.shutdown().await);
    assert!(named.shutdown().await);
}

#[tokio::test]
async fn a_session_end_to_end() {
    let server = start(&[]).await;
    let client = Client::new(&server.url);
    let answer = client.post(None, &initialize_body("c")).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.json()["result"]["serverInfo"]["name"],
        "sessionreg-example"
    );
    let id = answer.session_id().unwrap();
    assert_eq!(client.initialized(&id).await.status, StatusCode::ACCEPTED);
    let echo = client.call(&id, "echo", json!({ "text": "hi" })).await;
    assert_eq!(echo.json()["result"]["content"][0]["text"], "hi");
    assert_eq!(server.metric("sessionreg_sessions_live").await, "1");
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    assert_eq!(server.metric("sessionreg_sessions_live").await, "0");
    assert_eq!(client.delete(&id).await.status, StatusCode::NOT_FOUND);
    assert!(server.shutdown().await);
}

/// Shutdown with a client holding the standalone SSE stream: the session
/// ends, the stream gets a clean end, and axum's graceful shutdown (which
/// waits for every connection) completes within the deadline.
#[tokio::test]
async fn graceful_shutdown_with_an_open_stream() {
    let server = start(&["--shutdown-deadline-ms", "20000"]).await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let mut stream = client.open_stream(&id, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    let url = server.url.clone();
    let drained = tokio::spawn(server.shutdown());
    let (_, ended) = read_sse(stream.body_mut(), Duration::from_secs(20), |_| false).await;
    assert!(ended, "the stream ended cleanly");
    assert!(drained.await.unwrap(), "drained within the deadline");
    // And it no longer accepts.
    let refused = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>()
        .get(url.parse().unwrap())
        .await;
    assert!(refused.is_err());
}

/// --bearer-token: 401 without it, sessions bound to the name; a SIGHUP
/// re-reads --bearer-token-file.
#[tokio::test]
async fn bearer_tokens_and_a_reload_on_sighup() {
    let dir = std::env::temp_dir().join(format!("sessionreg-axum-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens");
    std::fs::write(&file, "bob=file-bob\n").unwrap();
    let server = start(&[
        "--bearer-token",
        "ada=flag-ada",
        "--bearer-token-file",
        file.to_str().unwrap(),
    ])
    .await;
    let anonymous = Client::new(&server.url);
    let answer = anonymous.post(None, &initialize_body("c")).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(answer.headers["www-authenticate"], r#"Bearer realm="mcp""#);
    let ada = Client::with_bearer(&server.url, "flag-ada");
    let bob = Client::with_bearer(&server.url, "file-bob");
    let id = ada.initialize().await;
    assert_eq!(
        bob.call(&id, "echo", json!({ "text": "x" })).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        ada.call(&id, "echo", json!({ "text": "x" })).await.status,
        StatusCode::OK
    );

    // Rotate bob's token in the file and send SIGHUP to this process.
    std::fs::write(&file, "bob=rotated-bob\n").unwrap();
    let status = std::process::Command::new("kill")
        .args(["-HUP", &std::process::id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let rotated = Client::with_bearer(&server.url, "rotated-bob");
    let mut reloaded = false;
    for _ in 0..1000 {
        if rotated.post(None, &initialize_body("c")).await.status == StatusCode::OK {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reloaded, "the file was re-read on SIGHUP");
    assert_eq!(
        bob.post(None, &initialize_body("c")).await.status,
        StatusCode::UNAUTHORIZED
    );
    // The flag's token stays.
    assert_eq!(
        ada.call(&id, "echo", json!({ "text": "x" })).await.status,
        StatusCode::OK
    );
    assert!(server.shutdown().await);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bad file at reload keeps the sets in force (tokens and allow-lists).
#[tokio::test]
async fn a_bad_file_keeps_the_old_set() {
    let dir = std::env::temp_dir().join(format!("sessionreg-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens_file = dir.join("tokens");
    let origins_file = dir.join("origins");
    std::fs::write(&tokens_file, "ada=t-ada\n").unwrap();
    std::fs::write(&origins_file, "https://app.example\n").unwrap();
    let flags = flags(&[
        "--bearer-token-file",
        tokens_file.to_str().unwrap(),
        "--allowed-origins-file",
        origins_file.to_str().unwrap(),
    ]);
    let built = ops::build(&flags).unwrap();
    let tokens = built.tokens.clone().unwrap();
    for (tokens_text, origins_text) in [
        ("ada t-ada\n", "not an origin\n"),
        ("", "https://a.example https://b.example\n"),
        ("x=has space\n", "app.example\n"),
    ] {
        std::fs::write(&tokens_file, tokens_text).unwrap();
        std::fs::write(&origins_file, origins_text).unwrap();
        ops::reload(&built.manager, Some(&tokens), &flags);
        let names: Vec<String> = tokens
            .principals()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(names, ["ada"], "{tokens_text:?}");
        assert_eq!(
            built.manager.allowed().0,
            ["https://app.example"],
            "{origins_text:?}"
        );
    }
    // A missing file too.
    std::fs::remove_file(&tokens_file).unwrap();
    ops::reload(&built.manager, Some(&tokens), &flags);
    assert_eq!(tokens.principals().len(), 1);
    // A good one is taken.
    std::fs::write(&tokens_file, "ada=t-ada\nbob=t-bob\n").unwrap();
    std::fs::write(&origins_file, "https://new.example\n").unwrap();
    ops::reload(&built.manager, Some(&tokens), &flags);
    assert_eq!(tokens.principals().len(), 2);
    assert_eq!(built.manager.allowed().0, ["https://new.example"]);
    let _ = std::fs::remove_dir_all(&dir);
}

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

/// Mounted in axum and bound to loopback: a foreign `Host` is refused (DNS
/// rebinding), the ordinary route still works. (`tests/http_access.rs`
/// checks the same with no `serve` at all.)
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
            built.manager.allowed().origins,
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
    assert_eq!(built.manager.allowed().origins, ["https://new.example"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `axum_server` took `--header-read-timeout-ms` and
/// the other connection flags and ignored them (`axum::serve` sets no hyper
/// timer), so a client that sends half a request head held its connection
/// for ever. It is shed as `mcp_server` sheds it.
#[tokio::test]
async fn a_slowloris_client_is_shed_by_axum_server() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start(&["--header-read-timeout-ms", "300"]).await;
    let mut slow = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match slow.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the half-sent request head is still open");
    assert!(server.shutdown().await);
}

/// The example's `notify` took up to 10,000 messages
/// of 1 MiB each and serialised them in one loop on a runtime worker. Its
/// arguments are capped (a larger ask is refused with invalid params), and
/// the loop yields.
#[tokio::test]
async fn the_example_tools_refuse_what_would_hold_a_worker() {
    let server = start(&[]).await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    for (tool, arguments) in [
        ("notify", json!({ "n": 10_000 })),
        ("notify", json!({ "n": 10, "bytes": 1 << 20 })),
        ("sleep", json!({ "ms": 3_600_000 })),
    ] {
        let answer = client.call(&id, tool, arguments.clone()).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(
            answer.json()["error"]["code"],
            -32602,
            "{tool} {arguments}: {:?}",
            answer.json()
        );
    }
    let fine = client
        .call(&id, "notify", json!({ "n": 100, "bytes": 100 }))
        .await;
    assert_eq!(
        fine.json()["result"]["content"][0]["text"],
        "delivered 0 of 100"
    );
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    assert!(server.shutdown().await);
}

/// The admin listener as `mcp_server` serves it (`--admin-addr`), on
/// 127.0.0.1:0, with the drain request counted in `requested`.
async fn admin(
    args: &[&str],
    options: axum_server::mcp_app::fleet::AdminOptions,
) -> (
    SocketAddr,
    std::sync::Arc<tokio::sync::Notify>,
    tokio::task::JoinHandle<()>,
) {
    let flags = flags(args);
    let built = ops::build(&flags).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requested = std::sync::Arc::new(tokio::sync::Notify::new());
    let task = tokio::spawn(axum_server::mcp_app::fleet::serve_admin(
        listener,
        built.manager,
        std::sync::Arc::clone(&requested),
        options,
    ));
    (addr, requested, task)
}

/// `POST /drain` with `Origin: https://evil.example`
/// and `Content-Type: text/plain` (what any web page can send to a
/// loopback address) drained the node. The admin listener refuses what a
/// browser can send: an `Origin`, `Sec-Fetch-Site: cross-site`, a
/// non-loopback `Host`.
#[tokio::test]
async fn the_admin_listener_refuses_what_a_browser_can_send() {
    let (addr, requested, task) = admin(&[], Default::default()).await;
    let client = Client::new(&format!("http://{addr}/drain"));
    let post = |client: &Client, headers: &[(&str, &str)]| {
        let mut request = client
            .request(Method::POST)
            .header("content-type", "text/plain");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(Full::default()).unwrap()
    };
    for headers in [
        vec![("origin", "https://evil.example")],
        vec![("origin", "null")],
        vec![("sec-fetch-site", "cross-site")],
        vec![("host", "rebind.attacker.example")],
    ] {
        let answer = client.send(post(&client, &headers)).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{headers:?}");
    }
    let drained = tokio::time::timeout(Duration::from_millis(300), requested.notified()).await;
    assert!(drained.is_err(), "a refused request started a drain");
    // An operator's request (curl) still drains.
    let answer = client.send(post(&client, &[])).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    requested.notified().await;
    task.abort();

    // With --admin-token-file, the token too; with --metrics-on-admin, the
    // metrics are served here.
    let token = sessionreg::http::BearerTokens::new([("admin".into(), "s3cret".into())]).unwrap();
    let options = axum_server::mcp_app::fleet::AdminOptions {
        token: Some(token),
        metrics: Some(std::sync::Arc::new(
            axum_server::mcp_app::fleet::Routing::new(0),
        )),
    };
    let (addr, requested, task) = admin(&[], options).await;
    let client = Client::new(&format!("http://{addr}/drain"));
    assert_eq!(
        client.send(post(&client, &[])).await.status,
        StatusCode::UNAUTHORIZED
    );
    let answer = client
        .send(post(&client, &[("authorization", "Bearer s3cret")]))
        .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    requested.notified().await;
    let metrics = Client::with_bearer(&format!("http://{addr}/metrics"), "s3cret");
    let answer = metrics
        .send(metrics.request(Method::GET).body(Full::default()).unwrap())
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&answer.body).contains("sessionreg_sessions_live"));
    task.abort();
}

/// The example's baskets are handles (SEP-2567): one made by a 2026-07-28
/// call is used by the next call of the same principal, is unknown to
/// another principal, and once unused past its lifetime the caller hears
/// it has expired, as a tool error; the same id with a wrong secret is
/// unknown. Counted in `/metrics`.
#[tokio::test]
async fn a_basket_is_its_owners_and_says_when_it_has_expired() {
    let server = start(&[
        "--bearer-token",
        "ada=t-ada",
        "--bearer-token",
        "bob=t-bob",
        "--basket-lifetime-ms",
        "300",
    ])
    .await;
    let call = |token: &'static str, tool: &'static str, arguments: serde_json::Value| {
        let url = server.url.clone();
        async move {
            let client = Client::with_bearer(&url, token);
            // The basket tools mirror `basket` into Mcp-Param-Basket
            // (x-mcp-header), as a 2026-07-28 client sends it.
            let basket = arguments["basket"].as_str().map(str::to_string);
            let body =
                http_support::with_meta(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": { "name": tool, "arguments": arguments } }));
            let mut headers = vec![("mcp-method", "tools/call"), ("mcp-name", tool)];
            if let Some(basket) = &basket {
                headers.push(("mcp-param-basket", basket));
            }
            let answer = client.post_modern(&body, &headers).await;
            assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
            answer.json()["result"].clone()
        }
    };
    let made = call("t-ada", "basket_create", json!({})).await;
    let basket = made["structuredContent"]["basket"]
        .as_str()
        .unwrap()
        .to_string();
    let added = call(
        "t-ada",
        "basket_add",
        json!({ "basket": basket, "item": "tea" }),
    )
    .await;
    assert_eq!(added["content"][0]["text"], "1 items");
    let shown = call("t-ada", "basket_show", json!({ "basket": basket })).await;
    assert_eq!(shown["content"][0]["text"], "tea");
    let foreign = call("t-bob", "basket_show", json!({ "basket": basket })).await;
    assert_eq!(foreign["isError"], true);
    assert!(foreign["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("no basket"));
    // Unused past its lifetime (each call above used it, and so would a
    // poll of it): the reaper ends it, as /metrics shows.
    let metrics_url = server.url.replace("/mcp", "/metrics");
    let metrics = || async {
        let client = Client::new(&metrics_url);
        let request = client.request(Method::GET).body(Full::default()).unwrap();
        String::from_utf8_lossy(&client.send(request).await.body).to_string()
    };
    let mut text = String::new();
    for _ in 0..250 {
        text = metrics().await;
        if text.contains("sessionreg_handles_live 0") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(text.contains("sessionreg_handles_live 0"), "{text}");
    assert!(text.contains("sessionreg_handles_minted_total 1"), "{text}");
    assert!(
        text.contains("sessionreg_handles_ended_total{reason=\"idle_timeout\"} 1"),
        "{text}"
    );
    let expired = call("t-ada", "basket_show", json!({ "basket": basket })).await;
    assert_eq!(expired["isError"], true);
    assert_eq!(
        expired["content"][0]["text"],
        format!("basket `{basket}` has expired; call basket_create to start a new one")
    );
    // The same id with one digit of its secret changed: "expired" would
    // tell a caller without the secret that a basket was made in that slot
    // and ended (a generation oracle). It is unknown.
    let mut forged = basket.clone().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
    let forged = String::from_utf8(forged).unwrap();
    let answer = call("t-ada", "basket_show", json!({ "basket": forged })).await;
    assert_eq!(answer["isError"], true);
    assert!(
        answer["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("no basket"),
        "{answer}"
    );
    assert!(server.shutdown().await);
}

/// `TCP_NODELAY` on the sockets both listeners accept, read back from the
/// kernel (getsockopt on the accepted socket): the example's public
/// listener (served by `sessionreg::http::serve`) and its admin listener
/// (served by hand). Without it a response's last write can wait for the
/// client's delayed ACK.
#[tokio::test]
async fn both_listeners_set_nodelay_on_the_connections_they_accept() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start(&[]).await;
    let (admin_addr, _requested, admin_task) = admin(&[], Default::default()).await;
    for addr in [server.addr, admin_addr] {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        // One whole request and its answer: the connection is being served.
        let request = format!("GET /metrics HTTP/1.1\r\nhost: {addr}\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut status = [0u8; 9];
        stream.read_exact(&mut status).await.unwrap();
        assert_eq!(&status, b"HTTP/1.1 ");
        let client = stream.into_std().unwrap();
        assert!(
            mcp_test_client::accepted_nodelay(&client).unwrap(),
            "{addr}: the accepted socket has TCP_NODELAY"
        );
        assert!(!client.nodelay().unwrap(), "the control: the client's end");
    }
    admin_task.abort();
    assert!(server.shutdown().await);
}

// ------------------------------------------------ the baskets, bounded

/// The next message of a stream (a safety bound against one that never
/// delivers, not a measure).
async fn next(stream: &mut mcp_test_client::SseStream) -> serde_json::Value {
    stream
        .next_within(Duration::from_secs(10))
        .await
        .expect("the stream reads")
        .expect("a message")
}

/// A `tools/call` of `tool` at 2026-07-28 (no session), with `token` if
/// given, its `basket` argument mirrored into `Mcp-Param-Basket`: the
/// call's `result`.
async fn modern_tool(
    url: &str,
    token: Option<&str>,
    tool: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let client = match token {
        Some(token) => Client::with_bearer(url, token),
        None => Client::new(url),
    };
    let basket = arguments["basket"].as_str().map(str::to_string);
    let body = http_support::with_meta(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments } }));
    let mut headers = vec![("mcp-method", "tools/call"), ("mcp-name", tool)];
    if let Some(basket) = &basket {
        headers.push(("mcp-param-basket", basket));
    }
    let answer = client.post_modern(&body, &headers).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    answer.json()
}

/// `basket_create`'s basket id, or the tool error's text.
async fn create_basket(url: &str, token: Option<&str>) -> Result<String, String> {
    let answer = modern_tool(url, token, "basket_create", json!({})).await;
    let result = &answer["result"];
    match result["structuredContent"]["basket"].as_str() {
        Some(id) if result["isError"] == false => Ok(id.to_string()),
        _ => Err(result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("basket_create: {answer}"))
            .to_string()),
    }
}

/// The value of a sample of `/metrics`, by name.
async fn sample(server: &Running, name: &str) -> u64 {
    server.metric(name).await.parse().unwrap()
}

/// Polls `/metrics` until `done` holds of the samples named (a safety
/// deadline, not a measure); returns them as last read.
async fn samples_until(
    server: &Running,
    names: &[&str],
    done: impl Fn(&[u64]) -> bool,
) -> Vec<u64> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut values = Vec::new();
        for name in names {
            values.push(sample(server, name).await);
        }
        if done(&values) || tokio::time::Instant::now() > deadline {
            return values;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every principal holds at most its share of the baskets, however it was
/// authenticated: an OAuth access token's principal (`ISSUER#SUBJECT`) as
/// a static token's; past it `basket_create` says so, and no other
/// principal notices.
#[cfg(feature = "oauth")]
#[tokio::test]
async fn every_principal_gets_its_basket_share_an_oauth_one_too() {
    let authority = oauth::Authority::start().await;
    let share = ["--max-baskets", "100", "--baskets-per-principal", "2"];
    let oauth_only = start(
        &[
            ["--oauth-issuer", &authority.issuer].as_slice(),
            &["--resource", oauth::RESOURCE],
            &share,
        ]
        .concat(),
    )
    .await;
    let static_only =
        start(&[["--bearer-token", "carol=t-carol"].as_slice(), &share].concat()).await;
    let (ada, bob) = (authority.token("ada"), authority.token("bob"));
    for (server, token) in [(&oauth_only, ada.as_str()), (&static_only, "t-carol")] {
        for _ in 0..2 {
            create_basket(&server.url, Some(token)).await.unwrap();
        }
        assert_eq!(
            create_basket(&server.url, Some(token)).await,
            Err("you keep 2 baskets already, the most one may; let one expire first".into()),
            "a principal past its share"
        );
    }
    create_basket(&oauth_only.url, Some(&bob)).await.unwrap();
    assert!(oauth_only.shutdown().await);
    assert!(static_only.shutdown().await);
}

/// Anonymous callers share one owner: the share is no bound of theirs (it
/// would let a few of them lock every other out), the store's capacity is.
#[tokio::test]
async fn anonymous_callers_keep_the_global_basket_bound() {
    let server = start(&["--max-baskets", "3", "--baskets-per-principal", "1"]).await;
    for _ in 0..3 {
        create_basket(&server.url, None).await.unwrap();
    }
    assert_eq!(
        create_basket(&server.url, None).await,
        Err("too many baskets; try again later".into())
    );
    assert!(server.shutdown().await);
}

/// `basket_add` publishes its update under the basket's canonical URI (the
/// one `resources/list` shows), whatever padding the id it was given had:
/// a listener of that URI hears an add made with a padded id, before an
/// add to another basket made after it.
#[tokio::test]
async fn a_listener_of_a_baskets_uri_hears_an_add_made_with_a_padded_id() {
    let server = start(&[]).await;
    let padded = create_basket(&server.url, None).await.unwrap();
    let other = create_basket(&server.url, None).await.unwrap();
    let (padded_uri, other_uri) = (format!("basket://{padded}"), format!("basket://{other}"));
    // The URIs resources/list shows.
    let client = Client::new(&server.url);
    let session = client.open().await;
    let listed = client
        .post(
            Some(&session),
            &json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/list" }),
        )
        .await
        .json();
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, [padded_uri.as_str(), other_uri.as_str()]);
    // A 2026-07-28 listener of both.
    let body = http_support::with_meta(
        json!({ "jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen",
        "params": { "notifications": { "resourceSubscriptions": [padded_uri, other_uri] } } }),
    );
    let request =
        client.modern_request(body.to_string(), &[("mcp-method", "subscriptions/listen")]);
    let response = client.send_raw(request).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = mcp_test_client::SseStream::new(response.into_body());
    let ack = next(&mut stream).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // The add with a padded id (a legacy session's call: no mirrored
    // header to match), then one to the other basket.
    for (basket, item) in [(format!(" {padded}\n"), "tea"), (other.clone(), "milk")] {
        let added = client
            .call(
                &session,
                "basket_add",
                json!({ "basket": basket, "item": item }),
            )
            .await
            .json();
        assert_eq!(added["result"]["content"][0]["text"], "1 items", "{added}");
    }
    let first = next(&mut stream).await;
    assert_eq!(first["method"], "notifications/resources/updated");
    assert_eq!(
        first["params"]["uri"], padded_uri,
        "the padded add is heard first, under the canonical URI: {first}"
    );
    assert_eq!(next(&mut stream).await["params"]["uri"], other_uri);
    drop(stream);
    assert!(server.shutdown().await);
}

/// A basket that expires leaves every structure that indexes it (its
/// owner's list, the bytes counted against its owner), whether or not the
/// owner ever lists its baskets: after 20 baskets of an owner that never
/// lists have expired, none is indexed and no owner is.
#[tokio::test]
async fn expired_baskets_leave_their_owners_list_without_a_listing() {
    let server = start(&["--bearer-token", "ada=t-ada", "--basket-lifetime-ms", "500"]).await;
    for i in 0..20 {
        let basket = create_basket(&server.url, Some("t-ada")).await.unwrap();
        let item = format!("item {i}");
        let added = modern_tool(
            &server.url,
            Some("t-ada"),
            "basket_add",
            json!({ "basket": basket, "item": item }),
        )
        .await;
        assert_eq!(added["result"]["content"][0]["text"], "1 items", "{added}");
    }
    assert_eq!(sample(&server, "mcp_app_baskets_indexed").await, 20);
    // Each item costs its bytes and 24 more.
    let charged: usize = (0..20).map(|i| format!("item {i}").len() + 24).sum();
    assert_eq!(
        sample(&server, "mcp_app_basket_item_bytes").await,
        charged as u64
    );
    let names = [
        "sessionreg_handles_live",
        "mcp_app_baskets_indexed",
        "mcp_app_basket_owners_indexed",
        "mcp_app_basket_item_bytes",
    ];
    let left = samples_until(&server, &names, |v| v.iter().all(|&n| n == 0)).await;
    assert_eq!(
        left,
        [0, 0, 0, 0],
        "live baskets, baskets indexed, owners indexed, item bytes, once all expired"
    );
    assert!(server.shutdown().await);
}

/// A basket's item is bounded in bytes (the schema's `maxLength`): a
/// longer one is refused (-32602) and the basket keeps nothing of it.
#[tokio::test]
async fn a_basket_item_is_bounded_in_bytes() {
    let server = start(&[]).await;
    let basket = create_basket(&server.url, None).await.unwrap();
    let long = "x".repeat(64 * 1024);
    let refused = modern_tool(
        &server.url,
        None,
        "basket_add",
        json!({ "basket": basket, "item": long }),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let shown = modern_tool(
        &server.url,
        None,
        "basket_show",
        json!({ "basket": basket }),
    )
    .await;
    assert_eq!(shown["result"]["content"][0]["text"], "", "{shown}");
    assert!(server.shutdown().await);
}

/// The items' bytes are bounded per principal and in all (each item costs
/// its bytes and 24 more): past its bytes a principal hears so, in any of
/// its baskets, and another principal can still add; past all, everyone
/// hears that the baskets are full.
#[tokio::test]
async fn the_baskets_bytes_are_bounded_per_principal_and_in_all() {
    let server = start(&[
        "--bearer-token",
        "ada=t-ada",
        "--bearer-token",
        "bob=t-bob",
        "--bearer-token",
        "carol=t-carol",
        "--basket-bytes",
        "4096",
        "--basket-bytes-per-principal",
        "2048",
    ])
    .await;
    // 1,000 bytes: 1,024 charged.
    let item = "x".repeat(1000);
    let add = |token: &'static str, basket: String| {
        let (url, item) = (server.url.clone(), item.clone());
        async move {
            let answer = modern_tool(
                &url,
                Some(token),
                "basket_add",
                json!({ "basket": basket, "item": item }),
            )
            .await;
            answer["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("basket_add: {answer}"))
                .to_string()
        }
    };
    let ada = create_basket(&server.url, Some("t-ada")).await.unwrap();
    assert_eq!(add("t-ada", ada.clone()).await, "1 items");
    assert_eq!(add("t-ada", ada.clone()).await, "2 items");
    let over = "your baskets hold 2048 bytes already, and 2048 is the most one's may; \
                let one expire first";
    assert_eq!(add("t-ada", ada).await, over);
    let another = create_basket(&server.url, Some("t-ada")).await.unwrap();
    assert_eq!(add("t-ada", another).await, over, "all of ada's baskets");
    let bob = create_basket(&server.url, Some("t-bob")).await.unwrap();
    assert_eq!(add("t-bob", bob.clone()).await, "1 items");
    assert_eq!(add("t-bob", bob).await, "2 items");
    let carol = create_basket(&server.url, Some("t-carol")).await.unwrap();
    assert_eq!(
        add("t-carol", carol).await,
        "the baskets hold all the bytes they may; try again later"
    );
    assert_eq!(sample(&server, "mcp_app_basket_item_bytes").await, 4096);
    assert!(server.shutdown().await);
}

/// A session keeps at most 64 bytes of the client's name (it is only ever
/// logged), however long the name `initialize` sent.
#[tokio::test]
async fn a_session_keeps_a_bounded_client_name() {
    let server = start(&[]).await;
    let client = Client::new(&server.url);
    let answer = client
        .post(None, &initialize_body(&"n".repeat(100_000)))
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        sample(&server, "mcp_app_client_name_bytes").await,
        axum_server::mcp_app::CLIENT_NAME_BYTES as u64
    );
    assert!(server.shutdown().await);
}

/// The test's authorization server: its OpenID metadata and its JWKS (one
/// RSA key, `tests/oauth_keys/rsa-a.pem`), on 127.0.0.1:0; and the access
/// tokens it would issue.
#[cfg(feature = "oauth")]
mod oauth {
    use bytes::Bytes;
    use http_body_util::Full;
    use hyper_util::rt::TokioIo;
    use jsonwebtoken::jwk::Jwk;
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    use serde_json::json;

    /// The resource the tokens are for (their `aud`).
    pub const RESOURCE: &str = "https://mcp.example.com/mcp";

    pub struct Authority {
        pub issuer: String,
        key: EncodingKey,
        task: tokio::task::JoinHandle<()>,
    }

    impl Authority {
        pub async fn start() -> Authority {
            let pem = std::fs::read(format!(
                "{}/tests/oauth_keys/rsa-a.pem",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap();
            let key = EncodingKey::from_rsa_pem(&pem).unwrap();
            let mut jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).unwrap();
            jwk.common.key_id = Some("a".into());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let issuer = format!("http://{}", listener.local_addr().unwrap());
            let metadata = json!({ "issuer": issuer, "jwks_uri": format!("{issuer}/jwks"),
                                   "response_types_supported": ["code"] });
            let jwks = json!({ "keys": [jwk] });
            let task = tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (metadata, jwks) = (metadata.to_string(), jwks.to_string());
                    tokio::spawn(async move {
                        let service =
                            hyper::service::service_fn(move |request: http::Request<_>| {
                                let body = match request.uri().path() {
                                    "/.well-known/openid-configuration" => Some(metadata.clone()),
                                    "/jwks" => Some(jwks.clone()),
                                    _ => None,
                                };
                                async move {
                                    let mut response = http::Response::new(Full::new(Bytes::from(
                                        body.clone().unwrap_or_default(),
                                    )));
                                    if body.is_none() {
                                        *response.status_mut() = http::StatusCode::NOT_FOUND;
                                    }
                                    response.headers_mut().insert(
                                        "content-type",
                                        "application/json".parse().unwrap(),
                                    );
                                    Ok::<_, std::convert::Infallible>(response)
                                }
                            });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
            Authority { issuer, key, task }
        }

        /// An access token of `sub` for [`RESOURCE`], valid for an hour.
        pub fn token(&self, sub: &str) -> String {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let claims = json!({ "iss": self.issuer, "sub": sub, "aud": RESOURCE,
                                 "iat": now, "exp": now + 3600 });
            let mut header = Header::new(Algorithm::RS256);
            header.kid = Some("a".into());
            jsonwebtoken::encode(&header, &claims, &self.key).unwrap()
        }
    }

    impl Drop for Authority {
        fn drop(&mut self) {
            self.task.abort();
        }
    }
}

//! Hostile clients over real sockets. Each test runs a kind of abuse
//! against `serve`, and checks that a well-behaved client is served
//! meanwhile, that nothing answers 500 and no handler fails or panics, and
//! that live sessions (and open connections) return to 0 once the hostile
//! clients are gone.
//!
//! The bounds are set small here (timeouts of a few hundred milliseconds,
//! small queues and caps) so that each test takes seconds; no test asserts
//! how long anything took: every wait is "until it happens, giving up after
//! a generous bound". The `#[ignore]`d soak at the end runs the same abuse at
//! scale, in release, from `.ci/run`:
//!
//! ```text
//! cargo test --release --test http_hostile -- --ignored --nocapture
//! ```
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{
    assert_clean, eventually, initialize_body, served, short_bounds, short_connections, with_meta,
    Answer, Server, ACCEPT_BOTH, SHORT,
};
use serde_json::json;
use sessionreg::http::Connections;
use sessionreg::Reason;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;

/// The longest any single wait here lasts before the test gives up.
const GIVE_UP: Duration = Duration::from_secs(30);
/// The session idle timeout of the tests that need sessions reaped: far
/// longer than a test's own requests are apart, even on a loaded machine.
const REAP: Duration = Duration::from_secs(2);

async fn connect(server: &Server) -> TcpStream {
    TcpStream::connect(server.addr).await.unwrap()
}

/// Reads until the server closes the connection; what it sent, or `None`
/// if it was still open after the give-up bound.
async fn read_until_closed(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let until = tokio::time::Instant::now() + GIVE_UP;
    let mut buf = [0u8; 8192];
    loop {
        match tokio::time::timeout_at(until, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(out),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

/// The head of a POST to /mcp with the MCP headers, `extra` header lines
/// and a `Content-Length` of `length`.
fn post_head(server: &Server, extra: &str, length: usize) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: {ACCEPT_BOTH}\r\n{extra}content-length: {length}\r\n\r\n",
        server.addr
    )
}

/// The status code of a raw HTTP/1.1 response.
fn status_of(response: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(response.get(..12)?).ok()?;
    text.strip_prefix("HTTP/1.1 ")?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_headers_and_silent_connections_are_shed() {
    let server = Server::start_short(|b| b).await;
    let mut hostile = JoinSet::new();
    for i in 0..150 {
        let mut stream = connect(&server).await;
        hostile.spawn(async move {
            match i % 3 {
                // Half a header, then nothing.
                0 => stream
                    .write_all(b"POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-ty")
                    .await
                    .unwrap(),
                // The start of the HTTP/2 preface: the server cannot yet
                // tell which protocol this is.
                1 => stream.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap(),
                // Nothing at all.
                _ => {}
            }
            read_until_closed(&mut stream).await
        });
    }
    served(&server).await;
    while let Some(shed) = hostile.join_next().await {
        let sent = shed.unwrap().expect("the server closed the connection");
        // Nothing was answered to a request never finished.
        assert!(status_of(&sent).is_none_or(|s| s < 500), "{sent:?}");
    }
    assert_clean(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_get_408_and_are_shed() {
    let server = Server::start_short(|b| b).await;
    let mut hostile = JoinSet::new();
    for i in 0..60 {
        let mut stream = connect(&server).await;
        let head = if i % 2 == 0 {
            post_head(&server, "", 1000)
        } else {
            post_head(&server, "transfer-encoding: chunked\r\n", 0)
                .replace("content-length: 0\r\n", "")
        };
        hostile.spawn(async move {
            stream.write_all(head.as_bytes()).await.unwrap();
            // A little of the body, then a trickle far slower than needed.
            let first: &[u8] = if i % 2 == 0 {
                b"{\"jsonrpc\""
            } else {
                b"a\r\n{\"jsonrpc\"\r\n"
            };
            stream.write_all(first).await.unwrap();
            let trickle = async {
                loop {
                    tokio::time::sleep(Duration::from_millis(150)).await;
                    let byte: &[u8] = if i % 2 == 0 { b" " } else { b"1\r\n \r\n" };
                    if stream.write_all(byte).await.is_err() {
                        break;
                    }
                }
            };
            tokio::select! {
                () = trickle => {}
                () = tokio::time::sleep(GIVE_UP) => {}
            }
            read_until_closed(&mut stream).await
        });
    }
    served(&server).await;
    while let Some(shed) = hostile.join_next().await {
        let sent = shed.unwrap().expect("the server closed the connection");
        assert_eq!(
            status_of(&sent),
            Some(408),
            "{:?}",
            String::from_utf8_lossy(&sent)
        );
    }
    assert_eq!(server.http().responses(408), 60);
    assert_clean(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_body_leaks_nothing() {
    let server = Server::start_short(|b| b).await;
    let client = server.client();
    let id = client.initialize().await;
    for i in 0..100 {
        let mut stream = connect(&server).await;
        let extra = if i % 2 == 0 {
            format!("mcp-session-id: {id}\r\n")
        } else {
            String::new()
        };
        stream
            .write_all(post_head(&server, &extra, 1_000_000).as_bytes())
            .await
            .unwrap();
        stream.write_all(&[b' '; 1000]).await.unwrap();
        drop(stream);
    }
    // The session the half-sent requests named is untouched.
    let echo = client.call(&id, "echo", json!({})).await;
    assert_eq!(echo.status, StatusCode::OK);
    served(&server).await;
    assert!(eventually(|| server.http().handlers_in_flight == 0).await);
    assert_eq!(server.live(), 1);
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    drop(client);
    assert_clean(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_sessions_each_holding_a_stream() {
    const SESSIONS: usize = 200;
    let server = Server::start_short(|b| b.idle_timeout(Some(REAP))).await;
    let client = server.client();
    let mut streams = Vec::new();
    for _ in 0..SESSIONS {
        let id = client.initialize().await;
        let stream = client.open_stream(&id, None).await;
        assert_eq!(stream.status(), StatusCode::OK);
        streams.push(stream);
    }
    // Streams keep their sessions (in flight: never idle) and their
    // connections (in flight: never idle either).
    tokio::time::sleep(SHORT * 3).await;
    assert_eq!(server.live(), SESSIONS as u64);
    assert_eq!(server.http().streams_open, SESSIONS as u64);
    served(&server).await;
    // The clients go: streams end, sessions go idle and are reaped.
    drop(streams);
    drop(client);
    assert_clean(&server).await;
    assert_eq!(
        server.closes.count_reason(Reason::IdleTimeout),
        SESSIONS,
        "every held session ended idle"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_client_that_stops_reading_is_cut_off() {
    let server =
        Server::start_short(|b| b.idle_timeout(Some(REAP)).stream_queue(16, 64 * 1024)).await;
    let client = server.client();
    let id = client.initialize().await;
    // A raw GET stream with a tiny receive buffer, never read.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(server.addr).await.unwrap();
    stalled
        .write_all(
            format!(
                "GET /mcp HTTP/1.1\r\nhost: {}\r\naccept: text/event-stream\r\n\
                 mcp-session-id: {id}\r\n\r\n",
                server.addr
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    assert!(eventually(|| server.http().streams_open == 1).await);
    // A well-behaved session with a stream it reads, beside it.
    let reader_id = client.initialize().await;
    let mut reading = client.open_stream(&reader_id, None).await;
    // Notifications until the stream stalls: the socket buffers fill, hyper
    // stops taking frames, they wait in the queue past the stall timeout,
    // and the stream is ended (the reading one stays).
    let mut rounds = 0;
    while server.http().streams_open == 2 {
        let answer = client
            .call(&id, "notify", json!({ "n": 16, "bytes": 16_384 }))
            .await;
        assert_eq!(answer.status, StatusCode::OK);
        rounds += 1;
        assert!(
            rounds < 2000,
            "the stream never stalled: {:?}",
            server.http()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // What the stream could not take was counted, never silently lost.
    assert!(server.http().notifications_dropped > 0);
    // The stream is ended for stalling: the session is idle again, and is
    // reaped; the connection is closed for its stalled write.
    assert!(
        eventually(|| server.live() == 1).await,
        "the stalled session was not reaped: {:?}",
        server.http()
    );
    // Its close callback runs just after the live count drops.
    assert!(eventually(|| server.closes.count_reason(Reason::IdleTimeout) == 1).await);
    // The reading session was served all along.
    let answer = client.call(&reader_id, "notify", json!({ "n": 3 })).await;
    assert_eq!(answer.json()["result"]["delivered"], 3);
    let (text, _) = http_support::read_sse(reading.body_mut(), GIVE_UP, |t| {
        http_support::sse_events(t).len() >= 3
    })
    .await;
    assert_eq!(http_support::sse_events(&text).len(), 3);
    served(&server).await;
    drop(reading);
    assert_eq!(client.delete(&reader_id).await.status, StatusCode::OK);
    drop(client);
    assert!(read_until_closed(&mut stalled).await.is_some());
    assert_clean(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_calls_past_the_session_cap_get_429_and_the_session_serves_on() {
    const CALLS: usize = 300;
    let server = Server::start_short(|b| b).await;
    let client = Arc::new(server.client());
    let id = client.initialize().await;
    let mut calls = JoinSet::new();
    for _ in 0..CALLS {
        let (client, id) = (Arc::clone(&client), id.clone());
        calls.spawn(async move { client.call(&id, "gate", json!({})).await });
    }
    // 100 wait at the gate; every other one was refused with 429.
    let mut refused = 0;
    while refused < CALLS - 100 {
        let answer: Answer = tokio::time::timeout(GIVE_UP, calls.join_next())
            .await
            .expect("refusals come back while the gate is shut")
            .unwrap()
            .unwrap();
        assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(answer.headers["retry-after"], "1");
        assert_eq!(answer.json()["id"], 7);
        refused += 1;
    }
    assert!(eventually(|| server.gate.waiting() == 100).await);
    // The metrics tell (GET /metrics serves this text).
    let metrics = server.manager.metrics();
    for line in [
        "sessionreg_http_handlers_in_flight 100",
        "sessionreg_http_responses_total{code=\"429\"} 200",
        "sessionreg_sessions_live 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    // Full: this session's next request is refused too; others are served.
    let ping = json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" });
    assert_eq!(
        client.post(Some(&id), &ping).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    served(&server).await;
    server.gate.open();
    while let Some(answer) = calls.join_next().await {
        assert_eq!(answer.unwrap().status, StatusCode::OK);
    }
    // The session serves on.
    assert_eq!(client.post(Some(&id), &ping).await.status, StatusCode::OK);
    assert_eq!(server.http().responses(429), (CALLS - 100 + 1) as u64);
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    drop(client);
    assert_clean(&server).await;
}

/// `calls` (60 `gate` calls) against a cap of `cap` handlers: waiting at
/// the gate and refused (503 with `Retry-After`) add up to all, the cap
/// holding to within one request per worker thread (two); then the gate
/// opens and every waiting one is answered.
async fn past_the_cap(server: &Server, mut calls: JoinSet<Answer>, cap: usize) {
    const WORKERS: usize = 2;
    let mut refused = 0;
    loop {
        let waiting = server.gate.waiting();
        assert!(
            waiting <= cap + WORKERS,
            "{waiting} handlers past a cap of {cap}"
        );
        if waiting + refused == 60 {
            break;
        }
        let answer = tokio::time::timeout(GIVE_UP, calls.join_next())
            .await
            .expect("refusals come back while the gate is shut")
            .unwrap()
            .unwrap();
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(answer.headers["retry-after"], "1");
        refused += 1;
    }
    assert!(server.gate.waiting() >= cap);
    server.gate.open();
    while let Some(answer) = calls.join_next().await {
        assert_eq!(answer.unwrap().status, StatusCode::OK);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_past_the_global_cap_get_503() {
    const CAP: usize = 20;
    let server = Server::start_short(|b| b.max_handlers(CAP)).await;
    let client = Arc::new(server.client());
    let sessions = [client.initialize().await, client.initialize().await];
    let mut calls = JoinSet::new();
    for i in 0..60 {
        let (client, id) = (Arc::clone(&client), sessions[i % 2].clone());
        calls.spawn(async move { client.call(&id, "gate", json!({})).await });
    }
    past_the_cap(&server, calls, CAP).await;
    served(&server).await;
    for id in &sessions {
        assert_eq!(client.delete(id).await.status, StatusCode::OK);
    }
    drop(client);
    assert_clean(&server).await;
}

/// The same cap at 2026-07-28, whose pending handlers run on their
/// requests' own tasks (no task spawned for them): still counted against
/// it, the rest refused 503, every gated one answered once the gate opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_handlers_past_the_global_cap_get_503() {
    const CAP: usize = 20;
    let server = Server::start_short(|b| b.max_handlers(CAP)).await;
    let client = Arc::new(server.client());
    let body = with_meta(json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "gate", "arguments": {} },
    }));
    let mut calls = JoinSet::new();
    for _ in 0..60 {
        let (client, body) = (Arc::clone(&client), body.clone());
        calls.spawn(async move {
            let headers = [("mcp-method", "tools/call"), ("mcp-name", "gate")];
            client.post_modern(&body, &headers).await
        });
    }
    past_the_cap(&server, calls, CAP).await;
    drop(client);
    assert_clean(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_flood_meets_capacity_then_the_reaper_frees_it() {
    const CAPACITY: usize = 50;
    // Sessions idle out after 3 s: far longer than the flood takes (80
    // concurrent requests), so the flood meets capacity; then the reaper
    // frees them.
    let server = Server::start_short(|b| {
        b.capacity(CAPACITY)
            .idle_timeout(Some(Duration::from_secs(3)))
    })
    .await;
    let client = Arc::new(server.client());
    let mut flood = JoinSet::new();
    for _ in 0..CAPACITY + 30 {
        let client = Arc::clone(&client);
        flood.spawn(async move { client.post(None, &initialize_body("flood")).await });
    }
    let (mut created, mut refused) = (0, 0);
    while let Some(answer) = flood.join_next().await {
        let answer = answer.unwrap();
        match answer.status {
            StatusCode::OK => created += 1,
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(answer.headers["retry-after"], "1");
                assert!(answer.session_id().is_none());
                refused += 1;
            }
            other => panic!("initialize answered {other}"),
        }
    }
    assert_eq!((created, refused), (CAPACITY, 30));
    assert!(server.live() <= CAPACITY as u64);
    // Nobody DELETEs: the reaper frees them all, and there is room again.
    assert!(eventually(|| server.live() == 0).await);
    served(&server).await;
    drop(client);
    assert_clean(&server).await;
}

/// A JSON-RPC message whose body is exactly `size` bytes: `method` with
/// params padded by a string.
fn padded(method: &str, size: usize) -> String {
    let head = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"pad":""#);
    let tail = r#""}}"#;
    format!("{head}{}{tail}", "x".repeat(size - head.len() - tail.len()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_bodies_cost_their_size_and_the_limit_holds() {
    const MAX: usize = 4 * 1024 * 1024;
    let server = Server::start_short(|b| b.body_read_timeout(Some(Duration::from_secs(20)))).await;
    let client = Arc::new(server.client());
    let id = client.initialize().await;
    let array = Arc::new(format!("[{}0]", "0,".repeat((MAX - 3) / 2)));
    let mut posts = JoinSet::new();
    for i in 0..8 {
        let (client, id, array) = (Arc::clone(&client), id.clone(), Arc::clone(&array));
        let head = post_head(&server, &format!("mcp-session-id: {id}\r\n"), array.len());
        let raw = connect(&server).await;
        posts.spawn(async move {
            match i % 3 {
                // A 4 MiB batch: refused from its first byte, before the
                // rest is read (raw: the server answers mid-upload).
                0 => {
                    let (mut read, mut write) = raw.into_split();
                    let upload = tokio::spawn(async move {
                        let _ = write.write_all(head.as_bytes()).await;
                        let _ = write.write_all(array.as_bytes()).await;
                        write
                    });
                    let mut sent = Vec::new();
                    let _ = tokio::time::timeout(GIVE_UP, read.read_to_end(&mut sent)).await;
                    drop(upload.await);
                    (status_of(&sent), 400, None)
                }
                // 4 MiB of params the application never parses.
                1 => {
                    let answer = client.post_text(Some(&id), padded("ping", MAX)).await;
                    (Some(answer.status.as_u16()), 200, None)
                }
                // A 4 MiB initialize: a session like any other.
                _ => {
                    let body = initialize_body("big").to_string().replacen(
                        '{',
                        &format!(r#"{{"pad":"{}","#, "x".repeat(MAX - 200)),
                        1,
                    );
                    let answer = client.post_text(None, body).await;
                    (Some(answer.status.as_u16()), 200, answer.session_id())
                }
            }
        });
    }
    served(&server).await;
    while let Some(done) = posts.join_next().await {
        let (got, wanted, created) = done.unwrap();
        assert_eq!(got, Some(wanted));
        if let Some(created) = created {
            assert_eq!(client.delete(&created).await.status, StatusCode::OK);
        }
    }
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    drop(client);
    assert_clean(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_json_is_refused_or_kept_raw_never_recursed() {
    // Megabyte bodies: a body read timeout that a loaded machine meets (the
    // point here is their depth, not their pace).
    let server = Server::start_short(|b| b.body_read_timeout(Some(Duration::from_secs(20)))).await;
    let client = server.client();
    let id = client.initialize().await;
    let depth = 500_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let cases = [
        // The whole body: a batch.
        (None, deep.clone(), StatusCode::BAD_REQUEST),
        // Unbalanced: a parse error.
        (
            Some(id.as_str()),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{}"#,
                "[".repeat(depth)
            ),
            StatusCode::BAD_REQUEST,
        ),
        // In an unknown member and in params nobody reads: skipped over.
        (
            Some(id.as_str()),
            format!(r#"{{"x":{deep},"jsonrpc":"2.0","id":1,"method":"ping","params":{deep}}}"#),
            StatusCode::OK,
        ),
        // Params the application parses: its own invalid-params error.
        (
            Some(id.as_str()),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{deep}}}"#),
            StatusCode::OK,
        ),
        // Objects nested in an initialize.
        (
            None,
            initialize_body("deep").to_string().replacen(
                '{',
                &format!(
                    r#"{{"x":{}1{},"#,
                    r#"{"a":"#.repeat(depth),
                    "}".repeat(depth)
                ),
                1,
            ),
            StatusCode::OK,
        ),
    ];
    for (session, body, status) in cases {
        let answer = client.post_text(session, body).await;
        assert_eq!(
            answer.status,
            status,
            "{:?}",
            String::from_utf8_lossy(&answer.body)
        );
        if let Some(created) = answer.session_id() {
            assert_eq!(client.delete(&created).await.status, StatusCode::OK);
        }
    }
    served(&server).await;
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    drop(client);
    assert_clean(&server).await;
}

/// A cheap deterministic byte generator (no rand dependency needed).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_bytes_get_an_error_or_a_closed_connection() {
    let server = Server::start_short(|b| b).await;
    let mut payloads: Vec<Vec<u8>> = (0..40)
        .map(|i| noise(i, 1 + (i as usize * 997) % 20_000))
        .collect();
    let h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    payloads.extend([
        [h2.clone(), noise(99, 500)].concat(),
        [h2, vec![0; 9]].concat(),
        b"GET /mcp HTTP/1.1\r\n\r\n".to_vec(),
        b"POST /mcp HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n".to_vec(),
        b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n".to_vec(),
        b"\r\n\r\n\r\n\r\n".to_vec(),
        [
            b"GET /".to_vec(),
            vec![b'a'; 500_000],
            b" HTTP/1.1\r\n\r\n".to_vec(),
        ]
        .concat(),
    ]);
    let mut hostile = JoinSet::new();
    for payload in payloads {
        let mut stream = connect(&server).await;
        hostile.spawn(async move {
            // The server may close before it has read everything.
            let _ = stream.write_all(&payload).await;
            read_until_closed(&mut stream).await
        });
    }
    served(&server).await;
    while let Some(shed) = hostile.join_next().await {
        let sent = shed.unwrap().expect("the server closed the connection");
        assert!(
            status_of(&sent).is_none_or(|s| (400..500).contains(&s)),
            "{:?}",
            String::from_utf8_lossy(&sent)
        );
    }
    assert_clean(&server).await;
}

/// Resident memory of this process, from `/proc/self/status` (Linux).
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The same abuse at scale: 5,000 sessions each holding a stream, 1,000
/// slowloris connections, 300 long calls on one session, an initialize
/// flood to capacity, 32 concurrent 4 MiB bodies. Prints the figures it
/// sees (in-process: client and server share this process, so its RSS
/// figures are upper bounds; `benches/hostile.py` measures a server alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "soak: run in release from .ci/run"]
async fn soak_hostile_clients_at_scale() {
    const STREAMS: usize = 5_000;
    const SLOWLORIS: usize = 1_000;
    const CAPACITY: usize = 8_000;
    let server = Server::start_connections(
        |b| {
            b.capacity(CAPACITY)
                .idle_timeout(Some(Duration::from_secs(3)))
                .body_read_timeout(Some(Duration::from_secs(20)))
                .stall_timeout(Some(Duration::from_secs(2)))
        },
        Connections::default()
            .header_read_timeout(Some(Duration::from_secs(1)))
            .idle_timeout(Some(Duration::from_secs(2))),
    )
    .await;
    // The server closes a keep-alive connection idle for the header read
    // timeout (1 s): the client retires its idle connections sooner.
    let client = Arc::new(server.client());

    // 5,000 sessions with a stream each.
    let before = rss_bytes();
    let mut streams = Vec::with_capacity(STREAMS);
    for _ in 0..STREAMS {
        let id = client.initialize().await;
        let stream = client.open_stream(&id, None).await;
        assert_eq!(stream.status(), StatusCode::OK);
        streams.push(stream);
    }
    let after = rss_bytes();
    assert_eq!(server.http().streams_open, STREAMS as u64);
    served(&server).await;
    if let (Some(before), Some(after)) = (before, after) {
        eprintln!(
            "{STREAMS} sessions with a stream: {:.1} KiB RSS each (client and server)",
            (after.saturating_sub(before)) as f64 / STREAMS as f64 / 1024.0
        );
    }
    drop(streams);

    // 1,000 slowloris connections, shed while a client is served.
    let mut hostile = JoinSet::new();
    for _ in 0..SLOWLORIS {
        let mut stream = connect(&server).await;
        hostile.spawn(async move {
            stream
                .write_all(b"POST /mcp HTTP/1.1\r\nhost: x\r\n")
                .await
                .unwrap();
            read_until_closed(&mut stream).await
        });
    }
    served(&server).await;
    while let Some(shed) = hostile.join_next().await {
        assert!(shed.unwrap().is_some(), "a slowloris connection was kept");
    }

    // 300 long calls on one session: 100 run, 200 get 429.
    let id = client.initialize().await;
    let mut calls = JoinSet::new();
    for _ in 0..300 {
        let (client, id) = (Arc::clone(&client), id.clone());
        calls.spawn(async move { client.call(&id, "gate", json!({})).await.status });
    }
    assert!(eventually(|| server.gate.waiting() == 100).await);
    served(&server).await;
    // While the gate holds the first 100, every other call is answered (and
    // must be 429): open the gate only after all 200 answers, or a late call
    // could take a slot a finished one freed.
    for _ in 0..200 {
        let status = calls.join_next().await.unwrap().unwrap();
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    }
    assert_eq!(server.gate.waiting(), 100);
    server.gate.open();
    while let Some(status) = calls.join_next().await {
        assert_eq!(status.unwrap(), StatusCode::OK);
    }
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);

    // An initialize flood to capacity (from 16 clients at once, far faster
    // than the 3 s idle timeout), then the reaper frees it.
    assert!(eventually(|| server.live() == 0).await);
    let mut flood = JoinSet::new();
    for _ in 0..16 {
        let client = Arc::clone(&client);
        flood.spawn(async move {
            let mut refused = 0;
            for _ in 0..(CAPACITY + 800) / 16 {
                let answer = client.post(None, &initialize_body("flood")).await;
                match answer.status {
                    StatusCode::OK => {}
                    StatusCode::SERVICE_UNAVAILABLE => refused += 1,
                    other => panic!("initialize answered {other}"),
                }
            }
            refused
        });
    }
    let mut refused = 0;
    while let Some(n) = flood.join_next().await {
        refused += n.unwrap();
    }
    eprintln!(
        "initialize flood: {refused} of {} refused with 503 at capacity {CAPACITY}",
        CAPACITY + 800
    );
    assert!(refused > 0 && server.live() <= CAPACITY as u64);
    assert!(eventually(|| server.live() == 0).await);

    // 32 concurrent 4 MiB bodies.
    let before = rss_bytes();
    let id = client.initialize().await;
    let mut posts = JoinSet::new();
    for i in 0..32 {
        let (client, id) = (Arc::clone(&client), id.clone());
        posts.spawn(async move {
            let body = if i % 2 == 0 {
                format!("[{}0]", "0,".repeat((4 * 1024 * 1024 - 3) / 2))
            } else {
                padded("ping", 4 * 1024 * 1024)
            };
            client.post_text(Some(&id), body).await.status
        });
    }
    while let Some(status) = posts.join_next().await {
        let status = status.unwrap();
        assert!(
            status == StatusCode::OK || status == StatusCode::BAD_REQUEST,
            "{status}"
        );
    }
    if let (Some(before), Some(peak)) = (before, peak_rss_bytes()) {
        eprintln!(
            "32 concurrent 4 MiB bodies: peak RSS {:.0} MiB (was {:.0} MiB before; client and server)",
            peak as f64 / 1048576.0,
            before as f64 / 1048576.0
        );
    }
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    drop(client);
    assert_clean(&server).await;
}

/// Peak resident memory of this process (`VmHWM`, Linux).
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A session's handlers outlived it. Two sessions fill
/// every handler slot with calls that never finish, their clients hang up,
/// and both sessions are deleted: the handlers end with their sessions (the
/// close callback cancels them), so the slots are free for everyone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_handlers_end_with_their_session() {
    const CAP: usize = 20;
    let server =
        Server::start_short(|b| b.max_handlers(CAP).max_requests_per_session(CAP / 2)).await;
    let client = Arc::new(server.client());
    let sessions = [client.initialize().await, client.initialize().await];
    let mut calls = JoinSet::new();
    for i in 0..CAP {
        let (client, id) = (Arc::clone(&client), sessions[i % 2].clone());
        calls.spawn(async move { client.call(&id, "hang", json!({})).await });
    }
    assert!(
        eventually(|| server
            .probes
            .started
            .load(std::sync::atomic::Ordering::SeqCst)
            == CAP)
        .await
    );
    assert_eq!(server.http().handlers_in_flight, CAP as u64);
    // The clients hang up: at 2025-11-25 that alone cancels nothing.
    calls.abort_all();
    while calls.join_next().await.is_some() {}
    tokio::time::sleep(SHORT / 4).await;
    assert_eq!(
        server
            .probes
            .dropped
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    for id in &sessions {
        assert_eq!(client.delete(id).await.status, StatusCode::OK);
    }
    // The handlers end with their sessions, with no help from them.
    assert!(
        eventually(|| server.http().handlers_in_flight == 0).await,
        "{:?}",
        server.http()
    );
    assert_eq!(
        server
            .probes
            .dropped
            .load(std::sync::atomic::Ordering::SeqCst),
        CAP
    );
    // Everyone else is served, long calls included.
    let id = client.initialize().await;
    let sleep = client.call(&id, "sleep", json!({ "ms": 1 })).await;
    assert_eq!(sleep.status, StatusCode::OK);
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    drop(client);
    assert_clean(&server).await;
}

/// Every other way a session ends cancels its work too: a failing handler
/// (`Failed`) ends its session's other calls, and shutdown, once its
/// deadline for the requests in flight has passed, ends the sessions and
/// with them the calls still running (they outlived the server before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_and_shutdown_end_the_running_handlers() {
    let mut server =
        Server::start_on("127.0.0.1:0", short_bounds, short_connections(), SHORT).await;
    let client = Arc::new(server.client());
    let failing = client.initialize().await;
    let hanging = {
        let (client, id) = (Arc::clone(&client), failing.clone());
        tokio::spawn(async move { client.call(&id, "hang", json!({})).await })
    };
    let probes = Arc::clone(&server.probes);
    let started = || probes.started.load(std::sync::atomic::Ordering::SeqCst);
    let dropped = || probes.dropped.load(std::sync::atomic::Ordering::SeqCst);
    assert!(eventually(|| started() == 1).await);
    let fail = client.call(&failing, "fail", json!({})).await;
    assert_eq!(fail.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        eventually(|| dropped() == 1).await,
        "the failed session's call runs on"
    );
    // Its caller hears that the session ended under it.
    let answer = hanging.await.unwrap();
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{answer:?}");
    // Shutdown waits for these up to its deadline, then ends their
    // sessions, and the calls with them.
    let mut calls = JoinSet::new();
    for _ in 0..3 {
        let id = client.initialize().await;
        let client = Arc::clone(&client);
        calls.spawn(async move { client.call(&id, "hang", json!({})).await });
    }
    assert!(eventually(|| started() == 4).await);
    let report = server.shutdown().await;
    assert!(!report.drained, "{report:?}");
    // (The failed session had ended already.)
    assert_eq!(report.sessions_ended, 3);
    assert_eq!(dropped(), 4);
    assert_eq!(server.http().handlers_in_flight, 0);
    while let Some(answer) = calls.join_next().await {
        assert_eq!(answer.unwrap().status, StatusCode::SERVICE_UNAVAILABLE);
    }
}

/// At 2025-11-25 a client cancels a request with `notifications/cancelled`
/// (a disconnect is not cancellation): its handler ends, and the rest of
/// the session is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_cancelled_ends_the_named_request() {
    let server = Server::start_short(|b| b).await;
    let client = Arc::new(server.client());
    let id = client.initialize().await;
    let hanging = {
        let (client, id) = (Arc::clone(&client), id.clone());
        tokio::spawn(async move {
            client
                .post(
                    Some(&id),
                    &json!({ "jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
                             "params": { "name": "hang", "arguments": {} } }),
                )
                .await
        })
    };
    let started = || {
        server
            .probes
            .started
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    let dropped = || {
        server
            .probes
            .dropped
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    assert!(eventually(|| started() == 1).await);
    // Another request id, or another session's cancel, ends nothing.
    let other = client.initialize().await;
    for (session, request) in [(&id, "call-2"), (&other, "call-1")] {
        let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": { "requestId": request, "reason": "test" } });
        assert_eq!(
            client.post(Some(session), &cancel).await.status,
            StatusCode::ACCEPTED
        );
    }
    // A moment for a wrong cancel to have taken effect (shorter than the
    // connection idle timeout, so the client's pooled connection is not
    // closed under its next request).
    tokio::time::sleep(SHORT / 4).await;
    assert_eq!(dropped(), 0);
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": { "requestId": "call-1", "reason": "test" } });
    assert_eq!(
        client.post(Some(&id), &cancel).await.status,
        StatusCode::ACCEPTED
    );
    assert!(eventually(|| dropped() == 1).await);
    // No response is sent for a cancelled request: its stream just ends.
    let answer = hanging.await.unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.headers["content-type"], "text/event-stream");
    assert!(http_support::sse_events(std::str::from_utf8(&answer.body).unwrap()).is_empty());
    assert_eq!(server.live(), 2);
    let echo = client.call(&id, "echo", json!({})).await;
    assert_eq!(echo.status, StatusCode::OK);
    for session in [&id, &other] {
        assert_eq!(client.delete(session).await.status, StatusCode::OK);
    }
    drop(client);
    assert_clean(&server).await;
}

//! The connection bounds `serve` applies, over real sockets: the cap on
//! open connections, the idle timeout of a connection with nothing in
//! flight (HTTP/2, where hyper has no timer of its own), HTTP/2 keep-alive
//! pings that go unanswered, and the HTTP/2 stream limit the server
//! advertises. (Header and body timeouts, stalled writes and accept errors
//! are in `http_hostile.rs` and `http_emfile.rs`.) And `TCP_NODELAY` on
//! every accepted socket.
#![cfg(feature = "http")]

mod http_support;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use http_support::{eventually, initialize_body, Client, Server, ACCEPT_BOTH};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use sessionreg::http::Connections;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const GIVE_UP: Duration = Duration::from_secs(30);
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;

/// One HTTP/2 frame: its type, flags and payload.
async fn read_frame(stream: &mut TcpStream) -> Option<(u8, u8, Vec<u8>)> {
    let mut header = [0u8; 9];
    stream.read_exact(&mut header).await.ok()?;
    let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
    let mut payload = vec![0; len];
    stream.read_exact(&mut payload).await.ok()?;
    Some((header[3], header[4], payload))
}

fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags, 0, 0, 0, 0];
    out.extend_from_slice(payload);
    out
}

/// Opens an HTTP/2 connection by hand: preface, empty SETTINGS, and the
/// ACK of the server's; returns the server's SETTINGS entries.
async fn h2_handshake(server: &Server) -> (TcpStream, Vec<(u16, u32)>) {
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream.write_all(PREFACE).await.unwrap();
    stream.write_all(&frame(SETTINGS, 0, &[])).await.unwrap();
    let (kind, flags, payload) = read_frame(&mut stream).await.unwrap();
    assert_eq!((kind, flags), (SETTINGS, 0), "the server's SETTINGS first");
    stream.write_all(&frame(SETTINGS, 1, &[])).await.unwrap();
    let settings = payload
        .chunks(6)
        .map(|c| {
            (
                u16::from_be_bytes([c[0], c[1]]),
                u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
            )
        })
        .collect();
    (stream, settings)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_advertises_its_http2_stream_limit() {
    let server = Server::start_connections(
        |b| b,
        Connections::default().http2_max_concurrent_streams(7),
    )
    .await;
    let (_stream, settings) = h2_handshake(&server).await;
    // SETTINGS_MAX_CONCURRENT_STREAMS is 0x3.
    assert!(settings.contains(&(0x3, 7)), "{settings:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_http2_pings_close_the_connection() {
    // Only the keep-alive can close this connection: no header or idle
    // timeout.
    let server = Server::start_connections(
        |b| b,
        Connections::default()
            .header_read_timeout(None)
            .idle_timeout(None)
            .http2_keep_alive(Some(Duration::from_millis(300))),
    )
    .await;
    let (mut stream, _) = h2_handshake(&server).await;
    let mut pinged = false;
    let closed = tokio::time::timeout(GIVE_UP, async {
        while let Some((kind, flags, _)) = read_frame(&mut stream).await {
            // Never answered.
            pinged |= kind == PING && flags & 1 == 0;
            if kind == GOAWAY {
                break;
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the connection was kept");
    assert!(pinged, "closed without a ping");
    assert!(eventually(|| server.http().connections_open == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http2_connection_is_closed_and_a_streaming_one_kept() {
    let idle = Duration::from_millis(300);
    let server =
        Server::start_connections(|b| b, Connections::default().idle_timeout(Some(idle))).await;
    let io = TokioIo::new(TcpStream::connect(server.addr).await.unwrap());
    let (mut sender, connection) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    let post = |body: String, session: Option<&str>| {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(&server.url)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH);
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        request.body(Full::new(Bytes::from(body))).unwrap()
    };
    let answer = sender
        .send_request(post(initialize_body("h2").to_string(), None))
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let id = answer.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    answer.into_body().collect().await.unwrap();
    // A stream is in flight: the connection is not idle, however long.
    let stream = sender
        .send_request(
            Request::builder()
                .method(Method::GET)
                .uri(&server.url)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &id)
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    tokio::time::sleep(idle * 4).await;
    assert!(
        !connection.is_finished(),
        "a connection with a stream was closed"
    );
    assert_eq!(server.http().connections_open, 1);
    // With the stream gone it is idle, and is closed.
    drop(stream);
    let closed = tokio::time::timeout(GIVE_UP, connection).await;
    assert!(closed.is_ok(), "the idle connection was kept");
    assert!(eventually(|| server.http().connections_open == 0).await);
    // The session itself is not the connection's: it serves on.
    let client = Client::new(&server.url);
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_the_server_stops_accepting_until_one_closes() {
    const CAP: usize = 4;
    // Silent connections are never timed out here: only closing one makes
    // room.
    let server = Server::start_connections(
        |b| b,
        Connections::default()
            .max_connections(CAP)
            .header_read_timeout(None)
            .idle_timeout(None),
    )
    .await;
    let mut silent = Vec::new();
    for _ in 0..CAP {
        silent.push(TcpStream::connect(server.addr).await.unwrap());
    }
    assert!(eventually(|| server.http().connections_open == CAP as u64).await);
    // A client beyond the cap waits in the backlog, unanswered.
    let url = server.url.clone();
    let waiting = tokio::spawn(async move {
        let client = Client::new(&url);
        let id = client.initialize().await;
        assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "served past the cap");
    assert_eq!(server.http().connections_open, CAP as u64);
    // One closes: the waiting client gets its place and is served.
    drop(silent.pop());
    tokio::time::timeout(GIVE_UP, waiting)
        .await
        .expect("served once a place was free")
        .unwrap();
    assert!(server.http().connections_open <= CAP as u64);
    drop(silent);
    assert!(eventually(|| server.http().connections_open == 0).await);
}

/// hyper keeps the box it polls a connection's request future in for as
/// long as the connection is open, sized for the service's whole future. A
/// service that awaits `SessionManager::handle` inline (as
/// `examples/mcp_server` and axum handlers do) must not make that box
/// several KiB (4,208 bytes before `handle` boxed its routing) for every
/// connection a server holds.
#[test]
fn awaiting_handle_inline_costs_a_connection_little() {
    let (manager, _, _) = http_support::test_manager(|builder| builder);
    let request = Request::builder()
        .method(Method::GET)
        .uri("/mcp")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let future = manager.handle(request);
    // The manager and the routing's box: a few words, whatever the request.
    let size = std::mem::size_of_val(&future);
    assert!(
        size <= 64,
        "the future of SessionManager::handle is {size} bytes"
    );
}

/// `Duration::MAX` for the idle, stall or keep-alive
/// period panicked on `Instant + Duration`. Every deadline is a checked add;
/// and a bound past [`Defaults::DURATION_LIMIT`](sessionreg::http::Defaults) is refused by `build()`
/// with an error naming it (no bound is `None`, one rule), while the
/// longest allowed serves and shuts down as any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_longest_bounds_serve_and_longer_ones_are_refused() {
    let longest = sessionreg::http::Defaults::DURATION_LIMIT;
    let mut server = Server::start_connections(
        |b| {
            b.stall_timeout(Some(longest))
                .sse_keep_alive(Some(longest))
                .body_read_timeout(Some(longest))
                .handler_timeout(Some(longest))
                .idle_timeout(Some(longest))
        },
        Connections::default()
            .idle_timeout(Some(longest))
            .header_read_timeout(Some(longest))
            .http2_keep_alive(Some(longest)),
    )
    .await;
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    let mut stream = client.open_stream(&id, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    let note = client.call(&id, "notify", json!({ "n": 3 })).await;
    assert_eq!(note.json()["result"]["delivered"], 3);
    let (text, _) = http_support::read_sse(stream.body_mut(), Duration::from_secs(20), |t| {
        http_support::sse_events(t).len() == 3
    })
    .await;
    assert_eq!(http_support::sse_events(&text).len(), 3);
    let streamed = client.call(&id, "stream", json!({})).await;
    assert_eq!(streamed.status, StatusCode::OK);
    drop(stream);
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    assert!(server.shutdown().await.drained);

    type Set = fn(http_support::Builder) -> http_support::Builder;
    let too_long: [(&str, Set); 5] = [
        ("stall_timeout", |b| b.stall_timeout(Some(Duration::MAX))),
        ("sse_keep_alive", |b| b.sse_keep_alive(Some(Duration::MAX))),
        ("body_read_timeout", |b| {
            b.body_read_timeout(Some(Duration::MAX))
        }),
        ("handler_timeout", |b| {
            b.handler_timeout(Some(Duration::MAX))
        }),
        ("idle_timeout", |b| b.idle_timeout(Some(Duration::MAX))),
    ];
    for (setting, set) in too_long {
        let app = http_support::TestApp {
            closes: Default::default(),
            probes: Default::default(),
            gate: Default::default(),
        };
        let error = set(sessionreg::http::SessionManager::builder(app))
            .build()
            .err()
            .unwrap_or_else(|| panic!("{setting} = Duration::MAX was taken"));
        assert_eq!(error.setting(), Some(setting), "{error}");
        assert!(error.to_string().contains("at most 31536000s"), "{error}");
    }
    // The connection bounds are `serve_with`'s, checked the same way.
    type Bound = fn(Connections) -> Connections;
    let too_long: [(&str, Bound); 3] = [
        ("idle_timeout", |c| c.idle_timeout(Some(Duration::MAX))),
        ("header_read_timeout", |c| {
            c.header_read_timeout(Some(Duration::MAX))
        }),
        ("http2_keep_alive", |c| {
            c.http2_keep_alive(Some(Duration::MAX))
        }),
    ];
    for (setting, set) in too_long {
        let error = set(Connections::default())
            .validate()
            .err()
            .unwrap_or_else(|| panic!("{setting} = Duration::MAX was taken"));
        assert_eq!(error.setting(), Some(setting), "{error}");
    }
}

/// `serve` sets `TCP_NODELAY` on every connection it accepts, read back from
/// the kernel (getsockopt on the accepted socket), not inferred from a
/// timing: without it an SSE answer's last chunk waits for the client's
/// delayed ACK.
#[tokio::test]
async fn serve_sets_nodelay_on_every_connection_it_accepts() {
    let mut server = Server::start().await;
    for _ in 0..2 {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        // One whole request and its answer: the connection is being served.
        let request = format!("GET /mcp HTTP/1.1\r\nhost: {}\r\n\r\n", server.addr);
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut status = [0u8; 9];
        stream.read_exact(&mut status).await.unwrap();
        assert_eq!(&status, b"HTTP/1.1 ");
        let client = stream.into_std().unwrap();
        assert!(
            mcp_test_client::accepted_nodelay(&client).unwrap(),
            "the accepted socket has TCP_NODELAY"
        );
        assert!(!client.nodelay().unwrap(), "the control: the client's end");
    }
    server.shutdown().await;
}

//! hyper alone, answering MCP's requests with canned bytes: the floor under
//! a loopback request's server CPU (the kernel's socket work, hyper and
//! tokio), a peer row in `benches/e2e`'s tables.
//!
//! No MCP and no sessions: the body is read whole and looked at only to
//! pick the answer. A `tools/call` gets a complete echo result carrying the
//! request's id and the text `hi` (what `benches/e2e --modern` sends and
//! checks), `application/json`; an `initialize` gets a result with an
//! `MCP-Session-Id` (a counter); a notification gets 202; `DELETE` 200;
//! anything else 404. Connections are served the way
//! `sessionreg::http::serve` serves an HTTP/1.1 one (its first bytes are
//! not HTTP/2's preface): hyper's own HTTP/1 connection, not hyper-util's
//! auto one, with hyper's timer and a 10 s header read timeout,
//! `TCP_NODELAY`, one task per connection, on a tokio multi-thread
//! runtime. The benches' clients speak HTTP/1.1 only, so the floor skips
//! even the protocol's detection. Whatever a request costs here, every
//! MCP server on this stack pays before its own work.
//!
//! ```sh
//! cargo build --release -p e2e-rmcp --bin hyper_floor
//! cargo bench --bench e2e -- --modern --against target/release/hyper_floor
//! ```
//!
//! The flags of examples/mcp_server are accepted; only `--addr` is read.
//! First stdout line: `listening on http://ADDR/mcp`.

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Session ids handed out by `initialize`.
static SESSIONS: AtomicU64 = AtomicU64::new(1);

/// Whether `needle` occurs in `body`.
fn contains(body: &[u8], needle: &[u8]) -> bool {
    body.windows(needle.len()).any(|w| w == needle)
}

/// The JSON text of the request's `"id"` member (a number or a string),
/// found without parsing the rest.
fn request_id(body: &[u8]) -> &[u8] {
    const KEY: &[u8] = b"\"id\":";
    let Some(at) = body.windows(KEY.len()).position(|w| w == KEY) else {
        return b"null";
    };
    let rest = &body[at + KEY.len()..];
    let end = rest
        .iter()
        .position(|&b| b == b',' || b == b'}')
        .unwrap_or(rest.len());
    &rest[..end]
}

fn json(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = request.method().clone();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let response = match method {
        Method::DELETE => Response::new(Full::new(Bytes::new())),
        Method::POST if contains(&body, b"\"method\":\"tools/call\"") => {
            let mut out = Vec::with_capacity(160);
            out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            out.extend_from_slice(request_id(&body));
            out.extend_from_slice(
                br#","result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}}"#,
            );
            json(StatusCode::OK, out)
        }
        Method::POST if contains(&body, b"\"method\":\"initialize\"") => {
            let mut out = Vec::with_capacity(160);
            out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            out.extend_from_slice(request_id(&body));
            out.extend_from_slice(
                br#","result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"hyper_floor","version":"0"}}}"#,
            );
            let mut response = json(StatusCode::OK, out);
            let id = SESSIONS.fetch_add(1, Ordering::Relaxed);
            response.headers_mut().insert(
                "mcp-session-id",
                HeaderValue::from_str(&format!("{id:032x}")).expect("hex is a valid header"),
            );
            response
        }
        Method::POST if contains(&body, b"\"method\":\"notifications/") => {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::ACCEPTED;
            response
        }
        _ => {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::NOT_FOUND;
            response
        }
    };
    Ok(response)
}

fn main() {
    let mut addr = "127.0.0.1:8080".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next();
        if flag == "--addr" {
            addr = value.expect("--addr needs a value");
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
        let local = listener.local_addr().expect("local addr");
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{local}/mcp").expect("stdout");
        out.flush().expect("stdout");
        drop(out);

        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(10));
        let builder = Arc::new(builder);
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            let builder = builder.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(answer);
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

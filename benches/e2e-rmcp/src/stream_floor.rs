//! hyper alone, holding SSE streams: the floor under "memory per session
//! with an open GET stream" (`benches/stream_floor.py`).
//!
//! No MCP and no sessions: every `GET` is answered `200 text/event-stream`
//! with one priming event (as `examples/mcp_server` sends to 2025-11-25
//! clients), and then the body stays open, sending nothing, until the client
//! goes. Connections are served by hyper-util's auto builder (both
//! protocols: the listen bench holds streams over HTTP/1.1 and h2c) with
//! hyper's timer and a 10 s header read timeout, one task per connection,
//! on a tokio multi-thread runtime. `sessionreg::http::serve` detects the
//! protocol itself and keeps only the one connection's state, about
//! 0.9 KiB less per HTTP/1.1 connection than the auto builder holds: this
//! floor is that much above the lowest hyper could go. What a
//! held stream costs here is what hyper, tokio and the socket cost, before
//! any session layer adds its own.
//!
//! ```sh
//! cargo run --release -p e2e-rmcp --bin stream_floor -- --addr 127.0.0.1:0
//! ```
//!
//! First stdout line: `listening on http://ADDR/mcp`.

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::{Body, Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use std::convert::Infallible;
use std::io::Write;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// A body that yields one priming event and then stays open, empty.
struct Held {
    primed: bool,
}

impl Body for Held {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.primed {
            // Never woken: the connection task ends when the client closes.
            return Poll::Pending;
        }
        self.primed = true;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(
            b"id: 0\nretry: 1000\ndata: \n\n",
        )))))
    }
}

async fn answer(request: Request<Incoming>) -> Result<Response<Held>, Infallible> {
    let mut response = Response::new(Held { primed: false });
    if request.method() == http::Method::GET {
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/event-stream"),
        );
        response.headers_mut().insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-cache"),
        );
    } else {
        *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        response.body_mut().primed = true;
    }
    Ok(response)
}

fn main() {
    let mut addr = "127.0.0.1:8080".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--addr" => addr = args.next().expect("--addr needs a value"),
            other => panic!("unknown flag {other} (only --addr)"),
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

        let mut builder = Builder::new(TokioExecutor::new());
        builder
            .http1()
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

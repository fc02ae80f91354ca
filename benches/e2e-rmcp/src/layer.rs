//! `rmcp_server` (see `main.rs`): the same handler, `Empty`, served by
//! sessionreg's HTTP layer through sessionreg-rmcp's
//! `http::StreamableHttpService` instead of rmcp's own: the one line a user
//! of rmcp changes. `--max-sessions` and `--idle-timeout-ms` set the
//! layer's capacity and idle timeout; `GET /metrics` is the manager's text
//! plus `tokio_tasks_alive`, as the other servers answer it.

mod serve;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use sessionreg_rmcp::http::StreamableHttpService;
use std::io::Write;
use std::time::Duration;
use tower_service::Service;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let flags = serve::flags();
    // As the other servers set up their logs (the bench passes RUST_LOG).
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut builder = StreamableHttpService::builder(|| Ok(serve::Empty))?;
    if let Some(max) = flags.max_sessions {
        builder = builder.capacity(max);
    }
    if let Some(ms) = flags.idle_timeout_ms {
        builder = builder.idle_timeout(Some(Duration::from_millis(ms)));
    }
    let service = StreamableHttpService::from(builder.build().map_err(std::io::Error::other)?);
    let listener = tokio::net::TcpListener::bind(&flags.addr).await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on http://{}/mcp", listener.local_addr()?)?;
    stdout.flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let route = hyper::service::service_fn(move |request: Request<Incoming>| {
            let mut service = service.clone();
            async move {
                if request.uri().path() == "/metrics" {
                    let tasks = tokio::runtime::Handle::current()
                        .metrics()
                        .num_alive_tasks();
                    let text =
                        format!("{}tokio_tasks_alive {tasks}\n", service.manager().metrics());
                    return Ok(Response::new(Full::new(Bytes::from(text)).boxed()));
                }
                service.call(request).await
            }
        });
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), route)
                .await;
        });
    }
}

//! `rmcp_server` (see `main.rs`): the same handler, `Empty`, served by
//! sessionreg's HTTP layer through sessionreg-rmcp's
//! `http::StreamableHttpService` instead of rmcp's own: the one line a user
//! of rmcp changes. `--max-sessions` and `--idle-timeout-ms` set the
//! layer's capacity and idle timeout; `GET /metrics` is the manager's text
//! plus `tokio_tasks_alive`, as the other servers answer it.

mod serve;

use sessionreg_rmcp::http::StreamableHttpService;
use std::time::Duration;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let flags = serve::flags();
    serve::logs();
    let mut builder = StreamableHttpService::builder(|| Ok(serve::Empty))?;
    if let Some(max) = flags.max_sessions {
        builder = builder.capacity(max);
    }
    if let Some(ms) = flags.idle_timeout_ms {
        builder = builder.idle_timeout(Some(Duration::from_millis(ms)));
    }
    let service = StreamableHttpService::from(builder.build().map_err(std::io::Error::other)?);
    let manager = service.manager().clone();
    serve::accept_forever(&flags.addr, service, move || manager.metrics()).await
}

//! `rmcp_server` (see `main.rs`) with sessionreg-rmcp's
//! `RegistrySessionManager` instead of rmcp's `LocalSessionManager`, and its
//! metrics on `GET /metrics`. `--max-sessions` and `--idle-timeout-ms` set
//! the registry's capacity and idle timeout.

mod serve;

use sessionreg_rmcp::RegistrySessionManager;
use std::sync::Arc;
use std::time::Duration;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let flags = serve::flags();
    let mut builder = RegistrySessionManager::builder();
    if let Some(max) = flags.max_sessions {
        builder = builder.capacity(max);
    }
    if let Some(ms) = flags.idle_timeout_ms {
        builder = builder.idle_timeout(Duration::from_millis(ms));
    }
    let manager = Arc::new(builder.build().map_err(std::io::Error::other)?);
    let metrics = {
        let manager = manager.clone();
        move || manager.metrics()
    };
    serve::serve(&flags, manager, metrics).await
}

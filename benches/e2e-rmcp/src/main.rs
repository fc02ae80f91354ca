//! An rmcp (3.11) streamable-HTTP server for `benches/e2e/`: the same flags
//! and first line as `examples/mcp_server`, so the same raw client measures
//! both. Sessions are rmcp's own (`LocalSessionManager`, stateful mode);
//! `rmcp_server_registry` is the same server with sessionreg-rmcp's manager.
//!
//! ```text
//! cargo build --release -p e2e-rmcp
//! cargo bench --bench e2e -- --server target/release/rmcp_server_registry --against target/release/rmcp_server
//! ```
//!
//! `--max-sessions` and `--idle-timeout-ms` are accepted and ignored: rmcp's
//! session manager has neither knob in this form; so are the bound flags of
//! examples/mcp_server (`--header-read-timeout-ms` and the rest). Tools:
//! `echo`, `sleep` and `running` (how many `sleep` calls run now), as
//! examples/mcp_server has. rmcp 3.11 serves 2026-07-28 requests without a
//! session whatever the manager (its stateless path; `benches/e2e
//! --modern` measures it); `--json-response` sets rmcp's `json_response`
//! for them.

mod serve;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::sync::Arc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let flags = serve::flags();
    let manager = Arc::new(LocalSessionManager::default());
    serve::serve(&flags, manager, String::new).await
}

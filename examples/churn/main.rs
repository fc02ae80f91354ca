//! The churn demo: sessions come and go through every way a session can end,
//! and at the end the registry is empty and every close ran exactly once.
//!
//! By default it runs over real loopback sockets: the session manager
//! (`sessionreg::http`) in-process on 127.0.0.1:0, client tasks driving MCP
//! sessions (`http_mode.rs`). `--core` drives the registry directly, with
//! threads and no HTTP (`core_mode.rs`).
//!
//! ```text
//! cargo run --release --example churn                 # HTTP, a few seconds
//! cargo run --release --example churn -- --sessions 100000 --clients 64
//! cargo run --release --example churn -- --core --sessions 1000000 --threads 4
//! ```
//!
//! Exits non-zero if a session is left live, or closes differ from creates.

mod closes;
mod core_mode;
mod http_mode;

use clap::Parser;

/// Drive sessions through every end path and check that nothing leaks.
#[derive(Parser, Debug, Clone)]
#[command(version, about)]
pub struct Args {
    /// Drive the registry directly (threads, no HTTP) instead of over HTTP.
    #[arg(long)]
    core: bool,
    /// Worker threads creating and ending sessions.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Sessions to create in all [default: 25000 over HTTP, 5000000 with
    /// --core].
    #[arg(long)]
    sessions: Option<u64>,
    /// Concurrent client tasks (HTTP mode).
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// The registry's capacity (maximum live sessions).
    #[arg(long, default_value_t = 65_536)]
    capacity: usize,
    /// Idle timeout for abandoned sessions, in milliseconds [default: 250
    /// over HTTP, where a session's requests are round trips apart; 20 with
    /// --core].
    #[arg(long)]
    idle_timeout_ms: Option<u64>,
}

impl Args {
    /// Sessions to create, for the mode chosen.
    pub fn sessions(&self) -> u64 {
        let default = if self.core { 5_000_000 } else { 25_000 };
        self.sessions.unwrap_or(default)
    }

    /// The idle timeout in milliseconds, for the mode chosen.
    pub fn idle_timeout_ms(&self) -> u64 {
        let default = if self.core { 20 } else { 250 };
        self.idle_timeout_ms.unwrap_or(default)
    }
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if args.core {
        core_mode::run(&args)
    } else {
        http_mode::run(&args)
    }
}

/// Prints each failed check and exits non-zero if any failed.
pub fn verdict(checks: &[(&str, bool)]) -> std::process::ExitCode {
    let failed: Vec<&str> = checks
        .iter()
        .filter(|(_, bad)| *bad)
        .map(|(what, _)| *what)
        .collect();
    for what in &failed {
        eprintln!("FAILED: {what}");
    }
    if failed.is_empty() {
        println!("ok: every session created was closed exactly once");
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

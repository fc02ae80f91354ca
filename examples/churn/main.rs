//! The churn demo: sessions come and go through every way a session can end,
//! and at the end the registry is empty and every close ran exactly once.
//!
//! ```text
//! cargo run --release --example churn                 # defaults: a few seconds
//! cargo run --release --example churn -- --sessions 1000000 --threads 4
//! ```
//!
//! Exits non-zero if a session is left live, or closes differ from creates.

mod core_mode;

use clap::Parser;

/// Drive sessions through every end path and check that nothing leaks.
#[derive(Parser, Debug, Clone)]
#[command(version, about)]
pub struct Args {
    /// Worker threads creating and ending sessions.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Sessions to create in all.
    #[arg(long, default_value_t = 5_000_000)]
    sessions: u64,
    /// The registry's capacity (maximum live sessions).
    #[arg(long, default_value_t = 65_536)]
    capacity: usize,
    /// Idle timeout for abandoned sessions, in milliseconds.
    #[arg(long, default_value_t = 20)]
    idle_timeout_ms: u64,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    core_mode::run(&args)
}

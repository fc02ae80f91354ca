//! End to end: MCP session churn over real loopback sockets, with one raw
//! HTTP/1.1 client for every server.
//!
//! Each session is three requests on a keep-alive connection: `initialize`
//! (POST, no session id; the answer's `MCP-Session-Id` header names the
//! session), `notifications/initialized` (POST with the id, 202) and
//! `DELETE` (any 2xx). The client is hand-written blocking HTTP/1.1 over
//! `std::net::TcpStream` (Content-Length and chunked bodies, JSON or SSE), so
//! it costs the same against every server and shares no code with them.
//!
//! It measures, on the server process only:
//! * sessions per second over `--sessions` churned sessions from `--clients`
//!   connections in parallel (threads started on a barrier);
//! * server CPU per session: user + system time from `/proc/<pid>/stat`
//!   across the churn, ÷ sessions;
//! * RSS (`VmRSS` in `/proc/<pid>/status`) before and after the churn, and per
//!   idle session: RSS with `--idle` sessions initialized and left open, minus
//!   RSS before they were opened, ÷ their number; with the server's thread
//!   count and `sessionreg_sessions_live` from `GET /metrics` beside it, and
//!   tokio tasks per idle session where the server exports
//!   `tokio_tasks_alive` (e2e-rmcp's servers do).
//!
//! By default it spawns `target/release/examples/mcp_server` (build it first:
//! `cargo build --release --example mcp_server`); `--server PATH` runs
//! another binary that takes the same flags, and `--url URL --pid PID`
//! measures a server already running (another SDK's, say).
//!
//! `--against PATH` spawns a second server (e.g. `target/release/rmcp_server`)
//! and compares the two in one run: both stay up, and `--rounds R` (default
//! 5) rounds each churn `--sessions` on one server and then on the other
//! (alternating which goes first), so that both see the same machine, load
//! and drift. It prints every round, the medians, and the median of the
//! per-round ratios; then the idle measurement of each.
//!
//! A spawned server gets `RUST_LOG=warn` (`--log FILTER` to change it): both
//! servers compared here install the same `tracing_subscriber::fmt` logger,
//! and at WARN neither formats a line per request or per session (rmcp logs
//! several per session at INFO), so the figures measure the session layers,
//! not log formatting.
//!
//! `--modern` measures 2026-07-28 requests instead of sessions: each unit of
//! a round is one `POST` of `tools/call` (tool `echo`, `{"text":"hi"}`),
//! with no session, carrying `MCP-Protocol-Version: 2026-07-28`,
//! `Mcp-Method: tools/call`, `Mcp-Name: echo` and the request's own
//! `_meta` (protocol version, client capabilities), and `--requests N`
//! (default 50,000) of them per round; server CPU is per request. Before
//! the warm-up, each server's first answer is printed and 200 requests are
//! checked (200 with `resultType` `"complete"`, from JSON or SSE answers
//! alike); a server that fails any stops the run. Every round counts the
//! answers that fail the same check. There is no idle measurement (there is
//! no session to hold).
//!
//! `--against-flag FLAG` (repeatable) passes FLAG to the `--against` server
//! only: e2e-rmcp's `--json-response`, say.
//!
//! `cargo bench --bench e2e -- [--sessions N] [--clients N] [--idle N] [--log FILTER]
//!  [--against PATH [--against-flag FLAG]... [--rounds R]] [--modern [--requests N]]`
//!
//! The parts: `options.rs` (the flags), `process.rs` (the servers, spawned
//! and stopped, and `/proc`), `client.rs` (the raw client), `measure.rs`
//! (churn and idle measurements) and `report.rs` (the tables).

mod client;
mod measure;
mod options;
mod process;
mod report;

use measure::{check_modern, churn, measure_churn, measure_idle, Churn, Work};
use process::{default_server, rss_bytes, Server};

fn main() {
    let o = options::options();
    let mut servers = vec![match (&o.url, o.pid) {
        (Some(url), Some(pid)) => Server::at(url, pid, None, url.clone()),
        (None, None) => Server::spawn(&o.server.clone().unwrap_or_else(default_server), &o, &[]),
        _ => panic!("--url and --pid go together"),
    }];
    if let Some(path) = &o.against {
        let mut against = Server::spawn(path, &o, &o.against_flags);
        // Two builds of one server (an A/B of commits): the same file name,
        // so the tables name the other one by its path.
        if against.name == servers[0].name {
            against.name = path.display().to_string();
        }
        servers.push(against);
    }
    println!("RUST_LOG={} for spawned servers", o.log);
    let rss_start: Vec<u64> = servers.iter().map(|s| rss_bytes(s.pid)).collect();
    let (work, units) = if o.modern {
        (Work::Modern, o.requests)
    } else {
        (Work::Sessions, o.sessions)
    };

    if work == Work::Modern {
        // Each server's answer is what the rounds will count as success.
        for server in &servers {
            let (answer, checked) = check_modern(server, 200);
            println!("{}'s answer: {answer}", server.name);
            println!(
                "checked {}: 200 requests, {} failed{}",
                server.name,
                checked.failures,
                checked
                    .first_failure
                    .as_deref()
                    .map_or(String::new(), |f| format!(" (the first: {f})"))
            );
            assert_eq!(checked.failures, 0, "{} fails the check", server.name);
        }
    }

    // Warm up: connections, thread pools, allocator arenas.
    for server in &servers {
        churn(server.addr, &server.path, o.clients, 1_000.min(units), work);
    }
    let rss_before: Vec<u64> = servers.iter().map(|s| rss_bytes(s.pid)).collect();

    // One churn per server per round; with two, the order alternates.
    let rounds = if servers.len() > 1 {
        o.rounds.max(1)
    } else {
        1
    };
    let mut runs: Vec<Vec<Churn>> = vec![Vec::new(); servers.len()];
    report::churn_header(work, units, o.clients, rounds);
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..servers.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let c = measure_churn(&servers[i], &o);
            report::churn_round(round, &servers[i].name, &c, work);
            runs[i].push(c);
        }
    }
    report::medians(&servers, &runs, work);
    for (i, server) in servers.iter().enumerate() {
        report::rss(
            &server.name,
            rss_start[i],
            rss_before[i],
            rss_bytes(server.pid),
        );
    }

    // Idle sessions: only where there are sessions.
    if work == Work::Sessions {
        for server in &servers {
            let idle = measure_idle(server, o.idle);
            report::idle(&server.name, &idle);
        }
    }
    for server in &mut servers {
        server.stop();
    }
}

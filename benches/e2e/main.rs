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
//! * request latency, p50/p99/p99.9 (see below);
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
//! `--against SPEC` (repeatable) spawns more servers and compares them in
//! one run: all stay up, and `--rounds R` (default 5) rounds each give every
//! server a turn (the order rotates from round to round; with two servers
//! it alternates), so that all see the same machine, load and drift. A
//! SPEC is `[NAME=]PROGRAM [ARG]...`, e.g. `target/release/rmcp_server` or
//! `python_sdk=benches/peers/.venv/bin/python benches/peers/python_mcp_server.py`
//! (`--server SPEC` replaces the first server the same way). Every spawned
//! server gets `--addr 127.0.0.1:0 --max-sessions N --idle-timeout-ms
//! 3600000` and must print `listening on URL` first. A turn is
//! `--sessions N` sessions (`--requests N` with `--modern`), or, with
//! `--seconds S`, as many as the connections complete in S seconds (for
//! servers thousands of requests per second apart). It prints every round,
//! the medians (rate, server CPU per unit, user/system, request latency
//! p50/p99/p99.9, RSS) and the first server ÷ each other one (the median
//! of the per-round ratios); then the idle measurement of each.
//!
//! **Every answer is checked**, in the warm-up and in every round: a
//! session's `initialize` must be 200 with an `MCP-Session-Id` and a result
//! for its id, `notifications/initialized` 202 (or 200), `DELETE` a 2xx; a
//! 2026-07-28 `tools/call` must be 200 with `resultType` `"complete"`, the
//! request's own id and the echoed text. One wrong or missing answer stops
//! the run with `FAILED: ...` and a non-zero exit.
//!
//! Latency is each HTTP request's, from before its first byte is written
//! to after its answer's last byte is read, at the fixed concurrency of
//! `--clients` connections in a closed loop (each sends its next request
//! when its last is answered).
//!
//! `--strace N`: after the rounds, `strace -c -f` is attached to each
//! server over N more units, and its system calls per unit are printed
//! (the kernel's share of a loopback request; e2e-rmcp's `hyper_floor`
//! measures the same I/O with no MCP at all). `--json PATH` writes the
//! medians and ratios as JSON too (for `benches/headline.py`).
//!
//! A spawned server gets `RUST_LOG=warn` (`--log FILTER` to change it): both
//! servers compared here install the same `tracing_subscriber::fmt` logger,
//! and at WARN neither formats a line per request or per session (rmcp logs
//! several per session at INFO), so the figures measure the session layers,
//! not log formatting.
//!
//! `--modern` measures 2026-07-28 requests instead of sessions: each unit of
//! a round is one `POST` of `tools/call` (tool `echo`, `{"text":"hi"}`),
//! with no session, its headers (`MCP-Protocol-Version: 2026-07-28`,
//! `Mcp-Method: tools/call`, `Mcp-Name: echo`, ...) and its own `_meta`
//! (protocol version, client info, client capabilities) as the official
//! Python SDK 2.3 client sends them. Before the warm-up,
//! each server's first answer is printed and 200 requests are checked.
//! There is no idle measurement (there is no session to hold).
//!
//! `--against-flag FLAG` (repeatable) passes FLAG to every `--against`
//! server: e2e-rmcp's `--json-response`, say.
//!
//! `cargo bench --bench e2e -- [--sessions N] [--clients N] [--idle N] [--log FILTER]
//!  [--server SPEC] [--against SPEC [--against-flag FLAG]...] [--rounds R]
//!  [--modern [--requests N]] [--seconds S] [--warm-up N] [--strace N] [--json PATH]`
//!
//! The parts: `options.rs` (the flags), `process.rs` (the servers, spawned
//! and stopped, and `/proc`), `client.rs` (the raw client), `measure.rs`
//! (churn and idle measurements) and `report.rs` (the tables).

mod client;
mod measure;
mod options;
mod process;
mod report;

use measure::{check_modern, churn_tasks, measure_churn, measure_idle, Churn, Length, Work};
use options::Spec;
use process::{default_server, rss_bytes, Server};
use std::time::Duration;

fn main() {
    let o = options::options();
    let mut servers = vec![match (&o.url, o.pid) {
        (Some(url), Some(pid)) => Server::at(url, pid, None, url.clone()),
        (None, None) => Server::spawn(
            &o.server
                .clone()
                .unwrap_or_else(|| Spec::parse(&default_server().display().to_string())),
            &o,
            &[],
        ),
        _ => panic!("--url and --pid go together"),
    }];
    for spec in &o.against {
        let mut against = Server::spawn(spec, &o, &o.against_flags);
        // Two builds of one server (an A/B of commits): the same file name,
        // so the tables name the other one by its path.
        if servers.iter().any(|s| s.name == against.name) {
            against.name = format!("{} ({})", against.name, spec.program.display());
        }
        servers.push(against);
    }
    println!("RUST_LOG={} for spawned servers", o.log);
    let rss_start: Vec<u64> = servers.iter().map(|s| rss_bytes(s.pid)).collect();
    let work = measure::work(&o);
    // --tasks: each server's live tasks, created before anything is
    // measured.
    let tasks: Vec<Vec<String>> = servers
        .iter()
        .map(|server| match o.tasks {
            Some(n) => {
                let ids = measure::prefill_tasks(server, n, o.clients);
                println!("{}: {} live tasks created", server.name, ids.len());
                ids
            }
            None => Vec::new(),
        })
        .collect();

    if work == Work::Modern {
        // Each server's answer is what the rounds will count as success.
        for server in &servers {
            let (answer, checked) = check_modern(server, 200);
            println!("{}'s answer: {answer}", server.name);
            measure::require_all_answers(server, &checked, "in the check before the rounds");
            println!("checked {}: 200 requests, all answered", server.name);
        }
    }

    // Warm up: connections, thread pools, allocator arenas, JITs.
    let warm = match (o.warm_up, o.seconds) {
        (Some(n), _) => Length::Units(n),
        (None, Some(_)) => Length::For(Duration::from_secs(1)),
        (None, None) => Length::Units(1_000.min(if work == Work::Sessions {
            o.sessions
        } else {
            o.requests
        })),
    };
    for (server, tasks) in servers.iter().zip(&tasks) {
        let ran = churn_tasks(server.addr, &server.path, o.clients, warm, work, tasks);
        measure::require_all_answers(server, &ran, "in the warm-up");
    }
    let rss_before: Vec<u64> = servers.iter().map(|s| rss_bytes(s.pid)).collect();

    // One churn per server per round; the order rotates from round to
    // round (with two servers: alternates), so that no server always
    // follows the same one.
    let rounds = if servers.len() > 1 {
        o.rounds.max(1)
    } else {
        1
    };
    let mut runs: Vec<Vec<Churn>> = vec![Vec::new(); servers.len()];
    let length = match measure::length(&o) {
        Length::Units(n) => format!("{n}"),
        Length::For(d) => format!("{:.1} s", d.as_secs_f64()),
    };
    report::churn_header(work, &length, o.clients, rounds);
    for round in 0..rounds {
        let n = servers.len();
        let mut order: Vec<usize> = (0..n).map(|i| (i + round) % n).collect();
        if n == 2 && round % 2 == 1 {
            order = vec![1, 0];
        }
        for i in order {
            let c = measure_churn(&servers[i], &o, round, &tasks[i]);
            report::churn_round(round, &servers[i].name, &c);
            runs[i].push(c);
        }
    }
    let rss_after: Vec<u64> = servers.iter().map(|s| rss_bytes(s.pid)).collect();
    report::medians(&servers, &runs, &rss_after, work);
    for (i, server) in servers.iter().enumerate() {
        report::rss(&server.name, rss_start[i], rss_before[i], rss_after[i]);
    }
    if let Some(path) = &o.json {
        std::fs::write(path, report::json(&servers, &runs, &rss_after, work))
            .unwrap_or_else(|e| panic!("--json {}: {e}", path.display()));
    }

    if let Some(n) = o.strace {
        let rows: Vec<_> = servers
            .iter()
            .zip(&tasks)
            .map(|(server, tasks)| {
                let (calls, total) = measure::strace_counts(server, &o, n, tasks);
                (server.name.clone(), calls, total)
            })
            .collect();
        report::strace(&rows, n, work);
    }

    // Idle sessions: only where there are sessions.
    if work == Work::Sessions && o.idle > 0 && o.tasks.is_none() {
        for server in &servers {
            let idle = measure_idle(server, o.idle);
            report::idle(&server.name, &idle);
        }
    }
    for server in &mut servers {
        server.stop();
    }
}

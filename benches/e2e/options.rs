//! The harness's flags (see the bench's docs for what each one does).

use std::path::PathBuf;

/// What to run: the flags after `--`, with their defaults.
pub struct Options {
    pub sessions: usize,
    pub clients: usize,
    pub idle: usize,
    pub server: Option<PathBuf>,
    pub url: Option<String>,
    pub pid: Option<u32>,
    pub log: String,
    pub against: Option<PathBuf>,
    /// Extra flags for the `--against` server only (`--against-flag F`,
    /// repeatable), e.g. e2e-rmcp's `--json-response`.
    pub against_flags: Vec<String>,
    pub rounds: usize,
    /// `--modern`: each round is `--requests` 2026-07-28 `tools/call`s of
    /// `echo` (one POST each, no session) instead of `--sessions` sessions,
    /// and there is no idle measurement.
    pub modern: bool,
    pub requests: usize,
}

pub fn options() -> Options {
    let mut o = Options {
        sessions: 20_000,
        clients: 2,
        idle: 10_000,
        server: None,
        url: None,
        pid: None,
        log: "warn".into(),
        against: None,
        against_flags: Vec::new(),
        rounds: 5,
        modern: false,
        requests: 50_000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--sessions" => o.sessions = value().parse().expect("--sessions N"),
            "--clients" => o.clients = value().parse().expect("--clients N"),
            "--idle" => o.idle = value().parse().expect("--idle N"),
            "--server" => o.server = Some(value().into()),
            "--url" => o.url = Some(value()),
            "--pid" => o.pid = Some(value().parse().expect("--pid PID")),
            "--log" => o.log = value(),
            "--against" => o.against = Some(value().into()),
            "--against-flag" => o.against_flags.push(value()),
            "--rounds" => o.rounds = value().parse().expect("--rounds R"),
            "--modern" => o.modern = true,
            "--requests" => o.requests = value().parse().expect("--requests N"),
            // What cargo bench passes to every harness.
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    o
}

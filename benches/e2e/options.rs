//! The harness's flags (see the bench's docs for what each one does).

use std::path::PathBuf;

/// A server to spawn: `[NAME=]PROGRAM [ARG]...` (split on whitespace), e.g.
/// `target/release/rmcp_server` or
/// `python_sdk=benches/peers/.venv/bin/python benches/peers/python_mcp_server.py`.
#[derive(Clone)]
pub struct Spec {
    /// The name in the tables: NAME, or the program's file name and its
    /// arguments.
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl Spec {
    pub fn parse(text: &str) -> Spec {
        let (name, rest) = match text.split_once('=') {
            Some((name, rest)) if !name.contains([' ', '/']) => (Some(name.to_string()), rest),
            _ => (None, text),
        };
        let mut words = rest.split_whitespace().map(str::to_string);
        let program = PathBuf::from(words.next().expect("a server spec names a program"));
        let args: Vec<String> = words.collect();
        let name = name.unwrap_or_else(|| {
            let file = program.file_name().map_or_else(
                || program.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            std::iter::once(file)
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" ")
        });
        Spec {
            name,
            program,
            args,
        }
    }
}

/// What to run: the flags after `--`, with their defaults.
pub struct Options {
    pub sessions: usize,
    pub clients: usize,
    pub idle: usize,
    pub server: Option<Spec>,
    pub url: Option<String>,
    pub pid: Option<u32>,
    pub log: String,
    /// The other servers (`--against SPEC`, repeatable), measured in the
    /// same rounds.
    pub against: Vec<Spec>,
    /// Extra flags for every `--against` server (`--against-flag F`,
    /// repeatable), e.g. e2e-rmcp's `--json-response`.
    pub against_flags: Vec<String>,
    pub rounds: usize,
    /// `--modern`: each unit is a 2026-07-28 `tools/call` of `echo` (one
    /// POST, no session) instead of a session, and there is no idle
    /// measurement.
    pub modern: bool,
    pub requests: usize,
    /// `--seconds S`: each server's turn in a round lasts S seconds
    /// (every connection sends until then) instead of a fixed count, so
    /// that servers thousands of requests per second apart each get a
    /// round of the same length.
    pub seconds: Option<f64>,
    /// `--warm-up N`: units per server before the rounds (default 1,000,
    /// or fewer with `--seconds`: see `main.rs`).
    pub warm_up: Option<usize>,
    /// `--strace N`: after the rounds, each server's system calls over N
    /// more units, counted by `strace -c -f` attached to it.
    pub strace: Option<usize>,
    /// `--json PATH`: the medians and ratios, also as JSON.
    pub json: Option<PathBuf>,
    /// `--tasks N`: N live tasks are created on each server first
    /// (`tools/call` of `work` as a task, a day long), and each unit is a
    /// `tasks/get` of a random one of them; no idle measurement.
    pub tasks: Option<usize>,
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
        against: Vec::new(),
        against_flags: Vec::new(),
        rounds: 5,
        modern: false,
        requests: 50_000,
        seconds: None,
        warm_up: None,
        strace: None,
        json: None,
        tasks: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--sessions" => o.sessions = value().parse().expect("--sessions N"),
            "--clients" => o.clients = value().parse().expect("--clients N"),
            "--idle" => o.idle = value().parse().expect("--idle N"),
            "--server" => o.server = Some(Spec::parse(&value())),
            "--url" => o.url = Some(value()),
            "--pid" => o.pid = Some(value().parse().expect("--pid PID")),
            "--log" => o.log = value(),
            "--against" => o.against.push(Spec::parse(&value())),
            "--against-flag" => o.against_flags.push(value()),
            "--rounds" => o.rounds = value().parse().expect("--rounds R"),
            "--modern" => o.modern = true,
            "--requests" => o.requests = value().parse().expect("--requests N"),
            "--seconds" => o.seconds = Some(value().parse().expect("--seconds S")),
            "--warm-up" => o.warm_up = Some(value().parse().expect("--warm-up N")),
            "--strace" => o.strace = Some(value().parse().expect("--strace N")),
            "--json" => o.json = Some(value().into()),
            "--tasks" => o.tasks = Some(value().parse().expect("--tasks N")),
            // What cargo bench passes to every harness.
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(o.clients > 0, "--clients must be at least 1");
    o
}

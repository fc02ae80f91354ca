//! The harness's flags (the bench's docs say what each does).

use std::path::PathBuf;

/// What a server is, which says how the harness talks to it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// `examples/mcp_server`: listeners listen to a basket
    /// (`basket://<id>`, made by `basket_create`); `basket_add` publishes
    /// its update.
    Sessionreg,
    /// A peer of `benches/peers/` (`*_listen_server.*`): listeners listen to
    /// `bench://listen`; the `publish` tool publishes its update.
    Peer,
    /// hyper alone holding SSE streams (e2e-rmcp's `stream_floor`): a `GET`
    /// per stream, nothing published.
    Floor,
}

/// A server to spawn: `NAME=PROGRAM [ARG]...` (split on whitespace).
#[derive(Clone, Debug)]
pub struct Spec {
    pub kind: Kind,
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl Spec {
    fn parse(kind: Kind, text: &str) -> Spec {
        let (name, rest) = text
            .split_once('=')
            .filter(|(name, _)| !name.contains([' ', '/']))
            .unwrap_or_else(|| panic!("a server is NAME=PROGRAM [ARG]..., not {text:?}"));
        let mut words = rest.split_whitespace().map(str::to_string);
        let program = PathBuf::from(words.next().expect("a server spec names a program"));
        Spec {
            kind,
            name: name.to_string(),
            program,
            args: words.collect(),
        }
    }

    /// Whether it speaks HTTP/2 in cleartext (prior knowledge): hyper's
    /// auto builder does; uvicorn (h11) and `node:http` do not.
    pub fn speaks_h2c(&self) -> bool {
        self.kind != Kind::Peer
    }
}

/// The flags, with their defaults.
pub struct Options {
    /// `--rss N`: RSS per idle listener, N listeners each on its own
    /// HTTP/1.1 connection (0: not measured).
    pub rss: usize,
    /// `--h2 N`: RSS per idle listener, N listeners multiplexed on HTTP/2
    /// connections of `--h2-streams` streams each.
    pub h2: usize,
    pub h2_streams: usize,
    /// `--fanout N`: one `resources/updated` to N listeners each on its own
    /// connection, `--publications` times.
    pub fanout: usize,
    pub publications: usize,
    /// Rounds: each server started afresh for each measurement of each
    /// round, the order rotating.
    pub rounds: usize,
    /// Listens (connections being opened) in flight at once.
    pub opening: usize,
    /// Seconds to open every listener, and for a publication to reach
    /// every listener, before the harness gives up on the rest.
    pub timeout_s: u64,
    /// Seconds between the last listener's acknowledgement and reading the
    /// RSS (as `benches/stream_floor.py` waits).
    pub settle_s: u64,
    /// `--listen-to tools`: the memory runs' listeners ask for
    /// `toolsListChanged` (a kind) instead of one resource URI.
    pub listen_to_tools: bool,
    /// The client's tokio worker threads.
    pub client_threads: usize,
    pub servers: Vec<Spec>,
    pub json: Option<PathBuf>,
}

impl Options {
    pub fn parse() -> Options {
        let mut o = Options {
            rss: 0,
            h2: 0,
            h2_streams: 100,
            fanout: 0,
            publications: 5,
            rounds: 3,
            opening: 128,
            timeout_s: 180,
            settle_s: 2,
            listen_to_tools: false,
            client_threads: 2,
            servers: Vec::new(),
            json: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let mut value = || {
                args.next()
                    .unwrap_or_else(|| panic!("{flag} needs a value"))
            };
            let number = |v: String| -> usize { v.parse().expect("a number") };
            match flag.as_str() {
                "--rss" => o.rss = number(value()),
                "--h2" => o.h2 = number(value()),
                "--h2-streams" => o.h2_streams = number(value()).max(1),
                "--fanout" => o.fanout = number(value()),
                "--publications" => o.publications = number(value()).max(1),
                "--rounds" => o.rounds = number(value()).max(1),
                "--opening" => o.opening = number(value()).max(1),
                "--timeout-s" => o.timeout_s = number(value()) as u64,
                "--settle-s" => o.settle_s = number(value()) as u64,
                "--listen-to" => match value().as_str() {
                    "tools" => o.listen_to_tools = true,
                    "uri" => o.listen_to_tools = false,
                    other => panic!("--listen-to tools|uri, not {other}"),
                },
                "--client-threads" => o.client_threads = number(value()).max(1),
                "--sessionreg" => o.servers.push(Spec::parse(Kind::Sessionreg, &value())),
                "--peer" => o.servers.push(Spec::parse(Kind::Peer, &value())),
                "--floor" => o.servers.push(Spec::parse(Kind::Floor, &value())),
                "--json" => o.json = Some(PathBuf::from(value())),
                // What `cargo bench` adds.
                "--bench" => {}
                other => panic!("unknown flag {other} (see the bench's docs)"),
            }
        }
        assert!(
            !o.servers.is_empty(),
            "no server: --sessionreg, --peer or --floor NAME=PROGRAM"
        );
        o
    }
}

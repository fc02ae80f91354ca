//! What the bench measures, on the server process only: churn (sessions per
//! second, server CPU per session; with `--modern`, 2026-07-28 requests per
//! second and server CPU per request) and idle sessions (memory, threads,
//! tasks).

use crate::client::{metric, Client};
use crate::options::Options;
use crate::process::{cpu_seconds, rss_bytes, status, Server};
use std::net::SocketAddr;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// What each connection of a churn does, again and again.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// One session's life: initialize, initialized, DELETE.
    Sessions,
    /// One 2026-07-28 `tools/call` of `echo` (no session), its answer
    /// checked: 200 with `resultType` `"complete"`.
    Modern,
}

impl Work {
    /// What one unit of this work is called in the tables.
    pub fn unit(self) -> &'static str {
        match self {
            Work::Sessions => "session",
            Work::Modern => "request",
        }
    }
}

/// What a churn did: its wall time, and how many of its 2026-07-28
/// answers were not 200 with `resultType` `"complete"` (a session that
/// fails panics instead), with the first of them.
pub struct Ran {
    pub wall: Duration,
    pub failures: usize,
    pub first_failure: Option<String>,
}

/// Runs `n` units of `work` over `clients` connections started on a
/// barrier.
pub fn churn(addr: SocketAddr, path: &str, clients: usize, n: usize, work: Work) -> Ran {
    let barrier = Barrier::new(clients + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let barrier = &barrier;
                let count = n / clients + usize::from(c < n % clients);
                s.spawn(move || {
                    let mut client = Client::new(addr, path);
                    let (mut failures, mut first) = (0, None);
                    barrier.wait();
                    for i in 0..count {
                        match work {
                            Work::Sessions => client.session(),
                            Work::Modern => {
                                if let Err(answer) = client.modern_call(i as u64 + 1) {
                                    failures += 1;
                                    first.get_or_insert(answer);
                                }
                            }
                        }
                    }
                    (failures, first)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut ran = Ran {
            wall: Duration::ZERO,
            failures: 0,
            first_failure: None,
        };
        for h in handles {
            let (failures, first) = h.join().expect("a client failed");
            ran.failures += failures;
            if ran.first_failure.is_none() {
                ran.first_failure = first;
            }
        }
        ran.wall = start.elapsed();
        ran
    })
}

/// Before measuring with `--modern`: one answer for the record, then `n`
/// requests checked, as the rounds will send them; the failures, and the
/// first one.
pub fn check_modern(server: &Server, n: usize) -> (String, Ran) {
    let answer = Client::new(server.addr, &server.path).modern_answer(0);
    (answer, churn(server.addr, &server.path, 1, n, Work::Modern))
}

/// One churn's figures, on the server alone (per session, or per request
/// with `--modern`).
#[derive(Clone, Copy)]
pub struct Churn {
    /// Sessions (requests) per second.
    pub rate: f64,
    /// Server user CPU per session (request), µs.
    pub user_us: f64,
    /// Server system CPU per session (request), µs.
    pub system_us: f64,
    /// Server CPU use over the churn, % of one core.
    pub utilisation: f64,
    /// Answers that were not 200 with `resultType` `"complete"`
    /// (`--modern` only).
    pub failures: usize,
}

impl Churn {
    /// Server CPU per session or request (user + system), µs.
    pub fn cpu_us(&self) -> f64 {
        self.user_us + self.system_us
    }
}

/// One churn of `o.sessions` (with `--modern`, `o.requests`) on `server`,
/// with the server's CPU time around it.
pub fn measure_churn(server: &Server, o: &Options) -> Churn {
    let (work, n) = if o.modern {
        (Work::Modern, o.requests)
    } else {
        (Work::Sessions, o.sessions)
    };
    let before = cpu_seconds(server.pid);
    let ran = churn(server.addr, &server.path, o.clients, n, work);
    let after = cpu_seconds(server.pid);
    if let Some(first) = &ran.first_failure {
        eprintln!(
            "{}: {} failed answers, the first: {first}",
            server.name, ran.failures
        );
    }
    let (wall, n) = (ran.wall, n as f64);
    let (user, system) = (after.0 - before.0, after.1 - before.1);
    Churn {
        rate: n / wall.as_secs_f64(),
        user_us: user / n * 1e6,
        system_us: system / n * 1e6,
        utilisation: 100.0 * (user + system) / wall.as_secs_f64(),
        failures: ran.failures,
    }
}

/// Idle sessions' cost on one server: `/proc` and `/metrics` before the
/// sessions were opened, with them open, and after they were deleted.
pub struct Idle {
    /// Sessions opened and left open.
    pub sessions: usize,
    /// RSS before they were opened (bytes).
    pub rss_before: u64,
    /// RSS with them open.
    pub rss_with: u64,
    /// RSS after deleting them.
    pub rss_after: u64,
    /// Server threads before they were opened.
    pub threads_before: u64,
    /// Server threads with them open.
    pub threads_with: u64,
    /// `tokio_tasks_alive` before, where the server exports it (e2e-rmcp's
    /// servers do).
    pub tasks_before: Option<f64>,
    /// `tokio_tasks_alive` with them open.
    pub tasks_with: Option<f64>,
    /// `sessionreg_sessions_live` with them open.
    pub live_with: Option<f64>,
    /// `sessionreg_sessions_live` after deleting them.
    pub live_after: Option<f64>,
}

/// Idle sessions: opened (initialize + initialized) and left open, then
/// deleted.
pub fn measure_idle(server: &Server, idle: usize) -> Idle {
    let pid = server.pid;
    let mut client = Client::new(server.addr, &server.path);
    let threads_before = status(pid, "Threads");
    // Servers that export it (e2e-rmcp's): the tokio runtime's live tasks.
    let tasks_before = metric(&client.metrics(), "tokio_tasks_alive");
    let rss_idle_before = rss_bytes(pid);
    let ids: Vec<String> = (0..idle)
        .map(|_| {
            let id = client.initialize();
            client.initialized(&id);
            id
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let rss_idle = rss_bytes(pid);
    let scraped = client.metrics();
    let live = metric(&scraped, "sessionreg_sessions_live");
    let tasks_idle = metric(&scraped, "tokio_tasks_alive");
    let threads_idle = status(pid, "Threads");
    for id in &ids {
        client.delete(id);
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss_end = rss_bytes(pid);
    let live_end = metric(&client.metrics(), "sessionreg_sessions_live");
    Idle {
        sessions: idle,
        rss_before: rss_idle_before,
        rss_with: rss_idle,
        rss_after: rss_end,
        threads_before,
        threads_with: threads_idle,
        tasks_before,
        tasks_with: tasks_idle,
        live_with: live,
        live_after: live_end,
    }
}

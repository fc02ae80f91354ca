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
    /// One 2026-07-28 `tasks/get` of a random one of the server's live
    /// tasks (`--tasks N`), checked: 200, that task, `"working"`.
    TaskGet,
}

impl Work {
    /// What one unit of this work is called in the tables.
    pub fn unit(self) -> &'static str {
        match self {
            Work::Sessions => "session",
            Work::Modern | Work::TaskGet => "request",
        }
    }
}

/// What a churn did: its wall time, the units done, every request's
/// latency, and how many units failed their check (with the first).
pub struct Ran {
    pub wall: Duration,
    pub units: usize,
    /// Every request's latency, ns, sorted.
    pub latencies: Vec<u64>,
    pub failures: usize,
    pub first_failure: Option<String>,
}

impl Ran {
    /// The latency at quantile `q` (0..=1), in µs: the nearest rank.
    pub fn latency_us(&self, q: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let rank =
            ((q * self.latencies.len() as f64).ceil() as usize).clamp(1, self.latencies.len());
        self.latencies[rank - 1] as f64 / 1e3
    }
}

/// How long a churn runs: a number of units (split over the
/// connections), or until a deadline.
#[derive(Clone, Copy)]
pub enum Length {
    Units(usize),
    For(Duration),
}

/// Runs `work` over `clients` connections started on a barrier, for
/// `length`; every answer is checked.
pub fn churn(addr: SocketAddr, path: &str, clients: usize, length: Length, work: Work) -> Ran {
    churn_tasks(addr, path, clients, length, work, &[])
}

/// [`churn`], with the live tasks `tasks/get` picks from (`Work::TaskGet`).
pub fn churn_tasks(
    addr: SocketAddr,
    path: &str,
    clients: usize,
    length: Length,
    work: Work,
    tasks: &[String],
) -> Ran {
    let barrier = Barrier::new(clients + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let barrier = &barrier;
                s.spawn(move || {
                    let mut client = Client::new(addr, path);
                    let (mut done, mut failures, mut first) = (0usize, 0usize, None);
                    // xorshift64: the live task each tasks/get reads.
                    let mut pick = 0x9E37_79B9_7F4A_7C15u64 ^ ((c as u64 + 1) << 32);
                    barrier.wait();
                    let (count, deadline) = match length {
                        Length::Units(n) => (n / clients + usize::from(c < n % clients), None),
                        Length::For(d) => (usize::MAX, Some(Instant::now() + d)),
                    };
                    while done < count && deadline.is_none_or(|d| Instant::now() < d) {
                        let checked = match work {
                            Work::Sessions => client.session(),
                            Work::Modern => client.modern_call(done as u64 + 1),
                            Work::TaskGet => {
                                pick ^= pick << 13;
                                pick ^= pick >> 7;
                                pick ^= pick << 17;
                                let task = &tasks[(pick % tasks.len() as u64) as usize];
                                client.task_get(done as u64 + 1, task)
                            }
                        };
                        if let Err(answer) = checked {
                            failures += 1;
                            first.get_or_insert(answer);
                        }
                        done += 1;
                    }
                    (done, client.latencies, failures, first)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut ran = Ran {
            wall: Duration::ZERO,
            units: 0,
            latencies: Vec::new(),
            failures: 0,
            first_failure: None,
        };
        for h in handles {
            let (done, latencies, failures, first) = h.join().expect("a client failed");
            ran.units += done;
            ran.latencies.extend(latencies);
            ran.failures += failures;
            if ran.first_failure.is_none() {
                ran.first_failure = first;
            }
        }
        ran.wall = start.elapsed();
        ran.latencies.sort_unstable();
        ran
    })
}

/// Stops the run, loudly, if any answer of `ran` failed its check.
pub fn require_all_answers(server: &Server, ran: &Ran, when: &str) {
    if ran.failures > 0 {
        eprintln!(
            "\nFAILED: {}: {} of {} units got a wrong or missing answer {when}; the first: {}",
            server.name,
            ran.failures,
            ran.units,
            ran.first_failure.as_deref().unwrap_or("?")
        );
        panic!("{}: wrong answers {when}", server.name);
    }
}

/// Before measuring with `--modern`: one answer for the record, then `n`
/// requests checked, as the rounds will send them; the failures, and the
/// first one.
pub fn check_modern(server: &Server, n: usize) -> (String, Ran) {
    let answer = Client::new(server.addr, &server.path).modern_answer(0);
    (
        answer,
        churn(server.addr, &server.path, 1, Length::Units(n), Work::Modern),
    )
}

/// One churn's figures, on the server alone (per session, or per request
/// with `--modern`).
#[derive(Clone, Copy)]
pub struct Churn {
    /// Units done.
    pub units: usize,
    /// Sessions (requests) per second.
    pub rate: f64,
    /// Server user CPU per session (request), µs.
    pub user_us: f64,
    /// Server system CPU per session (request), µs.
    pub system_us: f64,
    /// Server CPU use over the churn, % of one core.
    pub utilisation: f64,
    /// Request latency (every HTTP request; a session is three), µs:
    /// median, 99th and 99.9th percentile.
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
}

impl Churn {
    /// Server CPU per session or request (user + system), µs.
    pub fn cpu_us(&self) -> f64 {
        self.user_us + self.system_us
    }
}

/// What the options ask to measure.
pub fn work(o: &Options) -> Work {
    if o.tasks.is_some() {
        Work::TaskGet
    } else if o.modern {
        Work::Modern
    } else {
        Work::Sessions
    }
}

/// `n` live tasks on `server` (`--tasks N`), each a `work` call of a day
/// created as a task over `clients` connections; their ids.
pub fn prefill_tasks(server: &Server, n: usize, clients: usize) -> Vec<String> {
    let ids = std::sync::Mutex::new(Vec::with_capacity(n));
    std::thread::scope(|s| {
        for c in 0..clients {
            let ids = &ids;
            s.spawn(move || {
                let mut client = Client::new(server.addr, &server.path);
                let count = n / clients + usize::from(c < n % clients);
                for i in 0..count {
                    let id = client
                        .task_create(i as u64 + 1, 86_400)
                        .unwrap_or_else(|e| panic!("FAILED: {}: {e}", server.name));
                    ids.lock().unwrap().push(id);
                }
            });
        }
    });
    ids.into_inner().unwrap()
}

/// The length of one server's turn: `--seconds`, or `--sessions`
/// (`--requests` with `--modern`).
pub fn length(o: &Options) -> Length {
    match o.seconds {
        Some(s) => Length::For(Duration::from_secs_f64(s)),
        None if o.modern || o.tasks.is_some() => Length::Units(o.requests),
        None => Length::Units(o.sessions),
    }
}

/// One churn on `server`, with the server's CPU time around it; stops the
/// run if any answer was wrong.
pub fn measure_churn(server: &Server, o: &Options, round: usize, tasks: &[String]) -> Churn {
    let work = work(o);
    let before = cpu_seconds(server.pid);
    let ran = churn_tasks(server.addr, &server.path, o.clients, length(o), work, tasks);
    let after = cpu_seconds(server.pid);
    require_all_answers(server, &ran, &format!("in round {}", round + 1));
    let (wall, n) = (ran.wall, ran.units as f64);
    let (user, system) = (after.0 - before.0, after.1 - before.1);
    Churn {
        units: ran.units,
        rate: n / wall.as_secs_f64(),
        user_us: user / n * 1e6,
        system_us: system / n * 1e6,
        utilisation: 100.0 * (user + system) / wall.as_secs_f64(),
        p50_us: ran.latency_us(0.5),
        p99_us: ran.latency_us(0.99),
        p999_us: ran.latency_us(0.999),
    }
}

/// System calls per unit: `strace -c -f` attached to the server over `n`
/// units, its summary parsed. (name, calls per unit), most first; and the
/// total per unit.
pub fn strace_counts(
    server: &Server,
    o: &Options,
    n: usize,
    tasks: &[String],
) -> (Vec<(String, f64)>, f64) {
    let work = work(o);
    let out = std::env::temp_dir().join(format!("e2e-strace-{}.txt", server.pid));
    let mut strace = std::process::Command::new("strace")
        .args(["-c", "-f", "-q", "-o"])
        .arg(&out)
        .args(["-p", &server.pid.to_string()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("strace (apt-get install strace)");
    // Attached to every thread before the first request.
    std::thread::sleep(Duration::from_millis(1000));
    let ran = churn_tasks(
        server.addr,
        &server.path,
        o.clients,
        Length::Units(n),
        work,
        tasks,
    );
    require_all_answers(server, &ran, "under strace");
    // SIGINT: strace detaches and writes its summary.
    let _ = std::process::Command::new("kill")
        .args(["-INT", &strace.id().to_string()])
        .status();
    let _ = strace.wait();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    let mut calls: Vec<(String, f64)> = text
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // % time, seconds, usecs/call, calls, [errors], syscall
            if f.len() < 5 || f[0].parse::<f64>().is_err() || f.last() == Some(&"total") {
                return None;
            }
            let count: f64 = f[3].parse().ok()?;
            Some((f.last()?.to_string(), count / ran.units as f64))
        })
        .collect();
    calls.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total = calls.iter().map(|c| c.1).sum();
    (calls, total)
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
    let fail = |e: String| -> ! { panic!("{}: idle sessions: {e}", server.name) };
    let ids: Vec<String> = (0..idle)
        .map(|_| {
            let id = client.initialize().unwrap_or_else(|e| fail(e));
            client.initialized(&id).unwrap_or_else(|e| fail(e));
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
        client.delete(id).unwrap_or_else(|e| fail(e));
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

//! Churn against the registry directly, with threads (no HTTP).
//!
//! Each worker creates sessions and ends each one by a path chosen by its
//! sequence number: DELETE, a failed handler, a rejected first request,
//! abandoned to the idle reaper, or kept busy by a long request until
//! shutdown. While it works it
//! looks up ids it has seen end, which must never find anything. A reaper
//! thread sweeps for idle sessions; the main thread prints progress once a
//! second, then shuts down (terminate_all) and checks the books.

use crate::closes::Closes;
use crate::{verdict, Args};
use sessionreg::{InFlight, Reason, Registry, SessionId, Termination};
use std::collections::VecDeque;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The session value: counts its own drops, so a leak or double drop shows.
struct Conn {
    drops: Arc<AtomicU64>,
    _buffer: [u8; 64],
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

#[derive(Default)]
struct Books {
    created: AtomicU64,
    closes: Closes,
    stale_found: AtomicU64,
    full_retries: AtomicU64,
    expired_early: AtomicU64,
}

/// How session number `n` ends.
fn path_of(n: u64) -> Option<Reason> {
    match n % 10 {
        0..=4 => Some(Reason::Deleted),
        5 | 6 => Some(Reason::IdleTimeout),
        7 => Some(Reason::Failed),
        8 => Some(Reason::Rejected),
        _ => None, // a long request keeps it busy until shutdown
    }
}

pub fn run(args: &Args) -> ExitCode {
    let books = Arc::new(Books::default());
    let drops = Arc::new(AtomicU64::new(0));
    let on_close_books = books.clone();
    let registry = Registry::builder()
        .capacity(args.capacity)
        .idle_timeout(Duration::from_millis(args.idle_timeout_ms()))
        .on_close(move |_id: &SessionId, _conn: &Conn, reason| {
            on_close_books.closes.record(reason);
        })
        .build()
        .expect("valid configuration");
    let registry = Arc::new(registry);
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    eprintln!(
        "churn (core): {} sessions on {} threads, capacity {}, idle timeout {} ms",
        args.sessions(),
        args.threads,
        args.capacity,
        args.idle_timeout_ms()
    );
    let started = Instant::now();

    let reaper = {
        let (registry, done) = (registry.clone(), done.clone());
        let period = Duration::from_millis(args.idle_timeout_ms().clamp(1, 1000) / 2 + 1);
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let _ = registry.reap_idle();
                std::thread::sleep(period);
            }
        })
    };
    let workers: Vec<_> = (0..args.threads)
        .map(|_| {
            let (registry, books, drops, next) =
                (registry.clone(), books.clone(), drops.clone(), next.clone());
            let total = args.sessions();
            let max_long = (args.capacity / (4 * args.threads)).max(1);
            std::thread::spawn(move || work(&registry, &books, &drops, &next, total, max_long))
        })
        .collect();

    let mut last = (Instant::now(), 0);
    while workers.iter().any(|w| !w.is_finished()) {
        std::thread::sleep(Duration::from_millis(50));
        if last.0.elapsed() >= Duration::from_secs(1) {
            let created = books.created.load(Ordering::Relaxed);
            let rate = (created - last.1) as f64 / last.0.elapsed().as_secs_f64();
            eprintln!(
                "  {created:>10} created  {rate:>12.0} sessions/s  {:>7} live",
                registry.len()
            );
            last = (Instant::now(), created);
        }
    }
    let long_requests: Vec<_> = workers
        .into_iter()
        .map(|worker| worker.join().expect("worker panicked"))
        .collect();
    done.store(true, Ordering::Relaxed);
    reaper.join().expect("reaper panicked");

    // Shutdown ends every session, busy or not; the long requests then end.
    let shut = registry.terminate_all(Reason::Shutdown);
    drop(long_requests);
    let elapsed = started.elapsed();
    let stats = registry.stats();
    let live = registry.len();
    drop(registry); // every value must be dropped now: no handle is held
    report(&books, &drops, shut, live, &stats, elapsed)
}

/// Returns the requests still running on sessions kept until shutdown.
fn work(
    registry: &Registry<Conn>,
    books: &Books,
    drops: &Arc<AtomicU64>,
    next: &AtomicU64,
    total: u64,
    max_long: usize,
) -> VecDeque<InFlight<Conn>> {
    let mut ended: Vec<SessionId> = Vec::with_capacity(64);
    let mut long_requests = VecDeque::new();
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        if n >= total {
            return long_requests;
        }
        let mut conn = Conn {
            drops: drops.clone(),
            _buffer: [0; 64],
        };
        let id = loop {
            match registry.insert(conn) {
                Ok(id) => break id,
                Err(full) => {
                    // At capacity: wait for the reaper, never evict.
                    books.full_retries.fetch_add(1, Ordering::Relaxed);
                    conn = full.into_inner();
                    std::thread::yield_now();
                }
            }
        };
        books.created.fetch_add(1, Ordering::Relaxed);
        // A request on the session, as a handler would run it. On a loaded
        // machine this thread can be descheduled for longer than the idle
        // timeout right after the insert; then the reaper has (rightly) ended
        // the session already, and the lookup finds nothing.
        let Some(request) = registry.get(&id).and_then(|session| session.begin()) else {
            books.expired_early.fetch_add(1, Ordering::Relaxed);
            ended.push(id);
            continue;
        };
        assert_eq!(request.id(), id, "a lookup returned another session");
        match path_of(n) {
            // Abandoned: the request ends and the reaper takes the session.
            Some(Reason::IdleTimeout) => drop(request),
            None => {
                // Bounded, so long requests never fill the registry: when the
                // window is full the oldest finishes, and its session idles
                // out to the reaper.
                if long_requests.len() == max_long {
                    long_requests.pop_front();
                }
                long_requests.push_back(request);
            }
            Some(reason) => {
                // Ended from within a request (a DELETE, a failing handler, a
                // rejected first request): in flight, so the reaper cannot
                // race it, and this call must win.
                let outcome = registry.terminate(&id, reason);
                assert_eq!(outcome, Termination::Won, "the only terminator must win");
                drop(request);
                ended.push(id);
            }
        }
        // Ids that ended must never find anything again, whatever the slot
        // holds now.
        if ended.len() == ended.capacity() {
            for old in ended.drain(..) {
                if registry.get(&old).is_some() {
                    books.stale_found.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

fn report(
    books: &Books,
    drops: &AtomicU64,
    shut: usize,
    live: usize,
    stats: &sessionreg::Stats,
    elapsed: Duration,
) -> ExitCode {
    let created = books.created.load(Ordering::Relaxed);
    let dropped = drops.load(Ordering::Relaxed);
    let stale_found = books.stale_found.load(Ordering::Relaxed);
    eprintln!(
        "done in {:.2?}: {:.0} sessions/s",
        elapsed,
        created as f64 / elapsed.as_secs_f64()
    );
    println!("created          {created}");
    books.closes.print();
    println!("values dropped   {dropped}");
    println!("live at the end  {live}");
    println!("(shutdown ended {shut}; idle before their first request {}; insert retries at capacity {}; stale ids found {stale_found}; lookups rejected as stale {})",
        books.expired_early.load(Ordering::Relaxed),
        books.full_retries.load(Ordering::Relaxed),
        stats.misses(sessionreg::Miss::Stale));
    verdict(&[
        ("sessions left live", live != 0),
        (
            "closes differ from creates",
            books.closes.by_reason_total() != created || books.closes.calls() != created,
        ),
        ("values dropped differ from creates", dropped != created),
        ("an ended id found a session", stale_found != 0),
        (
            "registry stats disagree",
            stats.created != created || stats.terminated_total() != created,
        ),
    ])
}

//! The publisher's cost per matching listener, in-process: a
//! `SessionManager` whose listen streams are opened by 2026-07-28
//! `subscriptions/listen` requests through `SessionManager::handle` (no
//! sockets), each response body held; then `Publisher::publish` of a
//! change every one of them listens to, timed, ÷ the listeners.
//!
//! * `listen_publish/tools/N`: N listeners of `toolsListChanged` (a kind:
//!   its members are one persistent tree, `roster.rs`),
//!   `Publisher::tools_changed()`.
//! * `listen_publish/uri/N`: N listeners of one resource URI,
//!   `Publisher::resource_updated(uri, Audience::Everyone)`. (A URI's
//!   members are chunks of 128 whose list is copied on every join and
//!   leave: opening N listeners on one URI costs O(N²/128), so this group
//!   stops at 10,000; see
//!   `--count open-uri` below.)
//! * `listen_publish/tools_tokio/N`: as `tools`, each body read by a tokio
//!   task of a current-thread runtime parked on it, as a connection's task
//!   is: each delivery also wakes (schedules) that task. Timed is the
//!   publish alone; the tasks run between publications, untimed.
//! * `listen_publish/tools_remote/N`: as `tools_tokio`, the tasks on a
//!   multi-thread runtime of two workers and the publication made from a
//!   thread outside it (an application's background thread): each wake
//!   reaches the runtime from outside (its shared queue, a parked worker
//!   woken when one is).
//!
//! The bodies nobody polls fill their queues (64 publications by default)
//! and their listeners are then ended as lagging; so in `uri` the harness
//! reads every body's waiting frames after every 32 publications (untimed:
//! exactly the frames waiting, with a no-op waker, never reaching
//! `Pending`, so no waker is registered and the publish wakes nobody, as
//! for a stream whose connection task is busy; the `tools_tokio` group has
//! the parked task's waker). A list change is not queued but raised, and a
//! second one before the stream reads merges into the first (`inbox.rs`),
//! which costs less; so in `tools` the harness reads every body before
//! every publication, and each delivery is a full one: the change's signal
//! found down, raised. Every read frame is checked to be data, and after
//! the run the count of live listeners (one ended as lagging would fail
//! the bench) and, in `--count`, of notifications (one per listener per
//! publication: none merged).
//!
//! What is timed is the publishing thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`), not wall time: on a shared machine the
//! publisher is preempted by other processes, which wall time would count.
//!
//! Sizes: 1,000 to `LISTEN_PUBLISH_MAX` (default 1,000,000) by tens.
//! `cargo bench --bench listen_publish` (criterion; the per-listener figures:
//! `python3 benches/listen_publish.py target/criterion`).
//!
//! Untimed, for callgrind and the counting allocator
//! (`benches/support/counting.rs`): `--count <tools|uri> N P` opens N
//! listeners, then publishes P times (reading the frames as above), each
//! through `publish_once`, which is never inlined; it prints the heap bytes
//! per idle listener and the allocations of the publications (counted
//! inside `publish_once` only). `--count open-uri N` and `--count
//! open-tools N` open N listeners (the instructions of opening one more
//! listener, at two N, show the URI join's growth):
//!
//! ```text
//! B=$(cargo bench --bench listen_publish --no-run 2>&1 | grep -o 'target/[^ )]*')
//! for n in 10000 30000; do
//!   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*publish_once*' \
//!     --callgrind-out-file=/dev/null $B --count tools $n 4
//! done   # (Ir(30000) − Ir(10000)) ÷ (20000 × 4): instructions per listener
//! ```

#[path = "support/counting.rs"]
#[allow(dead_code)] // the peak is not read here
mod counting;

use bytes::Bytes;
use counting::Counting;
use criterion::{BenchmarkId, Criterion, Throughput};
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use serde_json::json;
use sessionreg::http::jsonrpc::{Message, Request, RpcError};
use sessionreg::http::{
    App, Audience, Body, Context, HandlerError, Publisher, Reply, SessionManager,
};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A resource's updates: frames read from every body after this many
/// publications (under the default queue of 64).
const DRAIN_EVERY: usize = 32;
const URI: &str = "bench://listen";

/// No tools, no sessions: listen streams are the layer's own.
struct Quiet;

impl App for Quiet {
    type Session = ();

    fn open(&self, _: &Request, _: &http::request::Parts) -> Result<(), RpcError> {
        Ok(())
    }

    async fn handle(&self, _ctx: Context<()>, _message: Message) -> Result<Reply, HandlerError> {
        Ok(Reply::Accepted)
    }
}

/// What the listeners listen to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Topic {
    Tools,
    Uri,
}

impl Topic {
    fn filter(self) -> serde_json::Value {
        match self {
            Topic::Tools => json!({ "toolsListChanged": true }),
            Topic::Uri => json!({ "resourceSubscriptions": [URI] }),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Topic::Tools => "tools",
            Topic::Uri => "uri",
        }
    }
}

fn listen(id: usize, topic: Topic) -> http::Request<Full<Bytes>> {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {
            "notifications": topic.filter(),
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "bench", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    });
    http::Request::builder()
        .method(http::Method::POST)
        .uri("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a request")
}

/// N listen streams of one manager, their bodies held unread.
struct Held {
    manager: SessionManager<Quiet>,
    publisher: Publisher,
    bodies: Vec<Body>,
    topic: Topic,
    /// Frames waiting in every body (the acknowledgement, then one per
    /// publication since the last read).
    owed: usize,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Opens `n` listeners of `topic` (inside `rt`, which their keep-alive
/// timers belong to).
fn open(rt: &tokio::runtime::Runtime, n: usize, topic: Topic) -> Held {
    rt.block_on(async {
        let manager = SessionManager::builder(Quiet)
            .listen_capacity(n.max(1))
            .build()
            .expect("a manager");
        let mut bodies = Vec::with_capacity(n);
        for id in 0..n {
            let response = manager.handle(listen(id, topic)).await;
            assert_eq!(response.status(), 200, "listen {id} refused");
            bodies.push(response.into_body());
        }
        let publisher = manager.publisher();
        Held {
            manager,
            publisher,
            bodies,
            topic,
            owed: 1,
        }
    })
}

impl Held {
    /// Whether the bodies are read before the next publication: every time
    /// for a list change (each delivery raises a signal that is down, none
    /// merges), every [`DRAIN_EVERY`] for a resource's updates.
    fn due(&self) -> bool {
        match self.topic {
            Topic::Tools => self.owed > 0,
            Topic::Uri => self.owed > DRAIN_EVERY,
        }
    }

    /// Reads every body's waiting frames, without ever reaching `Pending`.
    fn drain(&mut self) {
        let mut cx = std::task::Context::from_waker(Waker::noop());
        for (i, body) in self.bodies.iter_mut().enumerate() {
            for _ in 0..self.owed {
                match Pin::new(&mut *body).poll_frame(&mut cx) {
                    Poll::Ready(Some(Ok(frame))) if frame.is_data() => {}
                    _ => panic!("listener {i} has no frame waiting: ended (lagging?)"),
                }
            }
        }
        self.owed = 0;
    }

    /// A sample of the manager's metrics.
    fn metric(&self, name: &str) -> u64 {
        let metrics = self.manager.metrics();
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {name} in the metrics")) as u64
    }

    /// Listen streams live: none ended (as lagging, say).
    fn live(&self) -> u64 {
        self.metric("sessionreg_listeners_live")
    }
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): what the
/// publisher's thread spent, not the time it waited while other processes
/// of a shared machine ran (wall time on a loaded 2-core machine inflates
/// several-fold; this does not, cache misses aside).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration;
    // CLOCK_THREAD_CPUTIME_ID is supported on every Linux this runs on.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// One publication, as an application makes it.
#[inline(never)]
fn publish_once(publisher: &Publisher, topic: Topic) {
    match topic {
        Topic::Tools => publisher.tools_changed(),
        Topic::Uri => publisher.resource_updated(URI, Audience::Everyone),
    }
}

/// Sizes: 1,000 up to `LISTEN_PUBLISH_MAX` by tens.
fn sizes(cap: usize) -> Vec<usize> {
    let max: usize = std::env::var("LISTEN_PUBLISH_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    std::iter::successors(Some(1_000), |n| Some(n * 10))
        .take_while(|n| *n <= max.min(cap))
        .collect()
}

fn bench_polled(c: &mut Criterion, topic: Topic, cap: usize) {
    let mut group = c.benchmark_group(format!("listen_publish/{}", topic.name()));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for n in sizes(cap) {
        let rt = runtime();
        let started = Instant::now();
        let mut held = open(&rt, n, topic);
        eprintln!(
            "{} listeners of {} opened in {:.1} s",
            n,
            topic.name(),
            started.elapsed().as_secs_f64()
        );
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if held.due() {
                        held.drain();
                    }
                    let t = thread_cpu();
                    publish_once(&held.publisher, held.topic);
                    total += thread_cpu() - t;
                    held.owed += 1;
                }
                total
            })
        });
        held.drain();
        assert_eq!(held.live(), n as u64, "every listener still open");
        drop(held);
        drop(rt);
    }
    group.finish();
}

/// As `bench_polled` for `toolsListChanged`, each body read by a tokio task
/// parked on it.
fn bench_tokio(c: &mut Criterion) {
    let mut group = c.benchmark_group("listen_publish/tools_tokio");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for n in sizes(usize::MAX) {
        let rt = runtime();
        let mut held = open(&rt, n, Topic::Tools);
        let frames = Arc::new(AtomicUsize::new(0));
        for body in held.bodies.drain(..) {
            let frames = Arc::clone(&frames);
            rt.spawn(async move {
                let mut body = body;
                while let Some(Ok(_)) = body.frame().await {
                    frames.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // The acknowledgements read: every task parked.
        let mut expected = n;
        rt.block_on(wait_for(&frames, expected));
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let t = thread_cpu();
                        publish_once(&held.publisher, Topic::Tools);
                        total += thread_cpu() - t;
                        expected += n;
                        wait_for(&frames, expected).await;
                    }
                    total
                })
            })
        });
        assert_eq!(held.live(), n as u64, "every listener still open");
        drop(held);
        drop(rt);
    }
    group.finish();
}

/// As `bench_tokio`, on a multi-thread runtime (two workers) whose tasks
/// read the bodies, the publication made from a thread outside it (an
/// application's background thread): each delivery's wake reaches the
/// runtime from outside.
fn bench_remote(c: &mut Criterion) {
    let mut group = c.benchmark_group("listen_publish/tools_remote");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for n in sizes(usize::MAX) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let mut held = open(&rt, n, Topic::Tools);
        let frames = Arc::new(AtomicUsize::new(0));
        for body in held.bodies.drain(..) {
            let frames = Arc::clone(&frames);
            rt.spawn(async move {
                let mut body = body;
                while let Some(Ok(_)) = body.frame().await {
                    frames.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let mut expected = n;
        while frames.load(Ordering::Relaxed) < expected {
            std::thread::yield_now();
        }
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = thread_cpu();
                    publish_once(&held.publisher, Topic::Tools);
                    total += thread_cpu() - t;
                    expected += n;
                    while frames.load(Ordering::Relaxed) < expected {
                        std::thread::yield_now();
                    }
                }
                total
            })
        });
        assert_eq!(held.live(), n as u64, "every listener still open");
        drop(held);
        drop(rt);
    }
    group.finish();
}

async fn wait_for(frames: &AtomicUsize, expected: usize) {
    while frames.load(Ordering::Relaxed) < expected {
        tokio::task::yield_now().await;
    }
}

/// `--count`: untimed runs for callgrind and the counting allocator.
fn count(args: &[String]) {
    let what = args.first().map(String::as_str).unwrap_or("");
    let number = |i: usize| -> usize {
        args.get(i)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("--count {what}: a number expected at {i}"))
    };
    let rt = runtime();
    match what {
        "tools" | "uri" => {
            let topic = if what == "tools" {
                Topic::Tools
            } else {
                Topic::Uri
            };
            let (n, publications) = (number(1), number(2));
            let (bytes0, _) = counting::mark();
            let mut held = open(&rt, n, topic);
            let per_listener = (counting::live_bytes() - bytes0) as f64 / n as f64;
            held.drain();
            let mut allocations = 0;
            let mut cpu = Vec::with_capacity(publications);
            for _ in 0..publications {
                if held.due() {
                    held.drain();
                }
                let before = counting::allocations();
                let t = thread_cpu();
                publish_once(&held.publisher, topic);
                cpu.push(thread_cpu() - t);
                allocations += counting::allocations() - before;
                held.owed += 1;
            }
            cpu.sort_unstable();
            held.drain();
            assert_eq!(held.live(), n as u64, "every listener still open");
            assert_eq!(
                held.metric("sessionreg_listeners_notifications_total"),
                (n * publications) as u64,
                "every publication queued for every listener"
            );
            println!("listeners: {n}, publications: {publications}");
            println!("heap bytes per idle listener: {per_listener:.1}");
            println!(
                "allocations per publication: {:.2}",
                allocations as f64 / publications as f64
            );
            println!("allocations: {allocations}");
            if let (Some(min), Some(median)) = (cpu.first(), cpu.get(cpu.len() / 2)) {
                println!(
                    "thread CPU ns per listener: min {:.1}, median {:.1}",
                    min.as_nanos() as f64 / n as f64,
                    median.as_nanos() as f64 / n as f64
                );
            }
        }
        "open-uri" | "open-tools" => {
            let topic = if what == "open-uri" {
                Topic::Uri
            } else {
                Topic::Tools
            };
            let n = number(1);
            let before = counting::allocations();
            let held = open(&rt, n, topic);
            println!("listeners: {n}");
            println!("allocations: {}", counting::allocations() - before);
            drop(held);
        }
        _ => panic!("--count <tools|uri> N PUBLICATIONS, or --count <open-uri|open-tools> N"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--count") {
        count(&args[at + 1..]);
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    bench_polled(&mut criterion, Topic::Tools, usize::MAX);
    bench_polled(&mut criterion, Topic::Uri, 10_000);
    bench_tokio(&mut criterion);
    bench_remote(&mut criterion);
    criterion.final_summary();
}

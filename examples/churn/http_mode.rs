//! Churn over real loopback sockets: the session manager runs in-process on
//! 127.0.0.1:0, and client tasks drive each session through `initialize`,
//! `notifications/initialized` and a `tools/call`, then end it by one of the
//! paths: DELETE, abandoned to the idle reaper, a failing handler, a first
//! request the application rejects, or kept until shutdown by an open
//! standalone SSE stream (an open stream counts as a request in flight, so
//! the reaper leaves the session alone; a bounded window of them per client,
//! the oldest dropped first, after which its session idles out).
//!
//! Progress once a second on stderr; at the end a summary read from the
//! close callbacks and the registry. Exits non-zero if a session is left
//! live or closes differ from creates.

use crate::closes::Closes;
use crate::{verdict, Args};
use http::StatusCode;
use http_body_util::BodyExt;
use mcp_test_client::Client;
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, Message, RpcError};
use sessionreg::http::{self as mcp, App, Context, HandlerError, Reply, SessionManager};
use sessionreg::{Reason, SessionId};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the clients saw.
#[derive(Default)]
struct Seen {
    /// Sessions that idled out before the client got to end them (a loaded
    /// machine can pause a client for longer than the idle timeout).
    expired_early: AtomicU64,
    /// Ended ids that still found a session (must stay 0).
    stale_found: AtomicU64,
    /// Initialize refused at capacity (503), retried.
    full_retries: AtomicU64,
    /// Any other status the clients did not expect (must stay 0).
    unexpected: AtomicU64,
    /// Kept streams that ended cleanly at shutdown.
    streams_ended: AtomicU64,
}

/// Open standalone streams each client keeps, at most.
const KEPT_PER_CLIENT: usize = 8;

type Stream = http::Response<hyper::body::Incoming>;

/// The application: one tool that echoes and one that fails.
struct Churn {
    closes: Arc<Closes>,
}

impl App for Churn {
    type Session = ();

    fn open(
        &self,
        _initialize: &jsonrpc::Request,
        _request: &http::request::Parts,
    ) -> Result<(), RpcError> {
        Ok(())
    }

    async fn handle(&self, _ctx: Context<()>, message: Message) -> Result<Reply, HandlerError> {
        let Message::Request(request) = message else {
            return Ok(Reply::Accepted);
        };
        let params = request.params_value().unwrap_or(Value::Null);
        match request.method.as_str() {
            "initialize" => {
                if params.pointer("/clientInfo/name") == Some(&json!("reject-me")) {
                    return Ok(Reply::Error(RpcError::invalid_params("not today")));
                }
                Ok(Reply::Result(json!({
                    "capabilities": { "tools": {} },
                    "serverInfo": { "name": "churn", "version": "0" },
                })))
            }
            "tools/call" => match params.get("name").and_then(Value::as_str) {
                Some("fail") => Err(HandlerError::msg("failing on purpose")),
                _ => Ok(Reply::Result(
                    json!({ "content": [{ "type": "text", "text": "ok" }] }),
                )),
            },
            other => Ok(Reply::Error(RpcError::method_not_found(other))),
        }
    }

    fn closed(&self, _id: &SessionId, _session: &(), reason: Reason) {
        self.closes.record(reason);
    }
}

/// How session number `n` should end.
fn path_of(n: u64) -> Reason {
    match n % 10 {
        0..=4 => Reason::Deleted,
        5 | 6 => Reason::IdleTimeout,
        7 => Reason::Failed,
        8 => Reason::Rejected,
        _ => Reason::Shutdown,
    }
}

struct Driver {
    client: Client,
    seen: Seen,
}

impl Driver {
    /// A POST in `session` (if given): its status and the session id it
    /// echoes. The body is read through, so the connection goes back to the
    /// pool.
    async fn post(&self, session: Option<&str>, body: Value) -> (StatusCode, Option<String>) {
        let reply = self.client.post(session, &body).await;
        (reply.status, reply.session_id())
    }

    fn expect(&self, status: StatusCode, wanted: &[StatusCode]) -> bool {
        if wanted.contains(&status) {
            true
        } else {
            if self.seen.unexpected.fetch_add(1, Ordering::Relaxed) < 5 {
                eprintln!("unexpected status {status} (wanted one of {wanted:?})");
            }
            false
        }
    }

    /// Opens the session's standalone SSE stream.
    async fn open_stream(&self, session: &str) -> Option<Stream> {
        let response = self.client.open_stream(session, None).await;
        match response.status() {
            StatusCode::OK => Some(response),
            StatusCode::NOT_FOUND => {
                self.seen.expired_early.fetch_add(1, Ordering::Relaxed);
                None
            }
            status => {
                self.expect(status, &[StatusCode::OK]);
                None
            }
        }
    }

    /// One session's life; returns its open stream if it is kept until
    /// shutdown.
    async fn session(&self, n: u64) -> Option<Stream> {
        let path = path_of(n);
        let name = if path == Reason::Rejected {
            "reject-me"
        } else {
            "churn"
        };
        let initialize = mcp_test_client::initialize_body(name);
        let id = loop {
            match self.post(None, initialize.clone()).await {
                (StatusCode::SERVICE_UNAVAILABLE, _) => {
                    // At capacity: wait for the reaper, never evict.
                    self.seen.full_retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                (StatusCode::BAD_REQUEST, None) if path == Reason::Rejected => return None,
                (StatusCode::OK, Some(id)) if path != Reason::Rejected => break id,
                (status, _) => {
                    self.expect(status, &[]);
                    return None;
                }
            }
        };
        let status = self.client.initialized(&id).await.status;
        if status == StatusCode::NOT_FOUND {
            self.seen.expired_early.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.expect(status, &[StatusCode::ACCEPTED]);
        let tool = if path == Reason::Failed {
            "fail"
        } else {
            "echo"
        };
        let status = self.client.call(&id, tool, json!({})).await.status;
        let wanted = if path == Reason::Failed {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::OK
        };
        if status == StatusCode::NOT_FOUND {
            self.seen.expired_early.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.expect(status, &[wanted]);
        match path {
            Reason::Deleted => {
                match self.client.delete(&id).await.status {
                    StatusCode::NOT_FOUND => {
                        self.seen.expired_early.fetch_add(1, Ordering::Relaxed);
                    }
                    status => {
                        self.expect(status, &[StatusCode::OK]);
                    }
                }
                self.check_ended(&id).await;
                None
            }
            Reason::Failed => {
                self.check_ended(&id).await;
                None
            }
            Reason::Shutdown => self.open_stream(&id).await,
            // Abandoned to the reaper.
            _ => None,
        }
    }

    /// An ended id must never reach a session again.
    async fn check_ended(&self, id: &str) {
        let ping = json!({ "jsonrpc": "2.0", "id": 3, "method": "ping" });
        if self.post(Some(id), ping).await.0 != StatusCode::NOT_FOUND {
            self.seen.stale_found.fetch_add(1, Ordering::Relaxed);
        }
    }
}

pub fn run(args: &Args) -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(drive(args))
}

async fn drive(args: &Args) -> ExitCode {
    let closes = Arc::new(Closes::default());
    let built = SessionManager::builder(Churn {
        closes: Arc::clone(&closes),
    })
    .capacity(args.capacity)
    .idle_timeout(Some(Duration::from_millis(args.idle_timeout_ms())))
    .build();
    let manager = match built {
        Ok(manager) => manager,
        Err(error) => {
            eprintln!("churn: {error}");
            return ExitCode::from(2);
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("a bound address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(mcp::serve(
        listener,
        manager.clone(),
        manager.clone(),
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(10),
    ));
    let total = args.sessions();
    eprintln!(
        "churn (http): {total} sessions through http://{addr}/mcp, {} clients, {} threads, capacity {}, idle timeout {} ms",
        args.clients, args.threads, args.capacity, args.idle_timeout_ms()
    );

    let http = mcp_test_client::http_builder()
        .pool_max_idle_per_host(args.clients)
        .build_http();
    let driver = Arc::new(Driver {
        client: Client::with_http(http, &format!("http://{addr}/mcp")),
        seen: Seen::default(),
    });
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let clients: Vec<_> = (0..args.clients.max(1))
        .map(|_| {
            let (driver, next) = (Arc::clone(&driver), Arc::clone(&next));
            tokio::spawn(async move {
                let mut kept = std::collections::VecDeque::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        return kept;
                    }
                    if let Some(stream) = driver.session(n).await {
                        if kept.len() == KEPT_PER_CLIENT {
                            // Dropping the stream leaves the session to the reaper.
                            kept.pop_front();
                        }
                        kept.push_back(stream);
                    }
                }
            })
        })
        .collect();

    let progress = {
        let manager = manager.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            let mut last = (Instant::now(), 0);
            loop {
                tick.tick().await;
                let stats = manager.stats();
                let rate = (stats.created - last.1) as f64 / last.0.elapsed().as_secs_f64();
                eprintln!(
                    "  {:>8} created  {rate:>8.0} sessions/s  {:>6} live  {:>8} ended",
                    stats.created,
                    stats.live,
                    stats.terminated_total()
                );
                last = (Instant::now(), stats.created);
            }
        })
    };

    let mut streams = Vec::new();
    for client in clients {
        streams.extend(client.await.expect("a client task panicked"));
    }
    let kept = streams.len();
    // The abandoned sessions go to the reaper; wait for it (generously).
    let deadline = Instant::now() + Duration::from_millis(args.idle_timeout_ms() * 10 + 10_000);
    while manager.stats().live as usize > kept && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Graceful shutdown ends the sessions kept until now.
    let _ = stop.send(());
    // Every kept stream must get a clean end from the shutdown.
    let readers: Vec<_> = streams
        .into_iter()
        .map(|stream| {
            let driver = Arc::clone(&driver);
            tokio::spawn(async move {
                let mut body = stream.into_body();
                let ended = tokio::time::timeout(Duration::from_secs(20), async {
                    loop {
                        match body.frame().await {
                            None => return true,
                            Some(Ok(_)) => {}
                            Some(Err(_)) => return false,
                        }
                    }
                })
                .await;
                if ended == Ok(true) {
                    driver.seen.streams_ended.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let report = server
        .await
        .expect("the server task")
        .expect("the server ran");
    for reader in readers {
        let _ = reader.await;
    }
    progress.abort();
    let elapsed = started.elapsed();
    summary(&manager, &closes, &driver.seen, report, kept, elapsed)
}

fn summary(
    manager: &SessionManager<Churn>,
    closes: &Closes,
    seen: &Seen,
    report: mcp::ShutdownReport,
    kept: usize,
    elapsed: Duration,
) -> ExitCode {
    let stats = manager.stats();
    let live = manager.registry().len();
    eprintln!(
        "done in {elapsed:.2?}: {:.0} sessions/s over HTTP",
        stats.created as f64 / elapsed.as_secs_f64()
    );
    println!("created          {}", stats.created);
    closes.print();
    println!("live at the end  {live}");
    println!(
        "(kept until shutdown by an open stream {kept}, streams ended cleanly {}, shutdown ended {}, drained {}; idled out before their end {}; initialize retries at capacity {}; lookups rejected {})",
        seen.streams_ended.load(Ordering::Relaxed),
        report.sessions_ended,
        report.drained,
        seen.expired_early.load(Ordering::Relaxed),
        seen.full_retries.load(Ordering::Relaxed),
        sessionreg::Miss::ALL.iter().map(|c| stats.misses(*c)).sum::<u64>(),
    );
    verdict(&[
        ("sessions left live", live != 0 || stats.live != 0),
        (
            "closes differ from creates",
            closes.by_reason_total() != stats.created || closes.calls() != stats.created,
        ),
        (
            "registry stats disagree",
            stats.terminated_total() != stats.created,
        ),
        (
            "an ended id reached a session",
            seen.stale_found.load(Ordering::Relaxed) != 0,
        ),
        (
            "unexpected HTTP statuses",
            seen.unexpected.load(Ordering::Relaxed) != 0,
        ),
        (
            "kept streams not ended cleanly by shutdown",
            seen.streams_ended.load(Ordering::Relaxed) != kept as u64,
        ),
    ])
}

//! Races between end paths and requests on the same session, over real
//! sockets, on a multi-threaded runtime: never a 5xx, never a warning or
//! error log, exactly one close per session, and its reason logged once.
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{Client, Server};
use serde_json::json;
use sessionreg::Reason;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;

const ITERATIONS: usize = 300;
const WAVE: usize = 20;

/// Warnings and errors logged by anything in this test binary.
static WARNINGS: AtomicUsize = AtomicUsize::new(0);

/// "session closed" log lines, by session id and reason.
static CLOSE_LOGS: Mutex<Option<HashMap<String, Vec<String>>>> = Mutex::new(None);

struct CountWarnings;

/// Reads the `message`, `session` and `reason` fields of an event.
#[derive(Default)]
struct Fields {
    message: String,
    session: String,
    reason: String,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "reason" {
            self.reason = value.to_string();
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "session" => self.session = format!("{value:?}"),
            _ => {}
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CountWarnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() <= tracing::Level::WARN {
            eprintln!("unexpected log: {event:?}");
            WARNINGS.fetch_add(1, Ordering::SeqCst);
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if fields.message == "session closed" {
            let mut logs = CLOSE_LOGS.lock().unwrap();
            logs.get_or_insert_with(HashMap::new)
                .entry(fields.session)
                .or_default()
                .push(fields.reason);
        }
    }
}

/// Each session the server closed has exactly one "session closed" line,
/// with the reason its close callback got.
fn assert_close_logged_once(server: &Server) {
    let logs = CLOSE_LOGS.lock().unwrap();
    let logs = logs.as_ref().expect("close lines were logged");
    for (id, reason) in server.closes.log.lock().unwrap().iter() {
        // Logged by the Debug form of the id (the Display form is secret).
        let lines = logs
            .get(&format!("{id:?}"))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        assert_eq!(lines, [reason.as_str()], "close log lines of {id}");
    }
}

fn count_warnings() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let subscriber = tracing_subscriber::registry().with(CountWarnings);
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
}

/// A cheap per-iteration pseudo-random number (no rand dependency needed).
fn jitter(i: usize, modulo: u64) -> u64 {
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x % modulo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn delete_racing_in_flight_requests_never_5xx() {
    count_warnings();
    // A node id of its own: the logs name sessions by the Debug form of
    // their ids (index, generation, node), which only the node tells apart
    // from another test's server running meanwhile.
    let server = Server::start_with(|b| b.node_id(1)).await;
    let client = Arc::new(Client::new(&server.url));
    let mut statuses = std::collections::HashMap::<u16, usize>::new();
    for i in 0..ITERATIONS {
        let id = client.initialize().await;
        let (c1, c2, c3) = (client.clone(), client.clone(), client.clone());
        let (id1, id2, id3) = (id.clone(), id.clone(), id.clone());
        let note = tokio::spawn(async move { c1.initialized(&id1).await.status });
        let call = tokio::spawn(async move {
            c2.call(&id2, "sleep", json!({ "ms": jitter(i, 3) }))
                .await
                .status
        });
        let delete = tokio::spawn(async move {
            for _ in 0..jitter(i * 7, 4) {
                tokio::task::yield_now().await;
            }
            c3.delete(&id3).await.status
        });
        let (note, call, delete) = (
            note.await.unwrap(),
            call.await.unwrap(),
            delete.await.unwrap(),
        );
        assert_eq!(delete, StatusCode::OK, "the only DELETE wins");
        assert!(
            matches!(note, StatusCode::ACCEPTED | StatusCode::NOT_FOUND),
            "notification: {note}"
        );
        assert!(
            matches!(call, StatusCode::OK | StatusCode::NOT_FOUND),
            "call: {call}"
        );
        for status in [note, call] {
            *statuses.entry(status.as_u16()).or_default() += 1;
        }
    }
    eprintln!("statuses seen: {statuses:?}");
    assert_eq!(server.live(), 0);
    assert_eq!(server.created(), ITERATIONS as u64);
    assert_eq!(server.closes.count(), ITERATIONS);
    assert_eq!(server.closes.count_reason(Reason::Deleted), ITERATIONS);
    server.closes.assert_each_once();
    assert_close_logged_once(&server);
    assert_eq!(
        WARNINGS.load(Ordering::SeqCst),
        0,
        "no warning or error was logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn delete_racing_idle_expiry_closes_once() {
    count_warnings();
    let timeout = Duration::from_millis(50);
    let server = Server::start_with(|b| {
        b.idle_timeout(Some(timeout))
            .reap_interval(Duration::from_millis(1))
            .node_id(2)
    })
    .await;
    let client = Arc::new(Client::new(&server.url));
    let mut deleted = 0;
    // In waves, so that request latency stays well under the timeout.
    for wave in 0..ITERATIONS / WAVE {
        let mut tasks = Vec::new();
        for i in wave * WAVE..(wave + 1) * WAVE {
            let client = client.clone();
            tasks.push(tokio::spawn(async move {
                let id = client.initialize().await;
                // Around the moment the reaper may take it.
                tokio::time::sleep(Duration::from_micros(jitter(i, 100_000))).await;
                let delete = client.delete(&id).await.status;
                assert!(
                    matches!(delete, StatusCode::OK | StatusCode::NOT_FOUND),
                    "delete: {delete}"
                );
                // A request after either: 404, never anything else.
                let call = client.call(&id, "echo", json!({})).await.status;
                assert_eq!(call, StatusCode::NOT_FOUND);
                delete == StatusCode::OK
            }));
        }
        for task in tasks {
            deleted += usize::from(task.await.unwrap());
        }
    }
    eprintln!("deleted {deleted}, idle {}", ITERATIONS - deleted);
    assert_eq!(server.live(), 0);
    assert_eq!(
        server.closes.count(),
        ITERATIONS,
        "exactly one close per session"
    );
    server.closes.assert_each_once();
    assert_eq!(server.closes.count_reason(Reason::Deleted), deleted);
    assert_eq!(
        server.closes.count_reason(Reason::IdleTimeout),
        ITERATIONS - deleted
    );
    assert_close_logged_once(&server);
    assert_eq!(
        WARNINGS.load(Ordering::SeqCst),
        0,
        "no warning or error was logged"
    );
}

/// Requests landing around the idle deadline: they complete or get 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_expiry_racing_requests_never_5xx() {
    count_warnings();
    let server = Server::start_with(|b| {
        b.idle_timeout(Some(Duration::from_millis(10)))
            .reap_interval(Duration::from_millis(1))
            .node_id(3)
    })
    .await;
    let client = Arc::new(Client::new(&server.url));
    let mut tasks = Vec::new();
    for i in 0..ITERATIONS {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let id = client.initialize().await;
            tokio::time::sleep(Duration::from_micros(5_000 + jitter(i, 10_000))).await;
            let call = client
                .call(&id, "sleep", json!({ "ms": jitter(i, 30) }))
                .await;
            assert!(
                matches!(call.status, StatusCode::OK | StatusCode::NOT_FOUND),
                "call: {}",
                call.status
            );
            if call.status == StatusCode::OK {
                // Started in time, so it ran to the end: never cancelled.
                assert_eq!(call.json()["result"]["slept"], jitter(i, 30));
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    // A session's end is counted (so `live` falls) before its close
    // callback runs: wait for both, or a reaper still in a callback reads as
    // a close lost.
    assert!(
        http_support::eventually(|| {
            server.live() == 0 && server.closes.count() as u64 == server.created()
        })
        .await,
        "live {}, closes {}, created {}",
        server.live(),
        server.closes.count(),
        server.created()
    );
    // A session may idle out between its insert and its initialize handler
    // (the timeout here is shorter than a scheduling delay); the client then
    // got a fresh one, so count against what was created.
    assert!(server.created() >= ITERATIONS as u64);
    assert_eq!(server.closes.count() as u64, server.created());
    server.closes.assert_each_once();
    assert_close_logged_once(&server);
    assert_eq!(
        WARNINGS.load(Ordering::SeqCst),
        0,
        "no warning or error was logged"
    );
}

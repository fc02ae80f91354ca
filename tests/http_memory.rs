//! What a session costs in memory, counted by a global allocator that
//! tracks the bytes live in the whole test process (server and client are
//! both in it; the client's buffers are let go between requests). Each test
//! measures a difference before and after a burst, with a bound on bytes,
//! never on time. The tests run on one thread (server and client alike):
//! a thread's first work allocates what it keeps for good (its counter
//! stripes, its secrets batch), which would be counted against whatever
//! ran when a task first moved to another worker.
#![cfg(feature = "http")]

mod http_support;

use http_support::{Client, Server};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator; the counting touches only an
// atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The tests of this file one at a time: the count is the whole process's.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Bytes live in the process now, once in-flight work has settled.
async fn live_bytes() -> isize {
    // Let connections close and tasks finish.
    tokio::time::sleep(Duration::from_millis(200)).await;
    LIVE.load(Ordering::Relaxed)
}

/// With the event log on, a session whose client
/// never opened a GET stream logged every notification of that stream (800
/// KiB a session here), and each of a session's streams had its own byte
/// bound (a session could keep 18 MiB). Now no log is kept for a stream
/// nobody opened, and a session's logs share one byte budget.
#[tokio::test]
async fn event_logs_are_bounded_per_session() {
    let _alone = ONE_AT_A_TIME.lock().await;
    const SESSIONS: usize = 8;
    let server = Server::start_with(|b| b.event_log_events(256)).await;
    let client = Client::new(&server.url);
    // What a session costs, from the growth between a first and a second
    // batch of sessions treated alike (one-time costs, such as a
    // registry page or a worker's first buffers, fall in the first).
    let per_session = |before: isize, after: isize| (after - before) / SESSIONS as isize;

    // Notifications to a standalone stream that nobody ever opened.
    let unopened = || async {
        let mut ids = Vec::new();
        for _ in 0..SESSIONS {
            let id = client.initialize().await;
            let note = client
                .call(&id, "notify", json!({ "n": 200, "bytes": 4096 }))
                .await;
            assert_eq!(note.json()["result"]["delivered"], 0);
            ids.push(id);
        }
        ids
    };
    let mut ids = unopened().await;
    let first = live_bytes().await;
    ids.extend(unopened().await);
    let cost = per_session(first, live_bytes().await);
    assert!(
        cost < 16 * 1024,
        "{cost} bytes per session for logs of streams nobody opened"
    );

    // Sessions that opened their GET stream once, then got notifications
    // and streamed replies: all their logs together stay within the
    // per-session budget (256 KiB by default), plus bookkeeping.
    let client = &client;
    let logged = |ids: Vec<String>| async move {
        for id in &ids {
            drop(client.open_stream(id, None).await);
            let _ = client
                .call(id, "notify", json!({ "n": 100, "bytes": 4096 }))
                .await;
            for _ in 0..16 {
                let _ = client
                    .call(id, "stream_pad", json!({ "n": 50, "bytes": 4096 }))
                    .await;
            }
        }
    };
    let second = ids.split_off(SESSIONS);
    logged(ids.clone()).await;
    let middle = live_bytes().await;
    logged(second.clone()).await;
    let cost = per_session(middle, live_bytes().await);
    assert!(cost < 320 * 1024, "{cost} bytes of event logs per session");
    // What the logs hold is what the gauge says.
    let gauge = server.http().event_log_bytes as isize;
    assert!(gauge <= 2 * SESSIONS as isize * 256 * 1024, "{gauge}");
    for id in ids.iter().chain(&second) {
        assert_eq!(client.delete(id).await.status, http::StatusCode::OK);
    }
    assert_eq!(server.http().event_log_bytes, 0);
}

/// A handler that asked to close its SSE connection
/// (`Context::close_sse_stream`) and then answered with JSON left an entry
/// behind, for as long as its session lived.
#[tokio::test]
async fn closing_a_stream_that_never_opened_keeps_nothing() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = Server::start_with(|b| b.event_log_events(16)).await;
    // Resumable streams are for clients at 2025-11-25 or later.
    let client = Client::new(&server.url).with_header("mcp-protocol-version", "2025-11-25");
    let id = client.initialize().await;
    for _ in 0..100 {
        let _ = client.call(&id, "close_then_json", json!({})).await;
    }
    let before = live_bytes().await;
    for _ in 0..5000 {
        let answer = client.call(&id, "close_then_json", json!({})).await;
        assert_eq!(answer.json()["result"]["closed"], true);
    }
    let kept = live_bytes().await - before;
    assert!(kept < 16 * 1024, "{kept} bytes kept by 5000 calls");
    assert_eq!(client.delete(&id).await.status, http::StatusCode::OK);
    drop(server);
}

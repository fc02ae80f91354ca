//! Soak: 100k sessions over real sockets through every end path, then
//! live 0 and exactly one close per create. Ignored by default; run in
//! release from `.ci/run`:
//!
//! ```text
//! cargo test --release --test http_soak -- --ignored
//! ```
//!
//! `SOAK_SESSIONS` overrides the count.
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{eventually, initialize_body, Client, Server};
use serde_json::json;
use sessionreg::Reason;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const CLIENTS: u64 = 64;
/// Open standalone streams each client keeps until shutdown, at most.
const KEPT_PER_CLIENT: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "soak: run in release from .ci/run"]
async fn soak_every_end_path() {
    let total: u64 = std::env::var("SOAK_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let mut server = Server::start_with(|b| {
        b.idle_timeout(Some(Duration::from_millis(200)))
            .capacity(50_000)
    })
    .await;
    let next = Arc::new(AtomicU64::new(0));
    let unexpected = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let (next, unexpected) = (next.clone(), unexpected.clone());
        let client = Client::new(&server.url);
        clients.push(tokio::spawn(async move {
            let mut kept = VecDeque::new();
            let check = |status: StatusCode, wanted: &[StatusCode]| {
                if !wanted.contains(&status) && unexpected.fetch_add(1, Ordering::Relaxed) < 5 {
                    eprintln!("unexpected {status}, wanted {wanted:?}");
                }
            };
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    return kept;
                }
                if n % 5 == 3 {
                    // Rejected first request: the session is created and ended.
                    let answer = client
                        .post(None, &initialize_body("reject-initialize"))
                        .await;
                    check(answer.status, &[StatusCode::BAD_REQUEST]);
                    continue;
                }
                let answer = client.post(None, &initialize_body("soak")).await;
                check(answer.status, &[StatusCode::OK]);
                let Some(id) = answer.session_id() else {
                    continue;
                };
                // Requests may find the session idled out on a loaded machine.
                let ok_or_gone = [StatusCode::ACCEPTED, StatusCode::NOT_FOUND];
                check(client.initialized(&id).await.status, &ok_or_gone);
                match n % 5 {
                    0 => {
                        let call = client.call(&id, "echo", json!({ "n": n })).await.status;
                        check(call, &[StatusCode::OK, StatusCode::NOT_FOUND]);
                        check(
                            client.delete(&id).await.status,
                            &[StatusCode::OK, StatusCode::NOT_FOUND],
                        );
                    }
                    1 => {
                        // Abandoned to the reaper.
                        let call = client.call(&id, "echo", json!({})).await.status;
                        check(call, &[StatusCode::OK, StatusCode::NOT_FOUND]);
                    }
                    2 => {
                        let call = client.call(&id, "fail", json!({})).await.status;
                        check(
                            call,
                            &[StatusCode::INTERNAL_SERVER_ERROR, StatusCode::NOT_FOUND],
                        );
                    }
                    _ => {
                        // Kept until shutdown by an open stream (in flight).
                        let stream = client.open_stream(&id, None).await;
                        check(stream.status(), &[StatusCode::OK, StatusCode::NOT_FOUND]);
                        if stream.status() == StatusCode::OK {
                            if kept.len() == KEPT_PER_CLIENT {
                                kept.pop_front();
                            }
                            kept.push_back(stream);
                        }
                    }
                }
            }
        }));
    }
    let mut streams = Vec::new();
    for client in clients {
        streams.extend(client.await.unwrap());
    }
    assert!(eventually(|| server.live() == streams.len() as u64).await);
    let report = server.shutdown().await;
    assert!(report.drained);
    drop(streams);

    let stats = server.manager.stats();
    eprintln!(
        "soak: created {}, deleted {}, idle {}, failed {}, rejected {}, shutdown {}",
        stats.created,
        stats.terminated(Reason::Deleted),
        stats.terminated(Reason::IdleTimeout),
        stats.terminated(Reason::Failed),
        stats.terminated(Reason::Rejected),
        stats.terminated(Reason::Shutdown),
    );
    assert_eq!(unexpected.load(Ordering::Relaxed), 0);
    assert_eq!(stats.live, 0);
    assert_eq!(server.manager.registry().len(), 0);
    assert!(stats.created >= total * 4 / 5);
    assert_eq!(stats.terminated_total(), stats.created);
    assert_eq!(
        server.closes.count() as u64,
        stats.created,
        "close callbacks == creates"
    );
    server.closes.assert_each_once();
    // Every way a session ends (the rest of `Reason::ALL` ends listen
    // streams, not sessions).
    for reason in Reason::SESSION {
        assert!(stats.terminated(reason) > 0, "no session ended by {reason}");
    }
}

//! DELETE racing requests in flight on the same session, over real sockets,
//! at many offsets: never a 5xx, exactly one close per session (the
//! DELETE's), nothing live at the end.

mod support;

use http::StatusCode;
use mcp_test_client::Reply;
use serde_json::json;
use sessionreg::Reason;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{eventually, text_of, Client, Server};

const ITERATIONS: u64 = 120;

/// Opens a session, calls `sleep` in it and `DELETE`s it meanwhile: the
/// call sleeps 0..=9 ms and leaves after 0..=3 ms, the DELETE leaves after
/// 0..=12 ms (by `i`), so it lands before the call reaches the manager,
/// while the handler runs, or after the answer. The DELETE's reply and the
/// call's.
async fn delete_during_a_call(client: &Client, i: u64) -> (Reply, Reply) {
    let id = client.open().await;
    let call = {
        let (client, id) = (client.clone(), id.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(i % 4)).await;
            client.call(&id, "sleep", json!({ "ms": i % 10 })).await
        })
    };
    tokio::time::sleep(Duration::from_millis(i % 13)).await;
    let delete = client.delete(&id).await;
    // A bound on waiting, not on time: a call whose stream never opens or
    // never ends fails here, with its iteration, instead of hanging.
    let call = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .unwrap_or_else(|_| panic!("{i}: the call of {id} never ended ({delete:?})"))
        .unwrap();
    (delete, call)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_racing_an_in_flight_call() {
    let server = Server::start(|b| b.idle_timeout(Duration::from_secs(60))).await;
    let client = server.client();
    let (mut answered, mut cut, mut not_found) = (0, 0, 0);
    for i in 0..ITERATIONS {
        let (delete, call) = delete_during_a_call(&client, i).await;
        assert_eq!(delete.status, StatusCode::ACCEPTED, "{delete:?}");
        match call.status {
            StatusCode::OK => match call.answer() {
                Some(answer) => {
                    assert!(text_of(&answer).is_some(), "{answer}");
                    answered += 1;
                }
                // The session ended while the handler ran: the stream ends
                // without an answer, as the client asked.
                None => cut += 1,
            },
            // The session ended before the call reached it.
            StatusCode::NOT_FOUND => not_found += 1,
            other => panic!("iteration {i}: the call got {other}: {call:?}"),
        }
    }
    println!("answered {answered}, cut {cut}, not found {not_found}");
    assert!(eventually(|| server.live() == 0).await);
    // rmcp calls close_session again after each worker exits: give those
    // calls time to happen, then count.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let closes = server.closes.each_once();
    assert_eq!(closes.len(), ITERATIONS as usize);
    assert!(closes.values().all(|r| *r == Reason::Deleted), "{closes:?}");
    assert_eq!(server.manager.stats().terminated_total(), ITERATIONS);
    server.stop().await;
}

/// The same race as [`delete_racing_an_in_flight_call`], in six lanes on
/// one server with both cores kept busy (two spinning threads), which the
/// plain test is not enough to shake out: without the bound of b81307d
/// (`Entry::ask`) a call's stream never opened in 3 of 12 runs (RELIABILITY.md,
/// sessionreg-rmcp). About 5 s, spinning both cores: ignored by
/// `cargo test`, run by `.ci/run` in a step of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a stress of about 5 s: cargo test -p sessionreg-rmcp --test race -- --ignored"]
async fn delete_racing_calls_on_busy_cores() {
    const LANES: u64 = 6;
    const SESSIONS: u64 = 360;
    let server = Server::start(|b| b.idle_timeout(Duration::from_secs(60))).await;
    let spinning = Arc::new(AtomicBool::new(true));
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let spinning = spinning.clone();
            std::thread::spawn(move || {
                while spinning.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let lanes: Vec<_> = (0..LANES)
        .map(|lane| {
            let client = server.client();
            tokio::spawn(async move {
                for i in (0..SESSIONS).map(|i| i + lane * 7) {
                    let (delete, call) = delete_during_a_call(&client, i).await;
                    assert_eq!(delete.status, StatusCode::ACCEPTED, "{delete:?}");
                    assert!(
                        matches!(call.status, StatusCode::OK | StatusCode::NOT_FOUND),
                        "lane {lane}, {i}: {call:?}"
                    );
                }
            })
        })
        .collect();
    let mut failed = None;
    for lane in lanes {
        if let Err(e) = lane.await {
            failed.get_or_insert(e);
        }
    }
    spinning.store(false, Ordering::Relaxed);
    for spinner in spinners {
        spinner.join().unwrap();
    }
    if let Some(e) = failed {
        std::panic::resume_unwind(e.into_panic());
    }
    assert!(eventually(|| server.live() == 0).await);
    assert_eq!(server.manager.stats().terminated_total(), LANES * SESSIONS);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_deletes_one_close() {
    let server = Server::start(|b| b).await;
    let client = server.client();
    for _ in 0..50 {
        let id = client.open().await;
        let (a, b) = tokio::join!(client.delete(&id), client.delete(&id));
        let mut statuses = [a.status, b.status];
        statuses.sort();
        assert_eq!(statuses, [StatusCode::ACCEPTED, StatusCode::NOT_FOUND]);
    }
    assert_eq!(server.live(), 0);
    assert_eq!(server.closes.each_once().len(), 50);
    server.stop().await;
}

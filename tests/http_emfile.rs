//! The accept loop out of file descriptors (EMFILE): it pauses (never
//! spins), serves on as soon as descriptors are free again, and nothing is
//! lost meanwhile: a connection waiting in the backlog is accepted and
//! served once it can be. A binary of its own: it lowers this process's
//! descriptor limit.
#![cfg(all(feature = "http", target_os = "linux"))]

mod http_support;

use http::StatusCode;
use http_support::{initialize_body, Client, Server, ACCEPT_BOTH};
use std::fs::File;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

fn set_soft_limit(limit: u64) -> u64 {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `current` is a valid rlimit for the call to fill.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut current) },
        0
    );
    let before = current.rlim_cur;
    let wanted = libc::rlimit {
        rlim_cur: limit.min(current.rlim_max),
        rlim_max: current.rlim_max,
    };
    // SAFETY: `wanted` is a valid rlimit; lowering (or restoring) the soft
    // limit below the hard one is always allowed.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) }, 0);
    before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_the_accept_loop_pauses_and_recovers() {
    let mut server = Server::start().await;
    let was = set_soft_limit(open_descriptors() + 64);
    // Every descriptor taken...
    let mut dummies = Vec::new();
    while let Ok(file) = File::open("/dev/null") {
        dummies.push(file);
        assert!(dummies.len() < 10_000, "the limit did not hold");
    }
    // ...but one, which this client's socket takes: the server has none
    // left to accept it with.
    dummies.pop();
    let at_limit = Instant::now();
    let mut waiting = TcpStream::connect(server.addr).await.unwrap();
    let body = initialize_body("patient").to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: {ACCEPT_BOTH}\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    waiting.write_all(request.as_bytes()).await.unwrap();
    // The accept loop fails for a while (no assertion on how long).
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Descriptors again: the waiting connection is accepted and served.
    dummies.truncate(dummies.len().saturating_sub(32));
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), waiting.read_to_end(&mut response))
        .await
        .expect("the waiting connection was served")
        .unwrap();
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("mcp-session-id"),
        "{text}"
    );
    drop(dummies);
    set_soft_limit(was);
    // And new clients as usual.
    let client = Client::new(&server.url);
    let id = client.initialize().await;
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    drop(client);
    let report = server.shutdown().await;
    let elapsed = at_limit.elapsed();
    // It did run out, and it paused: each failure pauses the loop at least
    // 10 ms, so a spinning loop would count millions here, a pausing one
    // at most one per 10 ms.
    assert!(report.accept_errors >= 1, "{report:?}");
    let most = elapsed.as_millis() as u64 / 10 + 1;
    assert!(report.accept_errors <= most, "{report:?} in {elapsed:?}");
}

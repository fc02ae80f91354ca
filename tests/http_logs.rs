//! Session ids grant access: no log line, at any level, may carry one
//! whole. This binary captures everything the layer logs at TRACE (events
//! and the fields of the spans they are in, the requests' `mcp.server`
//! spans among them) while sessions go through every
//! path that logs (initialize, requests, streams, a failing and a panicking
//! handler, DELETE, idle expiry, shutdown), then looks for every id it
//! minted in every form it could be written in.
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{eventually, Client, Server};
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing_subscriber::fmt::MakeWriter;

/// Everything logged, as the `fmt` layer writes it.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_log_line_carries_a_whole_session_id() {
    let captured = Captured::default();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .with_ansi(false)
        .init();

    let mut server = Server::start_with(|b| {
        b.idle_timeout(Some(Duration::from_secs(1)))
            .event_log_events(8)
            .stream_queue(2, 1024)
    })
    .await;
    let client = Client::new(&server.url);
    let mut ids = Vec::new();

    // A session through requests, a stream with notifications (some
    // dropped: the queue is tiny), then a failing handler.
    let id = client.initialize().await;
    ids.push(id.clone());
    assert_eq!(client.initialized(&id).await.status, StatusCode::ACCEPTED);
    let stream = client.open_stream(&id, None).await;
    assert_eq!(
        client.call(&id, "notify", json!({ "n": 10 })).await.status,
        StatusCode::OK
    );
    assert_eq!(
        client.call(&id, "stream", json!({})).await.status,
        StatusCode::OK
    );
    let failed = client.call(&id, "fail", json!({})).await;
    assert_eq!(failed.status, StatusCode::INTERNAL_SERVER_ERROR);
    drop(stream);

    // A panicking handler.
    let id = client.initialize().await;
    ids.push(id.clone());
    let panicked = client.call(&id, "panic", json!({})).await;
    assert_eq!(panicked.status, StatusCode::INTERNAL_SERVER_ERROR);

    // DELETE, twice; and requests with the ended id.
    let id = client.initialize().await;
    ids.push(id.clone());
    assert_eq!(client.delete(&id).await.status, StatusCode::OK);
    assert_eq!(client.delete(&id).await.status, StatusCode::NOT_FOUND);
    let gone = client.call(&id, "echo", json!({})).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);

    // Idle expiry, found by the reaper.
    let id = client.initialize().await;
    ids.push(id.clone());
    assert!(eventually(|| server.live() == 0).await);

    // Shutdown ends the last one.
    let id = client.initialize().await;
    ids.push(id.clone());
    drop(client);
    let report = server.shutdown().await;
    assert_eq!(report.sessions_ended, 1);

    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    // The sessions were logged (by the Debug form), so the check below
    // looked at lines that name them.
    assert!(
        text.contains("SessionId { index:"),
        "no session was logged at all:\n{text}"
    );
    assert!(text.contains("handler failed"), "{text}");
    // The requests' SERVER spans were on the lines checked, with their
    // fields: a session is named there by its public part only.
    assert!(
        text.contains("mcp.server{"),
        "no request span was logged:\n{text}"
    );
    assert!(text.contains("mcp.session.id="), "{text}");
    for id in &ids {
        let parsed: sessionreg::SessionId = id.parse().unwrap();
        for form in [
            id.to_lowercase(),
            id.to_uppercase(),
            id.trim_start_matches('0').to_owned(),
            format!("{:?}", parsed.to_bytes()),
        ] {
            assert!(
                !text.contains(&form),
                "a whole session id ({form}) was logged:\n{}",
                text.lines().find(|l| l.contains(&form)).unwrap()
            );
        }
    }
}

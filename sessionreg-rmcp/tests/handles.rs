//! rmcp's session handles, as `LocalSessionManager::sessions` gives them:
//! every live session listed, one found by the id its client sends, and the
//! handle's SEP-1699 calls (a server-initiated close of an SSE stream, with
//! a retry hint for the client's reconnection).

mod support;

use http::StatusCode;
use sessionreg_rmcp::RegistrySessionManager;
use std::collections::BTreeSet;
use std::time::Duration;
use support::{read_sse, sse_ids, Server};

#[tokio::test]
async fn the_live_sessions_are_listed_and_found_by_their_ids() {
    let server = Server::start(|b| b).await;
    let client = server.client();
    let mut ids = BTreeSet::new();
    for _ in 0..3 {
        ids.insert(client.open().await);
    }
    let listed = |manager: &RegistrySessionManager| -> BTreeSet<String> {
        manager
            .sessions()
            .iter()
            .map(|handle| handle.id().to_string())
            .collect()
    };
    assert_eq!(listed(&server.manager), ids);

    let gone = ids.pop_first().unwrap();
    assert_eq!(client.delete(&gone).await.status, StatusCode::ACCEPTED);
    assert_eq!(listed(&server.manager), ids);
    assert!(server.manager.session(&gone).is_none());
    for id in &ids {
        let handle = server.manager.session(id).expect("a live session");
        assert_eq!(&**handle.id(), id.as_str());
    }
    assert!(server.manager.session("not an id").is_none());
    server.stop().await;
}

/// SEP-1699: the server ends a session's standalone GET stream, first
/// telling the client when to come back; the session lives on.
#[tokio::test]
async fn the_standalone_stream_is_closed_with_a_retry_hint() {
    let server = Server::start(|b| b).await;
    let client = server.client();
    let id = client.open().await;
    let mut stream = client.open_stream(&id, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    // rmcp opens it with a priming event; then nothing comes.
    let (text, ended) = read_sse(stream.body_mut(), Duration::from_secs(20), |t| {
        !sse_ids(t).is_empty()
    })
    .await;
    assert!(!ended, "{text}");

    let handle = server.manager.session(&id).expect("live");
    handle
        .close_standalone_sse_stream(Some(Duration::from_secs(5)))
        .await
        .expect("closed");
    let (rest, ended) = read_sse(stream.body_mut(), Duration::from_secs(20), |_| false).await;
    assert!(ended, "the server ended the stream: {rest}");
    let hints: Vec<_> = sse_ids(&rest).into_iter().map(|(_, retry)| retry).collect();
    assert_eq!(hints, [Some(5000)], "{rest}");
    assert_eq!(server.live(), 1, "the session lives on");
    let again = client.open_stream(&id, None).await;
    assert_eq!(again.status(), StatusCode::OK);
    server.stop().await;
}

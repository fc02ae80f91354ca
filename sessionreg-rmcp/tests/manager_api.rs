//! The manager driven through rmcp's `SessionManager` trait directly, as
//! rmcp's tower service drives it: the interleavings a socket test cannot
//! aim at (a session ending between rmcp's `has_session` and its next call),
//! malformed ids, restores, and the manager's drop.

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Empty};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::RestoreOutcome;
use rmcp::transport::streamable_http_server::SessionManager;
use serde_json::json;
use sessionreg::{Miss, Reason, SessionId};
use sessionreg_rmcp::{Error, RegistrySessionManager, StatusLayer};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tower_layer::Layer;
use tower_service::Service;

fn ping() -> ClientJsonRpcMessage {
    serde_json::from_value(json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" })).unwrap()
}

fn note() -> ClientJsonRpcMessage {
    serde_json::from_value(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .unwrap()
}

type Closes = Arc<Mutex<Vec<(SessionId, Reason)>>>;

fn manager() -> (RegistrySessionManager, Closes) {
    let closes = Closes::default();
    let log = closes.clone();
    let manager = RegistrySessionManager::builder()
        .on_close(move |id, reason| log.lock().unwrap().push((*id, reason)))
        .build()
        .unwrap();
    (manager, closes)
}

#[tokio::test]
async fn a_session_that_ended_after_has_session_is_an_error_without_the_layer() {
    let (manager, closes) = manager();
    let (id, transport) = manager.create_session().await.unwrap();
    assert!(manager.has_session(&id).await.unwrap());
    // A DELETE wins between rmcp's check and its next call.
    manager.close_session(&id).await.unwrap();
    assert!(matches!(
        manager.create_stream(&id, ping()).await,
        Err(Error::SessionNotFound)
    ));
    assert!(matches!(
        manager.accept_message(&id, note()).await,
        Err(Error::SessionNotFound)
    ));
    assert!(matches!(
        manager.create_standalone_stream(&id).await,
        Err(Error::SessionNotFound)
    ));
    // rmcp's own second close_session, and the transport's end, change
    // nothing: one close, `deleted`.
    manager.close_session(&id).await.unwrap();
    drop(transport);
    assert_eq!(
        closes
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.1)
            .collect::<Vec<_>>(),
        [Reason::Deleted]
    );
}

/// Stands in for rmcp's tower service: calls the manager the way rmcp's
/// POST handler does after `has_session`, and answers as rmcp would (200 for
/// a stream, 500 for an error).
#[derive(Clone)]
struct LikeRmcp {
    manager: Arc<RegistrySessionManager>,
    id: Arc<str>,
}

impl Service<Request<()>> for LikeRmcp {
    type Response = Response<Empty<Bytes>>;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Empty<Bytes>>, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        let (manager, id) = (self.manager.clone(), self.id.clone());
        Box::pin(async move {
            let status = match manager.create_stream(&id, ping()).await {
                Ok(_) => StatusCode::OK,
                Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            let mut response = Response::new(Empty::new());
            *response.status_mut() = status;
            Ok(response)
        })
    }
}

#[tokio::test]
async fn behind_the_status_layer_it_is_a_404() {
    let (manager, _) = manager();
    let manager = Arc::new(manager);
    let (id, _transport) = manager.create_session().await.unwrap();
    manager.close_session(&id).await.unwrap();
    let mut service = StatusLayer::new().layer(LikeRmcp {
        manager: manager.clone(),
        id,
    });
    let response = service.call(Request::new(())).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["error"]["code"], -32001);
}

#[tokio::test]
async fn malformed_and_foreign_ids_are_unknown_and_counted() {
    let (manager, closes) = manager();
    for text in ["", "not-an-id", "0123456789ABCDEF0123456789ABCDEF", "00"] {
        let id: Arc<str> = text.into();
        assert!(!manager.has_session(&id).await.unwrap(), "{text:?}");
        manager.close_session(&id).await.unwrap();
    }
    // Well-formed, another node's.
    let foreign: Arc<str> = "ff0000000000000000c539bfd1175f2e0000000000000000".into();
    assert!(!manager.has_session(&foreign).await.unwrap());
    let stats = manager.stats();
    assert_eq!(stats.misses(Miss::Malformed), 8);
    assert_eq!(stats.misses(Miss::Unknown), 1);
    assert_eq!(stats.created, 0);
    assert!(closes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn dropping_the_manager_ends_what_is_live_as_shutdown() {
    let (manager, closes) = manager();
    let mut transports = Vec::new();
    for _ in 0..3 {
        transports.push(manager.create_session().await.unwrap().1);
    }
    assert_eq!(manager.len(), 3);
    drop(manager);
    let reasons: Vec<Reason> = closes.lock().unwrap().iter().map(|c| c.1).collect();
    assert_eq!(reasons, [Reason::Shutdown; 3]);
    // The transports' ends find their sessions over: no second close.
    drop(transports);
    assert_eq!(closes.lock().unwrap().len(), 3);
}

/// `restore_session` as rmcp calls it: a fresh entry (this node's prefix,
/// not the client's id) that the client's id leads to until it ends; a
/// second restore of a live one is `AlreadyPresent`; once it ends the id
/// leads nowhere and can be restored again.
#[tokio::test]
async fn a_restored_session_is_a_fresh_entry_under_its_clients_id() {
    let closes = Closes::default();
    let log = closes.clone();
    let manager = RegistrySessionManager::builder()
        .node_id(0x2a)
        .on_close(move |id, reason| log.lock().unwrap().push((*id, reason)))
        .build()
        .unwrap();
    let theirs: Arc<str> = "0b0000000000000000c539bfd1175f2e0000000000000000".into();
    assert!(!manager.has_session(&theirs).await.unwrap());
    let RestoreOutcome::Restored(transport) =
        manager.restore_session(theirs.clone()).await.unwrap()
    else {
        panic!("not restored");
    };
    assert!(manager.has_session(&theirs).await.unwrap());
    assert_eq!(&**manager.session(&theirs).unwrap().id(), &*theirs);
    assert!(matches!(
        manager.restore_session(theirs.clone()).await.unwrap(),
        RestoreOutcome::AlreadyPresent
    ));
    assert_eq!(manager.stats().created, 1);

    manager.close_session(&theirs).await.unwrap();
    assert!(!manager.has_session(&theirs).await.unwrap());
    let ended: Vec<_> = closes.lock().unwrap().clone();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].1, Reason::Deleted);
    assert_eq!(ended[0].0.node(), 0x2a, "the restoring node's entry");
    assert_ne!(ended[0].0.to_string(), *theirs);
    drop(transport);
    assert!(matches!(
        manager.restore_session(theirs.clone()).await.unwrap(),
        RestoreOutcome::Restored(_)
    ));
    assert_eq!(manager.stats().created, 2);
}

#[tokio::test]
async fn no_restore_while_shutting_down_or_at_capacity() {
    let manager = RegistrySessionManager::builder()
        .capacity(1)
        .build()
        .unwrap();
    let (_id, _transport) = manager.create_session().await.unwrap();
    let theirs: Arc<str> = "client-held id".into();
    assert!(matches!(
        manager.restore_session(theirs.clone()).await,
        Err(Error::AtCapacity { capacity: 1 })
    ));
    assert!(!manager.has_session(&theirs).await.unwrap());
    manager.shutdown();
    assert!(matches!(
        manager.restore_session(theirs.clone()).await,
        Err(Error::ShuttingDown)
    ));
    assert!(!manager.has_session(&theirs).await.unwrap());
    assert!(manager.sessions().is_empty());
}

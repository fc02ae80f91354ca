//! Requests a legacy session's server sends its client (sampling,
//! elicitation, roots: MCP up to 2025-11-25), and the client's answers:
//! [`Context::ask`](crate::http::Context::ask) puts a request with an id of the
//! session's own on the handler's SSE reply, and the answer, which the
//! client `POST`s as a JSON-RPC response, is handed back to the handler
//! here, by id, without going through the application.
//!
//! A session has at most [`MAX_PENDING`] unanswered requests; one whose
//! asker has gone (the handler stopped) is forgotten.

use crate::http::wire::jsonrpc::{self, RpcError};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use tokio::sync::oneshot;

/// Unanswered requests a session may have at most.
pub(crate) const MAX_PENDING: usize = 64;

type Answer = Result<Value, RpcError>;

#[derive(Debug, Default)]
struct Pending {
    next: u64,
    closed: bool,
    waiting: HashMap<Box<str>, oneshot::Sender<Answer>>,
}

/// The unanswered requests of one session (kept in its entry).
#[derive(Debug, Default, Clone)]
pub(crate) struct Asks {
    pending: Arc<Mutex<Pending>>,
}

impl Asks {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // Consistent whatever a holder did (no calls out).
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request to the client: its message, and its answer to come.
    pub(crate) fn ask(&self, method: &str, params: Value) -> Result<ClientRequest, RpcError> {
        let mut pending = self.lock();
        if pending.closed {
            return Err(RpcError::new(
                jsonrpc::RpcError::INTERNAL_ERROR,
                "the session has ended",
            ));
        }
        if pending.waiting.len() >= MAX_PENDING {
            return Err(RpcError::new(
                jsonrpc::RpcError::INTERNAL_ERROR,
                "too many requests to the client unanswered",
            ));
        }
        pending.next += 1;
        // A string id, so that it cannot collide with the client's own
        // numeric ones in anyone's logs.
        let id = json!(format!("server-{}", pending.next));
        let key = jsonrpc::id_key(&id);
        let (tx, rx) = oneshot::channel();
        pending.waiting.insert(key.clone(), tx);
        Ok(ClientRequest {
            message: json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
            answer: ClientAnswer {
                rx,
                key,
                asks: self.clone(),
            },
        })
    }

    /// Forgets every unanswered request: their askers get an error (the
    /// session has ended), and a late answer reaches no one.
    pub(crate) fn close(&self) {
        let mut pending = self.lock();
        pending.closed = true;
        pending.waiting.clear();
    }

    /// A response from the client: whether it answered one of this
    /// session's requests (which then gets it).
    pub(crate) fn answer(&self, response: &jsonrpc::Response) -> bool {
        let key = jsonrpc::id_key(&response.id);
        let Some(tx) = self.lock().waiting.remove(&key) else {
            return false;
        };
        let answer = match &response.outcome {
            Ok(result) => serde_json::from_str(result.get())
                .map_err(|e| RpcError::new(jsonrpc::RpcError::PARSE_ERROR, e.to_string())),
            Err(error) => Err(serde_json::from_str::<Value>(error.get())
                .ok()
                .map(|e| {
                    let mut error = RpcError::new(
                        e["code"]
                            .as_i64()
                            .unwrap_or(jsonrpc::RpcError::INTERNAL_ERROR),
                        e["message"].as_str().unwrap_or("the client refused"),
                    );
                    error.data = e.get("data").cloned();
                    error
                })
                .unwrap_or_else(|| {
                    RpcError::new(jsonrpc::RpcError::INTERNAL_ERROR, "the client refused")
                })),
        };
        let _ = tx.send(answer);
        true
    }
}

/// A request to the client: put [`message`](ClientRequest::message) on the
/// SSE reply, then await [`answer`](ClientRequest::answer).
#[derive(Debug)]
pub struct ClientRequest {
    /// The JSON-RPC request to send, with an id of the session's own.
    pub message: Value,
    /// The client's answer: its result, or its error (or an error if the
    /// session ends first).
    pub answer: ClientAnswer,
}

/// The client's answer to a [`ClientRequest`]; dropping it forgets the
/// request.
#[derive(Debug)]
pub struct ClientAnswer {
    rx: oneshot::Receiver<Answer>,
    key: Box<str>,
    asks: Asks,
}

impl Future for ClientAnswer {
    type Output = Result<Value, RpcError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(|answer| {
            answer.unwrap_or_else(|_| {
                Err(RpcError::new(
                    jsonrpc::RpcError::INTERNAL_ERROR,
                    "the session ended unanswered",
                ))
            })
        })
    }
}

impl Drop for ClientAnswer {
    fn drop(&mut self) {
        self.asks.lock().waiting.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::wire::jsonrpc::Message;

    fn response(body: &str) -> jsonrpc::Response {
        match Message::from_slice(body.as_bytes()).unwrap() {
            Message::Response(response) => response,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn answers_reach_their_asker_by_id() {
        let asks = Asks::default();
        let first = asks.ask("sampling/createMessage", json!({})).unwrap();
        let second = asks.ask("elicitation/create", json!({})).unwrap();
        assert_eq!(first.message["id"], "server-1");
        assert!(!asks.answer(&response(r#"{"jsonrpc":"2.0","id":"other","result":{}}"#)));
        assert!(asks.answer(&response(
            r#"{"jsonrpc":"2.0","id":"server-2","error":{"code":-1,"message":"no"}}"#
        )));
        assert!(asks.answer(&response(
            r#"{"jsonrpc":"2.0","id":"server-1","result":{"x":1}}"#
        )));
        assert_eq!(first.answer.await.unwrap()["x"], 1);
        assert_eq!(second.answer.await.unwrap_err().code, -1);
        // Answered once only.
        assert!(!asks.answer(&response(
            r#"{"jsonrpc":"2.0","id":"server-1","result":{}}"#
        )));
    }

    #[test]
    fn a_dropped_asker_is_forgotten_and_the_pending_are_bounded() {
        let asks = Asks::default();
        drop(asks.ask("roots/list", json!({})).unwrap());
        assert!(asks.lock().waiting.is_empty());
        let held: Vec<_> = (0..MAX_PENDING)
            .map(|_| asks.ask("roots/list", json!({})).unwrap())
            .collect();
        assert!(asks.ask("roots/list", json!({})).is_err());
        drop(held);
        assert!(asks.ask("roots/list", json!({})).is_ok());
    }

    #[tokio::test]
    async fn closing_answers_the_askers_and_refuses_new_asks() {
        let asks = Asks::default();
        let pending = asks.ask("roots/list", json!({})).unwrap();
        asks.close();
        assert!(pending.answer.await.is_err());
        assert!(asks.ask("roots/list", json!({})).is_err());
        assert!(!asks.answer(&response(
            r#"{"jsonrpc":"2.0","id":"server-1","result":{}}"#
        )));
    }
}

//! One message handed to an rmcp service and what it answers: a
//! [`Transport`] that yields the one client message, carries out whatever
//! the service sends, and closes once the request is answered (at once,
//! for a notification, which has no answer).

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::{mpsc, Notify};

/// How many of the service's messages wait for the layer to take them
/// before the service's next send waits (progress, logging, the answer).
const QUEUED_MESSAGES: usize = 16;

/// The transport side of one exchange: the message, the way out, and the
/// signal that the request was answered.
pub(crate) struct Exchange {
    message: Option<ClientJsonRpcMessage>,
    /// A request waits for its answer before the transport closes; a
    /// notification does not.
    awaits_answer: bool,
    out: mpsc::Sender<ServerJsonRpcMessage>,
    answered: Arc<Notify>,
}

/// The layer's side: what the service sends, in order.
pub(crate) type Replies = mpsc::Receiver<ServerJsonRpcMessage>;

impl Exchange {
    /// An exchange for `message`, and the receiver of what the service sends.
    pub(crate) fn new(message: ClientJsonRpcMessage) -> (Exchange, Replies) {
        let awaits_answer = matches!(message, ClientJsonRpcMessage::Request(_));
        let (out, replies) = mpsc::channel(QUEUED_MESSAGES);
        let exchange = Exchange {
            message: Some(message),
            awaits_answer,
            out,
            answered: Arc::new(Notify::new()),
        };
        (exchange, replies)
    }
}

/// Whether `message` ends the exchange (the answer to the request).
pub(crate) fn is_answer(message: &ServerJsonRpcMessage) -> bool {
    matches!(
        message,
        ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_)
    )
}

impl Transport<RoleServer> for Exchange {
    type Error = mpsc::error::SendError<ServerJsonRpcMessage>;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let answered = Arc::clone(&self.answered);
        async move {
            let answer = is_answer(&item);
            let sent = out.send(item).await;
            if answer {
                // notify_one keeps a permit: a receive that starts after
                // this still sees it.
                answered.notify_one();
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        if let Some(message) = self.message.take() {
            return Some(message);
        }
        if self.awaits_answer {
            self.answered.notified().await;
        }
        None
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.message = None;
        Ok(())
    }
}

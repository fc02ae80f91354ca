//! One message handed to an rmcp service and what it answers: a
//! [`Transport`] that yields the one client message, carries out whatever
//! the service sends, and closes once the request is answered (at once,
//! for a notification, which has no answer). What the handler publishes
//! (list changes, a resource's updates) goes to the layer's [`Publisher`]
//! instead, which reaches the listeners that asked for it (a resource's
//! updates only those of the request's principal): legacy `GET` streams,
//! 2026-07-28 listen streams, and the fleet through the bus.

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use sessionreg::http::{Audience, Publisher};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::{mpsc, Notify};

/// How many of the service's messages wait for the layer to take them
/// before the service's next send waits (progress, logging, the answer).
const QUEUED_MESSAGES: usize = 16;

/// How many of the client's answers may wait for the loop: as many
/// requests as a session may have pending with the client.
const PENDING_ASKS: usize = 64;

/// The transport side of one exchange: the message, the way out, and the
/// signal that the request was answered.
pub(crate) struct Exchange {
    message: Option<ClientJsonRpcMessage>,
    /// A request waits for its answer before the transport closes; a
    /// notification does not.
    awaits_answer: bool,
    out: mpsc::Sender<ServerJsonRpcMessage>,
    answered: Arc<Notify>,
    publisher: Publisher,
    /// Who hears a resource's update the handler sends.
    audience: Audience,
    /// The client's answers to the requests the handler sent (legacy
    /// sessions: sampling, elicitation, roots), handed back to the loop.
    answers: mpsc::Receiver<ClientJsonRpcMessage>,
}

/// Where the client's answers to the handler's requests go in.
pub(crate) type Answers = mpsc::Sender<ClientJsonRpcMessage>;

/// The layer's side: what the service sends, in order.
pub(crate) type Replies = mpsc::Receiver<ServerJsonRpcMessage>;

impl Exchange {
    /// An exchange for `message`, and the receiver of what the service
    /// sends; its publications go to `publisher`, a resource's update to
    /// `audience`.
    pub(crate) fn new(
        message: ClientJsonRpcMessage,
        publisher: Publisher,
        audience: Audience,
    ) -> (Exchange, Replies, Answers) {
        let awaits_answer = matches!(message, ClientJsonRpcMessage::Request(_));
        let (out, replies) = mpsc::channel(QUEUED_MESSAGES);
        // As many as a session may have pending (the layer's bound).
        let (answer, answers) = mpsc::channel(PENDING_ASKS);
        let exchange = Exchange {
            message: Some(message),
            awaits_answer,
            out,
            answered: Arc::new(Notify::new()),
            publisher,
            audience,
            answers,
        };
        (exchange, replies, answer)
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
        let published = publish(&self.publisher, &self.audience, &item);
        async move {
            if published {
                return Ok(());
            }
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
        if !self.awaits_answer {
            return None;
        }
        tokio::select! {
            () = self.answered.notified() => None,
            answer = self.answers.recv() => match answer {
                Some(answer) => Some(answer),
                // Nobody can answer any more: wait for the end.
                None => {
                    self.answered.notified().await;
                    None
                }
            },
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.message = None;
        Ok(())
    }
}

/// Publishes `item` if it is a change listeners may hear of, to those that
/// asked for it; whether it did. A list's change goes to everyone (the
/// lists are the server's); a resource's update to `audience`: the
/// principal of the request whose handler sent it (rmcp sends it on that
/// client's session only; here every listener of that principal hears
/// it), or everyone on a server without authentication.
fn publish(publisher: &Publisher, audience: &Audience, item: &ServerJsonRpcMessage) -> bool {
    let ServerJsonRpcMessage::Notification(note) = item else {
        return false;
    };
    match &note.notification {
        ServerNotification::ToolListChangedNotification(_) => publisher.tools_changed(),
        ServerNotification::PromptListChangedNotification(_) => publisher.prompts_changed(),
        ServerNotification::ResourceListChangedNotification(_) => publisher.resources_changed(),
        ServerNotification::ResourceUpdatedNotification(updated) => {
            publisher.resource_updated(updated.params.uri.clone(), audience.clone())
        }
        _ => return false,
    }
    true
}

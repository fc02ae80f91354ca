//! What both eras do first with a `POST`: read its one JSON-RPC message
//! (`wire/message.rs`: headers, body, parse), then admit a handler for it
//! (`admission.rs`), before the era looks at what it says.

use crate::http::app::App;
use crate::http::run::hub::Hub;
use crate::http::wire::body::{Body, SendBody};
use crate::http::wire::jsonrpc::Message;
use crate::http::wire::message;
use http::request::Parts;
use http::Response;
use serde_json::Value;

/// A `POST` read and admitted: its head, its message, and the message's id
/// (a request's; `None` for a notification or a response).
pub(crate) struct Posted {
    pub(crate) parts: Parts,
    pub(crate) message: Message,
    pub(crate) id: Option<Value>,
}

/// Reads the one message of a `POST` and admits a handler for it; `Err` is
/// the refusal, answered (with the message's id once it is known).
///
/// The admission is checked here, and the handler spawned (if it must be)
/// in the same synchronous stretch of the caller's poll: see
/// `admission.rs`.
pub(crate) async fn open<A: App, B: SendBody>(
    hub: &Hub<A>,
    request: http::Request<B>,
) -> Result<Posted, Response<Body>> {
    let config = &hub.config;
    let (parts, body) = request.into_parts();
    let message = message::read(config, &parts, body)
        .await
        .map_err(|reject| reject.respond(None, config))?;
    let id = message.request_id();
    if let Err(reject) = hub.runner.handlers.admit(config.max_handlers) {
        return Err(reject.respond(id.as_ref(), config));
    }
    Ok(Posted { parts, message, id })
}

//! The modern era's answer to a handler's outcome ([`respond`]): the one
//! place a 2026-07-28 request's [`Dispatched`] becomes its HTTP response,
//! through the envelope, which is the layer's (`envelope.rs`).

use super::envelope::Envelope;
use super::input_required::{self, Binds};
use crate::http::app::{App, Reply};
use crate::http::run::dispatch::{Dispatched, Stop};
use crate::http::run::hub::Hub;
use crate::http::tasks;
use crate::http::wire::body::{self, Body};
use crate::http::wire::jsonrpc::{self, RpcError};
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use http::{Response, StatusCode};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

/// Cancels a request's token and aborts its spawned task when dropped: the
/// request's answer (or its SSE body) holds it, so a client that goes away
/// cancels the handler (and whatever it handed its token to).
pub(super) struct AbortOnDrop(
    pub(super) tokio::task::AbortHandle,
    pub(super) CancellationToken,
);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.1.cancel();
        // A no-op for a task that has finished.
        self.0.abort();
    }
}

/// What answering a 2026-07-28 request needs beside its outcome.
pub(super) struct Answering {
    pub(super) envelope: Envelope,
    /// What a sealed `requestState` will be bound to.
    pub(super) binds: Binds,
    pub(super) owner: Option<Principal>,
    /// Held by a streamed answer's body; dropped with the answer otherwise.
    pub(super) cancel: Option<AbortOnDrop>,
    /// The tool a call that may become a task calls (its task's span
    /// names it); `None` for any other request.
    pub(super) tool: Option<Box<str>>,
    /// Whether the request may be answered with a task: a `tools/call`
    /// whose client declared the tasks extension on it.
    pub(super) takes_task: bool,
}

/// The response to a 2026-07-28 request for its handler's outcome.
///
/// A result goes out in the envelope; `input_required` with its hub
/// sealed; a task is created and its `CreateTaskResult` answered; an
/// application's JSON-RPC error gets the transport's status for its code
/// (404 for `-32601`, see [`Reject::Answered`]); a handler that fails is
/// 500; a request that ran past the handler timeout gets its `-32603`.
pub(super) fn respond<A: App>(
    hub: &Hub<A>,
    outcome: Dispatched,
    answering: Answering,
) -> Response<Body> {
    let config = &hub.config;
    let Answering {
        envelope,
        binds,
        owner,
        cancel,
        tool,
        takes_task,
    } = answering;
    let id = Some(&envelope.id);
    match outcome {
        Dispatched::Streaming(outlet) => {
            if let Some(cancel) = cancel {
                // Let go when the stream ends, for whatever reason (the
                // client went away, or stopped reading).
                outlet.hold(Box::new(cancel));
            }
            hub.sse.stream(outlet)
        }
        Dispatched::Reply(Reply::Result(result)) => {
            let enveloped = envelope.result(result);
            body::answer(&envelope.id, &enveloped, enveloped.is_tool_error())
        }
        Dispatched::Reply(Reply::Serialized(result)) => {
            if let Some((message, tool_error)) = envelope.plain_message(&result) {
                return body::answer_bytes(message, tool_error);
            }
            let enveloped = envelope.serialized(&result);
            body::answer(&envelope.id, &enveloped, enveloped.is_tool_error())
        }
        Dispatched::Reply(Reply::ToolText(text)) => match envelope.text_message(&text) {
            Some(message) => body::answer_bytes(message, text.is_error()),
            None => {
                let enveloped = envelope.result(text.to_value());
                body::answer(&envelope.id, &enveloped, text.is_error())
            }
        },
        Dispatched::Reply(Reply::InputRequired(asked)) => input_required::input_required(
            &hub.sealer,
            config,
            &envelope,
            binds,
            owner.as_ref(),
            asked,
        ),
        Dispatched::Reply(Reply::Task(work)) => match &hub.tasks {
            // Only a request that may become a task gets here with one
            // (see `TaskChoice`).
            Some(tasks) => match tasks::start(tasks, owner, work, tool.as_deref()) {
                Ok(created) => body::result(&envelope.id, &envelope.task_result(created)),
                Err(reject) => reject.respond(id, config),
            },
            None => Reject::Overloaded.respond(id, config),
        },
        // The layer's own store answers every tasks/* request when it is
        // configured: a task of the application's would never be found.
        Dispatched::Reply(Reply::TaskCreated(_)) if hub.tasks.is_some() => {
            Reject::Answered(RpcError::new(
                jsonrpc::RpcError::INTERNAL_ERROR,
                "the handler answered with a task of its own store, but the layer's task \
                 store serves tasks/* on this server (answer Reply::Task instead)",
            ))
            .respond(id, config)
        }
        Dispatched::Reply(Reply::TaskCreated(created)) if takes_task => {
            match serde_json::from_str::<Map<String, Value>>(created.get()) {
                Ok(created) => body::result(&envelope.id, &envelope.task_result(created)),
                Err(_) => Reject::Answered(RpcError::new(
                    jsonrpc::RpcError::INTERNAL_ERROR,
                    "the handler's task result is not a JSON object",
                ))
                .respond(id, config),
            }
        }
        Dispatched::Reply(Reply::TaskCreated(_)) => Reject::Answered(RpcError::new(
            jsonrpc::RpcError::INTERNAL_ERROR,
            "the handler answered with a task, which this request did not ask for \
             (a tools/call declaring the tasks extension)",
        ))
        .respond(id, config),
        Dispatched::Reply(Reply::Error(error)) => Reject::Answered(error).respond(id, config),
        Dispatched::Reply(Reply::Accepted | Reply::Stream(_)) => body::rpc_error(
            StatusCode::OK,
            id,
            &RpcError::new(
                jsonrpc::RpcError::INTERNAL_ERROR,
                "the handler gave no response",
            ),
        ),
        Dispatched::Failed => Reject::HandlerFailed { in_session: false }.respond(id, config),
        Dispatched::Stopped(Stop::TimedOut(limit)) => {
            body::rpc_error(StatusCode::OK, id, &Stop::TimedOut(limit).error())
        }
        // Cancelled: the client went away; nobody reads this.
        Dispatched::Stopped(_) => hub.sse.ended(),
        Dispatched::Lost => Reject::ShuttingDown.respond(id, config),
    }
}

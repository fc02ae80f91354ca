//! The session era's answer to a handler's outcome ([`respond`]): the one
//! place a legacy request's [`Dispatched`] becomes its HTTP response.

use crate::http::app::Reply;
use crate::http::run::dispatch::{Dispatched, Stop};
use crate::http::sse::Responder;
use crate::http::wire::body::{self, Body};
use crate::http::wire::config::Config;
use crate::http::wire::jsonrpc::{self, RpcError};
use crate::http::wire::object_members::{ObjectMembers, TopLevel};
use crate::http::wire::reject::Reject;
use crate::Reason;
use http::{Response, StatusCode};
use serde_json::Value;

/// The response to a legacy request (`id`: a request's; `None` for a
/// notification or a response) for its handler's outcome.
///
/// A JSON-RPC error the application answers is an answer (200), as every
/// legacy revision has it; a reply a request cannot be answered with (a
/// task, `input_required`, nothing) is the handler's failure to answer:
/// `-32603`, 200 as well.
pub(crate) fn respond(
    outcome: Dispatched,
    id: Option<&Value>,
    sse: &Responder,
    config: &Config,
) -> Response<Body> {
    match outcome {
        Dispatched::Failed => Reject::HandlerFailed { in_session: true }.respond(id, config),
        Dispatched::Streaming(outlet) => sse.stream(outlet),
        Dispatched::Stopped(stop) => stopped(stop, id, sse, config),
        Dispatched::Lost => Reject::ShuttingDown.respond(id, config),
        Dispatched::Reply(reply) => match (id, reply) {
            (None, _) => body::status(StatusCode::ACCEPTED),
            (Some(id), Reply::Result(result)) => {
                let tool_error = result.get("isError") == Some(&Value::Bool(true));
                body::answer(id, &result, tool_error)
            }
            (Some(id), Reply::Serialized(result) | Reply::TaskCreated(result)) => {
                let tool_error = match TopLevel::of(&result) {
                    Some(top) => top.tool_error,
                    None => ObjectMembers::of(&result).is_some_and(|m| m.is_tool_error()),
                };
                body::answer(id, &result, tool_error)
            }
            (Some(id), Reply::ToolText(text)) => body::answer(id, &text, text.is_error()),
            (Some(id), Reply::Error(error)) => body::rpc_error(StatusCode::OK, Some(id), &error),
            (
                Some(id),
                Reply::Accepted | Reply::Stream(_) | Reply::InputRequired(_) | Reply::Task(_),
            ) => body::rpc_error(
                StatusCode::OK,
                Some(id),
                &RpcError::new(
                    jsonrpc::RpcError::INTERNAL_ERROR,
                    "the handler gave no response",
                ),
            ),
        },
    }
}

/// The answer to a request whose work stopped before it answered.
fn stopped(stop: Stop, id: Option<&Value>, sse: &Responder, config: &Config) -> Response<Body> {
    match stop {
        Stop::SessionEnded(Reason::Shutdown) => Reject::ShuttingDown.respond(id, config),
        Stop::SessionEnded(_) => Reject::SessionEnded.respond(id, config),
        // No response for a cancelled request (2025-11-25, Cancellation):
        // its stream ends with nothing in it.
        Stop::Cancelled => sse.ended(),
        Stop::TimedOut(_) => match id {
            Some(id) => body::rpc_error(StatusCode::OK, Some(id), &stop.error()),
            None => body::status(StatusCode::ACCEPTED),
        },
    }
}

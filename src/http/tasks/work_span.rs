//! The span of a task's work: a `tools/call` that became a task is
//! answered (`CreateTaskResult`) long before its work ends, so the work is
//! not part of the request's SERVER span, which ends with that answer. It
//! has a span of its own, for as long as it runs:
//!
//! ```text
//! name        execute_tool {gen_ai.tool.name}   (the GenAI conventions' tool execution span,
//!                                                which the MCP conventions say tool calls match)
//! kind        INTERNAL
//! parent      none: the root of a trace of its own (work may run for hours, long after the
//!             client's trace has ended)
//! link        the SERVER span of the request that created the task (`follows_from`, which
//!             the OTLP export's layer exports as a span link)
//! attributes  mcp.method.name = tools/call, mcp.protocol.version, gen_ai.operation.name =
//!             execute_tool, gen_ai.tool.name, mcp.task.id (the task id's public part: the
//!             whole id grants access to the task, so it never goes into a span)
//! failure     error.type: the JSON-RPC code of the error `tasks/get` reports (a failure, an
//!             expiry, work abandoned), or tool_error for a result with isError; the status
//!             ERROR, described by the error's message. A task cancelled by its client did
//!             not fail.
//! ```
//!
//! The MCP conventions name no span for a task; this is the choice made
//! here, written down in the README's "Observe" section.

use crate::http::wire::answered::within;
use crate::http::wire::protocol::MODERN_VERSION;
use crate::{Ended, SessionId};
use serde_json::Value;
use tracing::field::{display, Empty};

/// The target the requests' spans have (`observe/span.rs`), so that a
/// filter that names them (the example's log leaves them out) names this
/// one too.
const TARGET: &str = "sessionreg::http::observe::task";

/// The longest tool name the span carries (a client's text, exported with
/// the span), as the request's span cuts it.
pub(crate) const TOOL_BYTES: usize = 256;

/// The span of the work of a task created for a call of `tool`, linked to
/// the current span (the request's). Disabled, with nothing recorded,
/// unless a subscriber wants it.
pub(crate) fn open(tool: Option<&str>) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        parent: None,
        "mcp.task",
        otel.name = Empty,
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        mcp.method.name = "tools/call",
        mcp.protocol.version = MODERN_VERSION,
        mcp.task.id = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = Empty,
        "error.type" = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    span.follows_from(tracing::Span::current());
    match tool.map(|t| within(t, TOOL_BYTES)) {
        Some(tool) => {
            span.record("otel.name", display(format_args!("execute_tool {tool}")));
            span.record("gen_ai.tool.name", tool);
        }
        None => {
            span.record("otel.name", "execute_tool");
        }
    }
    span
}

/// Names the task on its span: by its id's public part, never its secret.
pub(crate) fn record_task(span: &tracing::Span, id: SessionId) {
    if !span.is_disabled() {
        span.record("mcp.task.id", display(id.public_part()));
    }
}

/// Records how the task ended on its span: the failures, as the request's
/// span records them.
pub(crate) fn record_end(span: &tracing::Span, ended: Option<&Ended<Value>>) {
    if span.is_disabled() {
        return;
    }
    let error = match ended {
        Some(Ended::Completed(result)) => {
            if result.get("isError") == Some(&Value::Bool(true)) {
                span.record("error.type", "tool_error");
                span.record("otel.status_code", "ERROR");
            }
            return;
        }
        Some(Ended::Failed(error)) => error,
        Some(other @ (Ended::Expired | Ended::Abandoned)) => {
            let error = super::entry::unanswered(other).unwrap_or(Value::Null);
            return record_error(span, &error);
        }
        Some(Ended::Cancelled) | None => return,
    };
    record_error(span, error);
}

/// Records a JSON-RPC error object (`code`, `message`) as the failure.
fn record_error(span: &tracing::Span, error: &Value) {
    match error.get("code").and_then(Value::as_i64) {
        // A string, as the conventions type it.
        Some(code) => span.record("error.type", display(code)),
        None => span.record("error.type", "_OTHER"),
    };
    span.record("otel.status_code", "ERROR");
    if let Some(message) = error.get("message").and_then(Value::as_str) {
        span.record("otel.status_description", message);
    }
}

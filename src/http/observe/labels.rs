//! What a duration series is labelled by, shared by its `/metrics`
//! exposition (`durations.rs`) and its OpenTelemetry instruments
//! (`instruments.rs`): how a request ended, a series' name borrowed, and
//! the label and attribute a request's target goes under.

#[cfg(feature = "otel")]
use std::sync::Arc;

/// How a request ended, as its series counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Answered with a result (or accepted).
    Answered,
    /// Answered with this JSON-RPC error.
    Error(i64),
    /// A `tools/call` answered with a result whose `isError` is true.
    ToolError,
}

/// A series' name, borrowed (for the OpenTelemetry instruments).
#[cfg(feature = "otel")]
pub(crate) struct KeyView<'a> {
    pub(crate) method: &'static str,
    pub(crate) target: Option<&'a Arc<str>>,
    pub(crate) version: &'static str,
}

/// The label a target goes under: `gen_ai_tool_name` for a tool, else
/// `gen_ai_prompt_name`.
pub(crate) fn target_label(method: &str) -> &'static str {
    match method {
        "tools/call" => "gen_ai_tool_name",
        _ => "gen_ai_prompt_name",
    }
}

/// The OpenTelemetry attribute a target goes under.
#[cfg(feature = "otel")]
pub(crate) fn target_attribute(method: &str) -> &'static str {
    match method {
        "tools/call" => "gen_ai.tool.name",
        _ => "gen_ai.prompt.name",
    }
}

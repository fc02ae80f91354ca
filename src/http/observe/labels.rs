//! What a duration series is labelled by, shared by its `/metrics`
//! exposition and its OTLP export (`durations.rs`): how a request ended,
//! and the label and attribute a request's target goes under.

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

//! The method names a metric's label may carry: MCP's own (the semantic
//! conventions' well-known `mcp.method.name` values, and those of
//! 2026-07-28 and its tasks extension); any other method is `_OTHER`, so a
//! client that makes methods up adds no series. A span carries the
//! method as sent (`observe/span.rs`): it is not kept.

/// The conventions' fallback for a value outside the known set.
pub(crate) const OTHER: &str = "_OTHER";

/// Every method a label names as itself, sorted.
const KNOWN: &[&str] = &[
    "completion/complete",
    "elicitation/create",
    "initialize",
    "logging/setLevel",
    "notifications/cancelled",
    "notifications/elicitation/complete",
    "notifications/initialized",
    "notifications/message",
    "notifications/progress",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/tasks/status",
    "notifications/tools/list_changed",
    "ping",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/templates/list",
    "resources/unsubscribe",
    "roots/list",
    "sampling/createMessage",
    "server/discover",
    "subscriptions/listen",
    "tasks/cancel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/update",
    "tools/call",
    "tools/list",
];

/// The label for `method`: itself if MCP defines it, else [`OTHER`].
pub(crate) fn label(method: &str) -> &'static str {
    // The request nearly every busy server answers most, first; then the
    // list, whose comparisons mostly stop at the length.
    if method == "tools/call" {
        return "tools/call";
    }
    KNOWN
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or(OTHER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_known_methods_are_sorted_and_name_themselves() {
        assert!(KNOWN.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(label("tools/call"), "tools/call");
        assert_eq!(
            label("notifications/initialized"),
            "notifications/initialized"
        );
        assert_eq!(label("acme/anything"), OTHER);
    }
}

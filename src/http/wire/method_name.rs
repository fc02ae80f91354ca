//! The methods MCP defines ([`known`]): what a method's name is kept as
//! without a copy of the client's text ([`kept`]), and what a metric's
//! label may name (`observe/methods.rs`).

use std::borrow::Cow;

/// Every method MCP defines (the semantic conventions' well-known
/// `mcp.method.name` values, and those of 2026-07-28 and its tasks
/// extension), sorted.
pub(crate) const KNOWN: &[&str] = &[
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

/// `method` as MCP's own static name, if MCP defines it.
pub(crate) fn known(method: &str) -> Option<&'static str> {
    // The request nearly every busy server answers most, first; then the
    // list, whose comparisons mostly stop at the length.
    if method == "tools/call" {
        return Some("tools/call");
    }
    KNOWN.iter().find(|known| **known == method).copied()
}

/// `method` kept past its message: MCP's own name borrowed, any other
/// copied.
pub(crate) fn kept(method: &str) -> Cow<'static, str> {
    match known(method) {
        Some(name) => Cow::Borrowed(name),
        None => Cow::Owned(method.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_known_methods_are_sorted_and_kept_without_a_copy() {
        assert!(KNOWN.windows(2).all(|w| w[0] < w[1]));
        assert!(matches!(kept("tools/call"), Cow::Borrowed("tools/call")));
        assert!(matches!(kept("ping"), Cow::Borrowed("ping")));
        assert!(matches!(kept("acme/anything"), Cow::Owned(m) if m == "acme/anything"));
    }
}

//! The method names a metric's label may carry: MCP's own (the semantic
//! conventions' well-known `mcp.method.name` values, and those of
//! 2026-07-28 and its tasks extension); any other method is `_OTHER`, so a
//! client that makes methods up adds no series. A span carries the
//! method as sent (`observe/span.rs`): it is not kept.

use crate::http::wire::method_name;

/// The conventions' fallback for a value outside the known set.
pub(crate) const OTHER: &str = "_OTHER";

/// The label for `method`: itself if MCP defines it, else [`OTHER`].
pub(crate) fn label(method: &str) -> &'static str {
    method_name::known(method).unwrap_or(OTHER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_known_methods_name_themselves() {
        assert_eq!(label("tools/call"), "tools/call");
        assert_eq!(
            label("notifications/initialized"),
            "notifications/initialized"
        );
        assert_eq!(label("acme/anything"), OTHER);
    }
}

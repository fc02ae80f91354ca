//! The names of the HTTP headers MCP defines, as this layer reads and
//! writes them (lowercase: header names compare case-insensitively).

/// Names the session a legacy request belongs to; set on the answer to
/// `initialize`.
pub const SESSION_ID: &str = "mcp-session-id";
/// The protocol version of a request.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The event a legacy client resumes an SSE stream after.
pub const LAST_EVENT_ID: &str = "last-event-id";
/// Mirrors a modern request's `method` (SEP-2243).
pub const MCP_METHOD: &str = "mcp-method";
/// Mirrors a modern request's target: `params.name` of `tools/call` and
/// `prompts/get`, `params.uri` of `resources/read` (SEP-2243).
pub const MCP_NAME: &str = "mcp-name";
/// The prefix of the headers that mirror a tool's `x-mcp-header`
/// parameters (SEP-2243): `Mcp-Param-{name}`.
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// The same names as `HeaderName`s, made once at compile time: a lookup by
/// one does not parse (and check) its text again, as a lookup by `&str`
/// does on every request.
pub(crate) mod name {
    use http::HeaderName;

    pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static(super::SESSION_ID);
    pub(crate) const PROTOCOL_VERSION: HeaderName =
        HeaderName::from_static(super::PROTOCOL_VERSION);
    pub(crate) const LAST_EVENT_ID: HeaderName = HeaderName::from_static(super::LAST_EVENT_ID);
    pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static(super::MCP_METHOD);
    pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static(super::MCP_NAME);
}

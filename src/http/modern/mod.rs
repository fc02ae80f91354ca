//! The modern era: requests at protocol version 2026-07-28, which has no
//! sessions: each `POST` stands alone, follows the rules of that revision's
//! Streamable HTTP page, and never touches the registry.
//!
//! Section names below are those of the 2026-07-28 transport page
//! (`basic/transports/streamable-http`):
//!
//! * **Request Metadata → Server Validation**: `Mcp-Method` is required on
//!   every request and must equal the body's `method`; `Mcp-Name` is
//!   required on `tools/call`, `resources/read` and `prompts/get` when the
//!   body names a target (`params.name`, or `params.uri` for
//!   `resources/read`) and must equal it, after decoding the
//!   `=?base64?...?=` sentinel (**Value Encoding**); values are compared
//!   without surrounding whitespace (RFC 9110 §5.5). A header that is
//!   missing, malformed or different is answered 400 with a `HeaderMismatch`
//!   (`-32020`) error. The `MCP-Protocol-Version` header must also equal
//!   the body's `_meta["io.modelcontextprotocol/protocolVersion"]`. A
//!   notification's headers are checked when present (**Sending Messages**:
//!   "header requirements for notification POSTs are not defined by this
//!   revision").
//! * **Sending Messages**: a client must not send a JSON-RPC response (400).
//! * *Per-request protocol fields* (the 2026-07-28 `basic` page, `_meta`):
//!   a request without `params._meta` carrying
//!   `io.modelcontextprotocol/protocolVersion` (a string) and
//!   `io.modelcontextprotocol/clientCapabilities` (an object) is malformed:
//!   400 with `-32602` (Invalid params).
//! * **Protocol Version Header**: a method the application does not
//!   implement (its reply is a `-32601` error) is answered 404, so a client
//!   can tell a modern server from a legacy endpoint.
//! * **Cancellation**: closing the SSE response stream, or the connection
//!   before the answer, cancels the request: the handler's future (or its
//!   reply stream) is dropped. (Requests in a session keep running when the
//!   client goes, as the 2025-11-25 page says disconnection should not be
//!   read as cancellation.)
//! * **Backward Compatibility → Earlier Streamable HTTP Revisions**:
//!   `MCP-Session-Id` and `Last-Event-ID` are ignored; `GET` and `DELETE`
//!   answer 405 (in the router).
//!
//! The layer owns the envelope (see `envelope.rs`): removed methods
//! (`initialize`, `ping`, `logging/setLevel`, `resources/subscribe`,
//! `resources/unsubscribe`, the tasks extension's `tasks/result` and
//! `tasks/list`) get 404 with `-32601` before the application sees them;
//! `server/discover` is answered from [`App::discovery`](crate::http::App::discovery); every result gets its `resultType` and, where the
//! schema wants them, caching hints; a JSON-RPC error gets its transport
//! status (`-32601`: 404; `-32020`, `-32021`, `-32022` and a malformed
//! request's `-32602`: 400; any other: 200). Multi-round-trip requests
//! (`input_required.rs`, `request.rs`, the layer's `input/`): an application answers "input required"
//! with [`ModernRequest::input_required`](crate::http::ModernRequest::input_required); the layer seals the hub it wants
//! back, and on the retry opens and verifies it before the application sees
//! it, refusing a tampered, expired, replayed or another request's or
//! principal's hub with `-32602` (400), counted in
//! `sessionreg_request_state_rejected_total{cause}`. A tool's
//! `x-mcp-header` parameters are checked against their `Mcp-Param-*`
//! headers (the layer's `mirror.rs`). Each request's work runs in a
//! `Standalone` scope (`scope.rs`), and its outcome is answered by
//! `respond.rs`; `serve.rs` walks one request through all of it.
//!
//! Such requests go through the [authenticator](crate::http::Builder::authenticator)
//! like every other; [`Builder::serve_modern`](crate::http::Builder::serve_modern)
//! switches them on (off, they get the `UnsupportedProtocolVersionError`).

mod envelope;
mod input_required;
mod request;
mod respond;
mod scope;
mod serve;
mod validate;

pub(crate) use serve::serve;

pub use crate::http::app::discovery::{CacheScope, Discovery};
pub use crate::http::input::sealing::{RequestStateKeys, StateRejection};
pub use crate::http::input::{InputRequests, InputRequired};
pub use crate::http::wire::meta::LogLevel;
pub use crate::http::wire::mirror::{MirrorError, MirroredParams};

/// Not part of the API: the sealer's bench hook (`benches/sealing.rs`).
#[cfg(feature = "bench-hooks")]
#[doc(hidden)]
pub use crate::http::input::sealing::bench as __bench_sealing;

//! What the registry holds for one rmcp session.

use rmcp::transport::streamable_http_server::session::local::LocalSessionHandle;
use tokio_util::sync::CancellationToken;

/// A session's value in the registry: the handle to rmcp's per-session
/// worker, the token that stops that worker, and whether the session was
/// restored (its client's id is then an alias of its registry id).
///
/// The close callback (run once, by whichever path ended the session)
/// cancels `worker`; the worker then exits, and rmcp's serve loop ends with
/// it. Cancelling is synchronous, so it works from any thread, inside a
/// runtime or not (the registry's own drop included).
pub(crate) struct Entry {
    pub(crate) handle: LocalSessionHandle,
    pub(crate) worker: CancellationToken,
    /// Restored from rmcp's session store: the worker is named by the
    /// client's id, which [`Aliases`](crate::aliases::Aliases) maps to this
    /// entry until the session ends.
    pub(crate) restored: bool,
}

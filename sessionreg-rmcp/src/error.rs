//! The manager's error type.

use rmcp::transport::streamable_http_server::session::local::{EventIdParseError, SessionError};
use rmcp::transport::streamable_http_server::session::EventStoreError;
use std::fmt;

/// Why a [`RegistrySessionManager`](crate::RegistrySessionManager) call
/// failed.
///
/// rmcp's `StreamableHttpService` answers every manager error with
/// `500 Internal Server Error` (and logs it at ERROR). Mounted behind a
/// [`StatusLayer`](crate::StatusLayer), the ones a client should see
/// differently get their proper status instead: [`AtCapacity`] and
/// [`ShuttingDown`] become 503, and a session that ended under a request
/// ([`SessionNotFound`]) becomes 404, without an error at all.
///
/// No variant's text contains a session id: ids grant access, and rmcp logs
/// these errors.
///
/// [`AtCapacity`]: Error::AtCapacity
/// [`ShuttingDown`]: Error::ShuttingDown
/// [`SessionNotFound`]: Error::SessionNotFound
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// `create_session` found the registry at its capacity; no session was
    /// created.
    AtCapacity {
        /// The configured maximum of live sessions.
        capacity: usize,
    },
    /// The manager is shutting down and creates no session.
    ShuttingDown,
    /// The session is not live: it ended (DELETE, idle timeout, worker exit,
    /// shutdown) between rmcp's `has_session` and this call, or the id never
    /// named one.
    SessionNotFound,
    /// rmcp's per-session worker refused or failed the operation.
    Session(SessionError),
    /// A `Last-Event-ID` that is not one of this session's event ids.
    InvalidEventId(EventIdParseError),
    /// The event store failed to replay the events after a `Last-Event-ID`
    /// (rmcp then answers the `GET` with an empty stream, as with its own
    /// manager).
    EventStore(EventStoreError),
    /// rmcp's `LocalSessionManager`, which makes the workers of a manager
    /// with an event store, did not make one as rmcp 3.11 does (an rmcp
    /// release that changed it); no session was created.
    WorkerNotMade,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::AtCapacity { capacity } => {
                write!(
                    f,
                    "the session registry is at capacity ({capacity} sessions)"
                )
            }
            Error::ShuttingDown => f.write_str("the server is shutting down"),
            Error::SessionNotFound => f.write_str("session not found"),
            Error::Session(e) => write!(f, "session worker: {e}"),
            Error::InvalidEventId(e) => write!(f, "invalid Last-Event-ID: {e}"),
            Error::EventStore(e) => write!(f, "event store: {e}"),
            Error::WorkerNotMade => {
                f.write_str("rmcp's LocalSessionManager made no worker for the event store")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Session(e) => Some(e),
            Error::InvalidEventId(e) => Some(e),
            Error::EventStore(e) => Some(&**e),
            _ => None,
        }
    }
}

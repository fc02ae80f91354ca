//! Why an MCP operation of a `try_` method failed.

use http::StatusCode;
use serde_json::Value;
use std::fmt;

/// What went wrong with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// 404 to a request with a session id: the session is gone (ended, or
    /// its node is). Start a new one.
    SessionGone,
    /// Any other HTTP status than the one expected, with the body's start.
    Status(StatusCode, String),
    /// The connection closed before the response came: the outcome is
    /// unknown, as with a 502. (HAProxy answers so, instead of 502, for a
    /// request it sent on a reused connection to a node that died: its
    /// `http-reuse safe` lets the client decide whether to send it again.)
    Closed,
    /// The connection failed, or the body could not be read or parsed.
    Transport(String),
    /// A JSON-RPC error answer.
    Rpc(Value),
}

impl Error {
    /// A transport error, with its chain of causes.
    pub(crate) fn transport(error: impl std::error::Error) -> Error {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        Error::Transport(text)
    }

    /// A request that got no response: [`Closed`](Error::Closed) if the
    /// connection closed before it, else a transport error.
    pub(crate) fn from_request(error: hyper_util::client::legacy::Error) -> Error {
        let closed = std::error::Error::source(&error)
            .and_then(|e| e.downcast_ref::<hyper::Error>())
            .is_some_and(hyper::Error::is_incomplete_message);
        if closed {
            Error::Closed
        } else {
            Error::transport(error)
        }
    }

    /// Another status than expected, with the start of its body.
    pub(crate) fn unexpected(status: StatusCode, body: &[u8]) -> Error {
        let text = String::from_utf8_lossy(body);
        Error::Status(status, text.chars().take(200).collect())
    }

    /// Whether the request failed where its node died: 502 from the
    /// balancer, or the connection closed before any response.
    pub fn is_lost_in_flight(&self) -> bool {
        matches!(self, Error::Closed) || self.status() == Some(StatusCode::BAD_GATEWAY)
    }

    /// The HTTP status, for a status error (404 for `SessionGone`).
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Error::SessionGone => Some(StatusCode::NOT_FOUND),
            Error::Status(status, _) => Some(*status),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::SessionGone => f.write_str("404: session gone"),
            Error::Status(status, body) => write!(f, "HTTP {status}: {body}"),
            Error::Closed => f.write_str("the connection closed before the response"),
            Error::Transport(error) => write!(f, "transport: {error}"),
            Error::Rpc(error) => write!(f, "JSON-RPC error: {error}"),
        }
    }
}

impl std::error::Error for Error {}

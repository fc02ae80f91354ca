//! How a request was answered, as its response carries it for the
//! request's observers (its span and its duration's series,
//! `observe/span.rs`): a failure is an extension of the response, put there
//! where the response is made (every refusal's in `reject.rs`, an
//! application's error or a tool's failure in the eras' `respond.rs`). A
//! result carries nothing, and costs nothing.

use crate::http::wire::jsonrpc::RpcError;
use http::Response;

/// The longest error message kept for the span's status: an application's
/// message is its own text, and can be long.
const MESSAGE_BYTES: usize = 256;

/// A request's failure, as its response says it.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// Answered with a JSON-RPC error: its code and (bounded) message.
    Error { code: i64, message: Box<str> },
    /// A `tools/call` answered with a result whose `isError` is true.
    ToolError,
}

impl Failure {
    /// The failure of answering with `error`.
    pub(crate) fn of_error(error: &RpcError) -> Failure {
        Failure::Error {
            code: error.code,
            message: within(&error.message, MESSAGE_BYTES).into(),
        }
    }
}

/// Marks `response` as answering with `failure`.
pub(crate) fn mark<B>(response: &mut Response<B>, failure: Failure) {
    response.extensions_mut().insert(failure);
}

/// The failure `response` answers with, if it was marked.
pub(crate) fn failure<B>(response: &Response<B>) -> Option<&Failure> {
    response.extensions().get::<Failure>()
}

/// `text` cut to at most `bound` bytes, at a character's boundary.
pub(crate) fn within(text: &str, bound: usize) -> &str {
    if text.len() <= bound {
        return text;
    }
    let mut end = bound;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

//! Multi-round-trip requests (2026-07-28, the MRTR page): what a handler
//! asks the client for ([`InputRequests`]), the answer that says more input
//! is required ([`InputRequired`], made by
//! [`ModernRequest::input_required`](crate::http::ModernRequest::input_required)),
//! and the checks of what a retry brings back. The state sealed into such
//! an answer is `sealing.rs`'s.

mod binding;
mod requests;
pub(crate) mod sealing;
mod single_use;
pub(crate) mod used;

pub(crate) use requests::{ask, input_responses, INPUT_METHODS};
pub use requests::{InputRequests, InputRequired};

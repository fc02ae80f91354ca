//! Server-sent event streams: what carries a stream to its client (the
//! bounded queue of `outlet.rs`, the response body of `body.rs` with its
//! one timer of `beat.rs`, and the response of `response.rs`), the frames
//! every stream writes (`frame.rs`), what carries a handler's streamed
//! reply into it (`pump.rs`), and what a session keeps of its streams
//! (`streams.rs`, with the event logs and event ids of `resume.rs` that
//! make them resumable).

pub(crate) mod beat;
mod body;
pub(crate) mod frame;
pub(crate) mod outlet;
mod pump;
mod response;
pub(crate) mod resume;
mod streams;

pub(crate) use outlet::{Outlet, QueueLimits};
pub(crate) use pump::Out;
pub(crate) use response::Responder;
pub(crate) use streams::Streams;

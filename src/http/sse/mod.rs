//! Server-sent event streams: what carries a stream to its client (the
//! bounded queue of `outlet.rs`, the response body of `body.rs`), and what
//! a session keeps of its streams (`streams.rs`, with the event logs and
//! event ids of `resume.rs` that make them resumable).

mod body;
pub(crate) mod outlet;
pub(crate) mod resume;
mod streams;

pub(crate) use body::SseBody;
pub(crate) use outlet::{Outlet, QueueLimits};
pub(crate) use streams::Streams;

//! Running a request with no era: the shared state of an endpoint
//! (`state.rs`), the admission of work (`admission.rs`), the dispatch of one
//! message to the application under its cancel and timeout (`dispatch.rs`),
//! and a publication's way into the endpoint (`fanout.rs`).

pub(crate) mod admission;
pub(crate) mod dispatch;
pub(crate) mod fanout;
pub(crate) mod hub;
pub(crate) mod opening;

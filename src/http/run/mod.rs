//! Running a request with no era: the endpoint's parts (`hub.rs`), what
//! both eras do first with a `POST` (`opening.rs`), the admission of work
//! (`admission.rs`), and the dispatch of one message to the application
//! under its cancel and timeout (`dispatch.rs`); a future boxed where it
//! is made (`in_place.rs`), or put in memory its thread freed from one
//! like it (`recycled.rs`).

pub(crate) mod admission;
pub(crate) mod dispatch;
pub(crate) mod hub;
pub(crate) mod in_place;
pub(crate) mod opening;
pub(crate) mod recycled;

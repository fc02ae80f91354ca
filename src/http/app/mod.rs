//! What an application is to the layer: the [`App`] trait it implements,
//! what its handlers receive ([`Context`], with a view of the request for
//! each era: `legacy_request.rs`, `modern_request.rs`) and what they return
//! ([`Reply`], `reply.rs`).

mod application;
mod context;
pub(crate) mod discovery;
mod legacy_request;
mod modern_request;
mod reply;
mod tool_text;

pub use application::App;
pub use context::{Context, Era};
pub use legacy_request::LegacyRequest;
pub(crate) use modern_request::CallText;
pub use modern_request::{Call, ModernRequest};
pub use reply::{HandlerError, Reply};
pub use tool_text::ToolText;

//! The session era: requests at a legacy protocol version (2024-11-05 to
//! 2025-11-25), which belong to a session (the MCP 2025-11-25 transport).
//!
//! * `POST` ([`post`]): one JSON-RPC message in the session its
//!   `MCP-Session-Id` names; an `initialize` without one opens a session
//!   ([`initialize`]).
//! * `GET` ([`get`]): the session's standalone SSE stream, or the resume
//!   of one of its streams.
//! * `DELETE` ([`delete`]): the client ends its session.
//!
//! Any other method gets 405 with `Allow`. A message's work runs in its
//! session ([`scope`]), and its outcome is answered by [`respond`].
//! `routing.rs` routes a request by its HTTP method, `lookup.rs` finds a
//! session for its principal, and `work.rs` hands a message to the
//! application.

mod delete;
mod get;
mod initialize;
mod lookup;
mod post;
mod respond;
mod routing;
mod scope;
mod subscriptions;
mod work;

pub(crate) use routing::{allowed_methods, serve};

use lookup::find;
use work::run;

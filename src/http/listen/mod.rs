//! `subscriptions/listen` (2026-07-28, SEP-2575): the modern era's channel
//! for change, on a registry of listeners.
//!
//! A client that wants to hear of change sends `subscriptions/listen` with
//! a filter; the response *is* the stream. The layer answers it itself (the
//! application publishes, it does not serve the method):
//!
//! * **acknowledges first** (`notifications/subscriptions/acknowledged`,
//!   with the subset of the filter it honours: every kind, and the first
//!   [`Builder::listen_uris`](crate::http::Builder::listen_uris) resource
//!   URIs: `filter.rs`; the application may narrow it, or refuse, through
//!   [`App::listen_filter`](crate::http::App::listen_filter):
//!   `listen_filter.rs`), then sends only the kinds asked for, each stamped
//!   with `_meta["io.modelcontextprotocol/subscriptionId"]`, the listen
//!   request's id (`body.rs`);
//! * keeps each stream as an entry of a [`Registry`] of its own, so every
//!   way it ends goes through the one terminate CAS, whose winner runs its
//!   cleanup once (the queue closed, the topics left, the share given
//!   back) and whose reason is counted: the client went away
//!   ([`Reason::Disconnected`]), its queue filled ([`Reason::Lagged`]: a
//!   listener that falls behind is ended, never waited for), the server
//!   shuts down or drains ([`Reason::Shutdown`], [`Reason::Drained`]: the
//!   stream ends gracefully with the request's result), the fleet's bus
//!   went away ([`Reason::Unavailable`]), the credential it was opened
//!   with expired or was withdrawn ([`Reason::CredentialExpired`],
//!   [`Reason::CredentialWithdrawn`]: `body.rs` ends it, gracefully too).
//!   The handler timeout does not end it: no handler runs;
//! * bounds them: a global capacity (503 with `Retry-After` past it), a
//!   share per principal below it (429, and no other principal notices),
//!   a queue per listener, the URIs per filter;
//! * fans a publication out to the listeners that asked for its kind or its
//!   URI (`topics.rs`) and whose principal is in its [`Audience`], without a
//!   lock and without allocating per listener (`inbox.rs`).
//!
//! Applications publish through a [`Publisher`] (`publisher.rs`); the same
//! publication reaches legacy sessions as their revision has it (the
//! standalone `GET` stream for list changes, `resources/subscribe` for a
//! resource's updates: `deliver.rs`, through the narrow seam the sessions
//! implement).

mod body;
mod budget;
pub(crate) mod bus;
mod change;
mod deliver;
mod filter;
mod inbox;
mod kind;
mod listen_filter;
mod listeners;
pub(crate) mod metrics;
mod publisher;
mod roster;
mod topics;
mod wakes;

pub use change::{Audience, Change};
pub use listen_filter::ListenFilter;
pub use publisher::Publisher;

pub(crate) use budget::Charge;
#[cfg(feature = "redis")]
pub(crate) use change::Publication;
#[cfg(feature = "redis")]
pub(crate) use change::Shared;
pub(crate) use deliver::{Delivery, Sessions};
pub(crate) use filter::subscribed_uri;
pub(crate) use kind::ListKind;
pub(crate) use listeners::{Bounds, Listener, Listeners};
pub(crate) use publisher::Sink;
#[cfg(feature = "redis")]
pub(crate) use publisher::WeakPublisher;
pub(crate) use topics::{Member, Topic, Topics};

//! Who may reach the endpoint: the `Origin`/`Host` allow-lists and the
//! DNS-rebinding protection (`origins.rs`), CORS for the origins allowed by
//! name (`cors.rs`), and authentication (`auth.rs`, with the ready-made
//! bearer tokens of `bearer.rs`, and, with feature `oauth`, the OAuth
//! resource server of `oauth/`; `scopes.rs` holds what a token grants,
//! `validity.rs` until when, and whether it has been withdrawn), and how
//! fast a principal may ask (`rates/`). `gate.rs` holds the allow-lists
//! every request is checked against first.
//!
//! The allow-lists live behind an `arc_swap::ArcSwap`, so an operator can swap new
//! ones in (on SIGHUP, say) while every request reads the current ones
//! without taking a lock.
//!
//! A present `Origin` is checked on every request, whatever the bind: it
//! must be on the allow-list, or be a loopback origin while the loopback
//! rule below is on; any other gets 403. A second `Origin` (or `Host`) is
//! 400 before either is read.
//!
//! DNS-rebinding protection ([`RebindingProtection::Auto`], the default)
//! also restricts `Host` to loopback names (plus the allow-list) unless the
//! manager knows it is bound to a *public* address: one that is routable on
//! the internet, told by [`serve`](crate::http::serve) or
//! [`SessionManager::set_bind_address`](crate::http::SessionManager::set_bind_address).
//! A loopback, unspecified (`0.0.0.0`, `::`, what containers bind), private
//! (RFC 1918, CGNAT, IPv6 unique local) or link-local bind is not public: a
//! browser on that network can reach it, so the rule stays on, and a server
//! reached there by a name lists the name with
//! [`Builder::allow_host`](crate::http::Builder::allow_host). Mounted
//! anywhere else (axum, a hand-written hyper loop) the rule is on until told
//! otherwise, as rmcp does. A public bind, or [`RebindingProtection::Off`],
//! lets any `Host` in (unless the allow-list names them); the manager then
//! logs once what it lets in.

pub(crate) mod auth;
pub(crate) mod bearer;
pub(crate) mod cors;
pub(crate) mod digest;
mod gate;
#[cfg(feature = "oauth")]
pub mod oauth;
mod origins;
pub(crate) mod rates;
pub(crate) mod scopes;
pub(crate) mod validity;

pub use gate::{AllowLists, RebindingProtection};

pub(crate) use gate::Access;

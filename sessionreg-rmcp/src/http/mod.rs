//! An unmodified rmcp [`ServerHandler`](rmcp::ServerHandler) served by
//! [`sessionreg::http`] (feature `http`, on by default): swap rmcp's
//! `StreamableHttpService` for [`StreamableHttpService`], in one `use`.
//!
//! ```no_run
//! # #[derive(Clone)] struct Counter;
//! # impl rmcp::ServerHandler for Counter {}
//! use sessionreg_rmcp::http::{Config, StreamableHttpService};
//!
//! let service = StreamableHttpService::new(|| Ok(Counter), Config::default());
//! let router: axum::Router = axum::Router::new().nest_service("/mcp", service);
//! ```
//!
//! The service is a [`sessionreg::http::SessionManager`] whose
//! [`App`](sessionreg::http::App) is [`HandlerApp`]: the layer does the
//! transport (both eras on one endpoint, sessions in its registry, the
//! `Origin`/`Host` guard, bounds, authentication, metrics), and each message
//! reaches the handler through a one-message transport of this crate's
//! ([`rmcp::service::serve_directly_with_ct`]), with the request's
//! [`http::request::Parts`] in its extensions as rmcp puts them:
//!
//! * a 2026-07-28 request gets a handler from the factory, as rmcp's
//!   stateless requests do, and nothing outlives it;
//! * a legacy (2025-11-25 and older) session keeps the handler its
//!   `initialize` made and the client's `initialize` params, and nothing
//!   else: no task while it is idle. Each request runs rmcp's service loop
//!   for as long as it takes to answer.
//!
//! The module's files: `service.rs` (the tower service and its
//! [`Config`]), `app.rs` (the [`App`](sessionreg::http::App) over a handler),
//! `exchange.rs` (the one-message transport and the answer it collects).

mod app;
mod exchange;
mod service;

pub use app::{HandlerApp, HandlerSession};
pub use service::{Config, StreamableHttpService};

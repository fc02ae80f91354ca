//! Serving a manager on a listener ([`serve`]): the accept loop, with its
//! cap on open connections and its back-off on accept errors; each
//! connection it spawns, with the connection bounds (`connection.rs`, over
//! the stalled-write watch of `stall_io.rs`); and the graceful shutdown
//! that ends it (`stop.rs`), apart from the accept loop as in
//! hyper-util's `server/graceful.rs`. The accept loop and `serve` itself
//! are `accept.rs`.

mod accept;
pub(crate) mod connection;
mod connections;
mod protocol;
mod stall_io;
mod stop;

pub use accept::{serve, serve_with};
pub use connections::Connections;

//! What a legacy session is in the registry (`entry.rs`), the requests
//! running in it (`running.rs`), and its requests to its client
//! (`asks.rs`).

pub(crate) mod asks;
pub(crate) mod entry;
pub(crate) mod running;

//! The leaves every level stands on: JSON-RPC messages and the MCP
//! envelope's parts (`jsonrpc.rs`, `meta.rs`, `protocol.rs`), the members
//! of JSON text already checked (`raw_text.rs`), headers and their rules
//! (`headers.rs`, `header_rules.rs`, `mirror.rs`, `request_headers.rs`: those
//! a request's way reads, found in one pass), a `POST`'s body and its
//! one message (`request_body.rs`, `message.rs`, `one_walk.rs`, `body.rs`), who sent it
//! (`principal.rs`), every refusal (`reject.rs`), every bound and default
//! (`config.rs`, `config_error.rs`), when a store's places free
//! (`free_times.rs`), and a panic's text (`caught.rs`).

pub(crate) mod answered;
pub(crate) mod body;
pub(crate) mod caught;
pub(crate) mod config;
pub(crate) mod config_error;
pub(crate) mod free_times;
pub(crate) mod header_rules;
pub mod headers;
pub mod jsonrpc;
pub(crate) mod keyed_rate_limit;
pub(crate) mod message;
pub(crate) mod meta;
pub(crate) mod method_name;
pub(crate) mod mirror;
pub(crate) mod object_members;
pub(crate) mod one_walk;
pub(crate) mod params;
pub(crate) mod principal;
pub(crate) mod protocol;
pub(crate) mod rate;
pub(crate) mod raw_text;
pub(crate) mod reject;
pub(crate) mod request_body;
pub(crate) mod request_headers;
pub(crate) mod unix_time;

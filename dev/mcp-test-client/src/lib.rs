//! The MCP client of the workspace's tests and examples: streamable HTTP
//! over hyper's pooled HTTP/1.1 client, one [`Client`] for every caller.
//!
//! Two kinds of methods, for two kinds of callers:
//!
//! * **Plain methods are for tests**: [`post`](Client::post),
//!   [`initialize`](Client::initialize), [`call`](Client::call),
//!   [`delete`](Client::delete), [`open_stream`](Client::open_stream), ...
//!   return what the server answered, whatever its status (a [`Reply`], read
//!   whole, or the response with its body unread), so that the test asserts
//!   on it; they panic only when no answer came at all.
//! * **`try_` methods are for programs** (the fleet demo, its test):
//!   [`try_open`](Client::try_open), [`try_call`](Client::try_call),
//!   [`notify`](Client::notify), [`try_delete`](Client::try_delete),
//!   [`try_open_stream`](Client::try_open_stream), ... return the outcome of
//!   the MCP operation, or a typed [`Error`]: a session gone (404), another
//!   status than the operation expects, a connection closed before the
//!   answer, a JSON-RPC error.
//!
//! Around it: the messages ([`initialize_body`], [`tool_call`], ...), the
//! SSE readers ([`SseStream`] for one message at a time, [`read_sse`] and
//! [`sse_events`] for the raw text), a [`Session`] that knows its node and
//! a [`Resilient`] one that re-initializes when its node is gone (what the
//! spec asks of clients), 2026-07-28 requests and the tasks extension
//! ([`try_modern`](Client::try_modern),
//! [`try_create_task`](Client::try_create_task),
//! [`try_task_get`](Client::try_task_get): a [`Task`] knows its node too),
//! and [`eventually`], the tests' one way to wait.
//!
//! ```no_run
//! # async fn demo() {
//! use mcp_test_client::{Client, Error};
//! use serde_json::json;
//!
//! let client = Client::new("http://127.0.0.1:8080/mcp");
//! // A test: every status is an answer.
//! let id = client.initialize().await;
//! assert_eq!(client.call(&id, "echo", json!({ "text": "hi" })).await.status, 200);
//! assert_eq!(client.delete(&id).await.status, 200);
//! assert_eq!(client.delete(&id).await.status, 404);
//! // A program: the outcome, or why not.
//! let session = client.try_open().await.expect("a session");
//! let result = client.try_call(&session, 2, "echo", json!({ "text": "hi" })).await;
//! client.try_delete(&session).await.expect("ended");
//! assert!(matches!(client.try_delete(&session).await, Err(Error::SessionGone)));
//! # let _ = result;
//! # }
//! ```
//!
//! A dev-dependency of the workspace only (never published). `benches/e2e`
//! keeps a raw client of its own on purpose: it must cost the same against
//! every server and share no code with any of them.

// No unsafe code but one borrow of a descriptor by number (`nodelay.rs`,
// which allows it where it is).
#![deny(unsafe_code)]

mod checked;
mod client;
mod error;
mod messages;
mod metrics;
mod nodelay;
mod pool;
mod reply;
mod session;
mod sse;
mod tasks;
mod wait;

pub use client::Client;
pub use error::Error;
pub use messages::{
    initialize_at, initialize_body, initialized, result_text, tool_call, with_meta, ACCEPT_BOTH,
    PROTOCOL_VERSION,
};
pub use metrics::{fetch_text, samples};
pub use nodelay::accepted_nodelay;
pub use pool::{http, http_builder, Http};
pub use reply::{Posted, Reply};
pub use session::{Reinit, Resilient, Session};
pub use sse::{id_parts, read_sse, sse_events, sse_ids, SseStream};
pub use tasks::{modern_request_body, Task, MODERN_VERSION, TASKS_EXTENSION, TASK_NOT_FOUND_CODE};
pub use wait::eventually;

//! A `POST`'s one JSON-RPC message, in both eras: what the request's
//! headers must say first (`Accept`, `Content-Type`), its body read within
//! its bounds (`request_body.rs`), parsed (`one_walk.rs`, `jsonrpc.rs`).

use crate::http::wire::config::Config;
use crate::http::wire::jsonrpc::{self, Message};
use crate::http::wire::one_walk::{self, Find, MemberExtents};
use crate::http::wire::reject::Reject;
use crate::http::wire::request_body;
use crate::http::wire::request_headers::PostHeaders;
use hyper::body::Body as HttpBody;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::time::Duration;

/// Reads the one message of a `POST` (`headers`: what the router found
/// of its headers), with where the members of its
/// params the layer reads are when `find` asks and the one walk found them
/// (`one_walk.rs`).
pub(crate) async fn read<B: HttpBody>(
    config: &Config,
    headers: PostHeaders,
    body: B,
    find: Find,
) -> Result<(Message, Option<MemberExtents>), Reject> {
    if !headers.accepts {
        return Err(Reject::NotAcceptable(
            "Accept must list application/json and text/event-stream",
        ));
    }
    if !headers.json {
        return Err(Reject::NotJson);
    }
    let bytes = request_body::read(
        body,
        headers.declared_length,
        config.max_body_bytes,
        config.body_read_timeout,
    )
    .await?;
    // The message holds copies of what it needs (params as raw text): the
    // body goes before the handler runs, however long. A body the one walk
    // does not take is serde_json's, which says why it is refused.
    match one_walk::read(&bytes, find) {
        Some(read) => Ok(read),
        None => Message::from_slice(&bytes)
            .map(|message| (message, None))
            .map_err(Reject::Malformed),
    }
}

/// The `id` of the JSON-RPC request in a body, if it can be read (within
/// `limit` bytes and `timeout`) and has one: for errors answered before the
/// body is otherwise looked at, such as an unsupported protocol version.
/// Only the `id` member is read out; the rest is skipped, not built.
pub(crate) async fn request_id<B>(body: B, limit: usize, timeout: Option<Duration>) -> Option<Value>
where
    B: HttpBody,
{
    #[derive(Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow, default, deserialize_with = "jsonrpc::present")]
        id: Option<&'a RawValue>,
    }
    let bytes = request_body::read(body, None, limit, timeout).await.ok()?;
    if jsonrpc::first_token(&bytes) != Some(b'{') {
        return None;
    }
    let envelope: IdOnly<'_> = serde_json::from_slice(&bytes).ok()?;
    jsonrpc::request_id(envelope.id?).ok()
}

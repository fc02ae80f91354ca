//! The frames of every SSE stream the layer writes, in one place: an event
//! carrying one JSON-RPC message with its event id (the resumable streams:
//! `resume.rs`), a priming event, a `data:` event with no id (a listen
//! stream's: `listen/body.rs`), and the keep-alive comment a quiet stream
//! writes. Each is allocated once, at its size: queues and logs bound the
//! bytes they hold by frame lengths.

use bytes::Bytes;
use serde_json::Value;
use std::fmt::{self, Write};
use std::time::Duration;

/// The comment a quiet stream writes, so that its connection (and every
/// proxy on the way) does not time it out.
pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// One `data:` event with no id, its data written by `data` (one JSON
/// text, on one line), in one allocation of its size hint (`len`).
pub(crate) fn data(len: usize, data: fmt::Arguments<'_>) -> Bytes {
    let mut frame = String::with_capacity(6 + len + 2);
    frame.push_str("data: ");
    // Writing to a String cannot fail.
    let _ = frame.write_fmt(data);
    frame.push_str("\n\n");
    Bytes::from(frame)
}

/// One SSE event carrying a JSON-RPC message. The frame is allocated at
/// its exact size: queues and logs bound the bytes they hold by frame
/// lengths, which are then what the frames take.
pub(crate) fn event(id: impl fmt::Display, message: &Value) -> Bytes {
    let data = serde_json::to_vec(message).unwrap_or_default();
    let id = id.to_string();
    let mut frame = Vec::with_capacity(4 + id.len() + 7 + data.len() + 2);
    frame.extend_from_slice(b"id: ");
    frame.extend_from_slice(id.as_bytes());
    frame.extend_from_slice(b"\ndata: ");
    frame.extend_from_slice(&data);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

/// The priming event: an id to resume from, the reconnection delay, and
/// empty data (2025-11-25, "Sending Messages to the Server" 6).
pub(crate) fn priming(id: impl fmt::Display, retry: Option<Duration>) -> Bytes {
    match retry {
        Some(retry) => Bytes::from(format!(
            "id: {id}\nretry: {}\ndata: \n\n",
            retry.as_millis()
        )),
        None => Bytes::from(format!("id: {id}\ndata: \n\n")),
    }
}

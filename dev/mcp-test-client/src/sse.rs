//! Server-sent events: an [`SseStream`] read one JSON-RPC message at a
//! time, and helpers over the raw text of a stream ([`read_sse`],
//! [`sse_events`], [`sse_ids`]). One parser of an event's fields serves
//! them all.

use crate::error::Error;
use http::HeaderMap;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;
use std::time::Duration;

/// The fields of one event (a block of lines up to a blank line) that MCP
/// uses; comments (`: ...`, keep-alives) and other fields are skipped.
#[derive(Default)]
struct Event {
    id: Option<String>,
    /// Its `data` lines, joined by `\n`; `None` if it has none.
    data: Option<String>,
    retry: Option<u64>,
}

impl Event {
    fn parse(block: &str) -> Event {
        let mut event = Event::default();
        for line in block.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            // One space after the colon is part of the syntax.
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => event.id = Some(value.trim().to_string()),
                "data" => match &mut event.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(value);
                    }
                    None => event.data = Some(value.to_string()),
                },
                "retry" => event.retry = value.trim().parse().ok(),
                _ => {}
            }
        }
        event
    }
}

/// Whether `headers` announce an SSE stream.
pub(crate) fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// An SSE stream being read: JSON-RPC messages one at a time.
pub struct SseStream {
    body: Incoming,
    buffer: String,
}

impl SseStream {
    /// The stream of a response's body (a POST answered over SSE, or a GET
    /// stream).
    pub fn new(body: Incoming) -> SseStream {
        SseStream {
            body,
            buffer: String::new(),
        }
    }

    /// The next message; `Ok(None)` when the stream ends. Comments
    /// (keep-alives) and events without data (a 2025-11-25 priming event:
    /// an id to resume from) are skipped.
    pub async fn next(&mut self) -> Result<Option<Value>, Error> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let data = Event::parse(&block).data.unwrap_or_default();
                if data.trim().is_empty() {
                    continue;
                }
                return serde_json::from_str(&data)
                    .map(Some)
                    .map_err(Error::transport);
            }
            match self.body.frame().await {
                None => return Ok(None),
                Some(Err(error)) => return Err(Error::transport(error)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buffer.push_str(&String::from_utf8_lossy(&data));
                    }
                }
            }
        }
    }

    /// The next message, or an error if none comes within `bound` (a
    /// safety net against a stream that never delivers, not a measure).
    pub async fn next_within(&mut self, bound: Duration) -> Result<Option<Value>, Error> {
        tokio::time::timeout(bound, self.next())
            .await
            .map_err(|_| Error::Transport(format!("no SSE event within {bound:?}")))?
    }

    /// Reads until the response to request `id`.
    pub async fn response(&mut self, id: &Value) -> Result<Value, Error> {
        while let Some(message) = self.next().await? {
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return Ok(message);
            }
        }
        Err(Error::Transport(
            "the SSE stream ended before the response".into(),
        ))
    }
}

/// Reads SSE text from a streaming body until `done` says the text so far
/// is enough, the body ends, or the deadline passes. Returns the text and
/// whether the body ended.
pub async fn read_sse(
    body: &mut Incoming,
    deadline: Duration,
    done: impl Fn(&str) -> bool,
) -> (String, bool) {
    let mut text = String::new();
    let until = tokio::time::Instant::now() + deadline;
    loop {
        if done(&text) {
            return (text, false);
        }
        match tokio::time::timeout_at(until, body.frame()).await {
            Err(_) => return (text, false),
            Ok(None) => return (text, true),
            Ok(Some(Err(e))) => panic!("stream error: {e}"),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    text.push_str(std::str::from_utf8(&data).unwrap());
                }
            }
        }
    }
}

/// The `(id, data)` of each event in SSE text that carries a message (the
/// priming event, with empty data, is left out, as is an event cut short).
pub fn sse_events(text: &str) -> Vec<(Option<String>, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let event = Event::parse(block);
            let data = serde_json::from_str(event.data.as_deref()?).ok()?;
            Some((event.id, data))
        })
        .collect()
}

/// The `(id, retry)` of each event in SSE text that has an id, priming
/// events included.
pub fn sse_ids(text: &str) -> Vec<(String, Option<u64>)> {
    text.split("\n\n")
        .filter_map(|block| {
            let event = Event::parse(block);
            Some((event.id?, event.retry))
        })
        .collect()
}

/// `(stream, seq)` of an event id `STREAM-SEQ`.
pub fn id_parts(id: &str) -> (u64, u64) {
    let (stream, seq) = id.split_once('-').expect("STREAM-SEQ");
    (stream.parse().unwrap(), seq.parse().unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_ids_and_retries() {
        let text = "id: 0-0\nretry: 500\ndata: \n\n: keep-alive\n\n\
                    id: 0-1\ndata: {\"a\":1}\n\nid: 0-2\ndata: {\"b\"";
        assert_eq!(
            sse_events(text),
            vec![(Some("0-1".to_string()), serde_json::json!({ "a": 1 }))]
        );
        assert_eq!(
            sse_ids(text),
            vec![
                ("0-0".to_string(), Some(500)),
                ("0-1".to_string(), None),
                ("0-2".to_string(), None),
            ]
        );
        assert_eq!(id_parts("3-14"), (3, 14));
    }

    #[test]
    fn data_lines_join() {
        let event = Event::parse("data:{\"a\":\ndata: 1}");
        assert_eq!(event.data.as_deref(), Some("{\"a\":\n1}"));
    }
}

//! Answers: a [`Reply`] read whole (what the plain methods return), and a
//! POST's answer by kind ([`Posted`], what the `try_` methods look at).

use crate::error::Error;
use crate::sse::{self, SseStream};
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;
use std::borrow::Cow;

/// A body, read whole.
pub(crate) async fn read_all(body: Incoming) -> Result<Bytes, Error> {
    Ok(body.collect().await.map_err(Error::transport)?.to_bytes())
}

/// A response, read whole.
#[derive(Debug)]
pub struct Reply {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
}

impl Reply {
    /// `response`, its body read whole.
    pub(crate) async fn read(response: http::Response<Incoming>) -> Result<Reply, Error> {
        let (parts, body) = response.into_parts();
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body: read_all(body).await?,
        })
    }

    /// The body as JSON; panics (showing the body) if it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    /// The body as text.
    pub fn text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }

    /// The `MCP-Session-Id` header, if any.
    pub fn session_id(&self) -> Option<String> {
        self.headers
            .get("mcp-session-id")
            .map(|v| v.to_str().expect("a visible ASCII id").to_string())
    }

    /// Whether the body is an SSE stream.
    pub fn is_sse(&self) -> bool {
        sse::is_sse(&self.headers)
    }

    /// The JSON-RPC messages in the body: the body itself if it is JSON,
    /// else the data of every event of the SSE stream that holds one.
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(value) = serde_json::from_slice::<Value>(&self.body) {
            return vec![value];
        }
        sse::sse_events(&self.text())
            .into_iter()
            .map(|(_, data)| data)
            .collect()
    }

    /// The one message with a `result` or an `error`, from a JSON body or
    /// an SSE stream.
    pub fn answer(&self) -> Option<Value> {
        self.messages()
            .into_iter()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
    }
}

/// The answer to a POST, by kind.
pub enum Posted {
    /// `application/json`: one JSON-RPC message.
    Json(Value),
    /// 202: a notification or response was taken.
    Accepted,
    /// `text/event-stream`: messages until the response.
    Stream(SseStream),
}

//! The `try_` methods of [`Client`]: each MCP operation's outcome, or a
//! typed [`Error`] saying why not (see the [crate docs](crate)).

use crate::client::Client;
use crate::error::Error;
use crate::messages;
use crate::reply::{read_all, Posted};
use crate::session::Session;
use crate::sse::{self, SseStream};
use bytes::Bytes;
use http::StatusCode;
use hyper::body::Incoming;
use serde_json::Value;
use std::time::Duration;

/// The body of a response the caller has no more use for than an error
/// message (empty if it cannot be read).
async fn drain(response: http::Response<Incoming>) -> Bytes {
    read_all(response.into_body()).await.unwrap_or_default()
}

impl Client {
    /// Posts one JSON-RPC message, in `session` if given: a JSON answer,
    /// 202, or the open SSE stream.
    pub async fn try_post(
        &self,
        session: Option<&Session>,
        message: &Value,
    ) -> Result<Posted, Error> {
        let request = self.post_request(session.map(Session::id), message.to_string());
        self.try_post_request(request, session.is_some()).await
    }

    /// Sends a POST made already: a JSON answer, 202, or the open SSE
    /// stream; a 404 is [`Error::SessionGone`] if `in_session`.
    pub(crate) async fn try_post_request(
        &self,
        request: http::Request<http_body_util::Full<Bytes>>,
        in_session: bool,
    ) -> Result<Posted, Error> {
        let response = self.try_send_raw(request).await?;
        match response.status() {
            StatusCode::ACCEPTED => Ok(Posted::Accepted),
            StatusCode::OK if sse::is_sse(response.headers()) => {
                Ok(Posted::Stream(SseStream::new(response.into_body())))
            }
            StatusCode::OK => {
                let body = read_all(response.into_body()).await?;
                serde_json::from_slice(&body)
                    .map(Posted::Json)
                    .map_err(Error::transport)
            }
            StatusCode::NOT_FOUND if in_session => Err(Error::SessionGone),
            status => Err(Error::unexpected(status, &drain(response).await)),
        }
    }

    /// Posts a request and waits for its response (from a JSON body or at
    /// the end of an SSE stream): the `result`, or the error.
    pub async fn request_result(
        &self,
        session: Option<&Session>,
        message: &Value,
    ) -> Result<Value, Error> {
        response_result(self.try_post(session, message).await?, message).await
    }

    /// Sends a notification in `session`; it must be taken (202).
    pub async fn notify(&self, session: &Session, notification: &Value) -> Result<(), Error> {
        match self.try_post(Some(session), notification).await? {
            Posted::Accepted => Ok(()),
            _ => Err(Error::Transport(format!(
                "{} not answered 202",
                notification["method"]
            ))),
        }
    }

    /// Starts a session: `initialize`, then `notifications/initialized`.
    pub async fn try_open(&self) -> Result<Session, Error> {
        let message = messages::initialize_at(self.name(), self.protocol_version());
        let request = self.post_request(None, message.to_string());
        let response = self.try_send_raw(request).await?;
        let status = response.status();
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = read_all(response.into_body()).await?;
        let session = match (status, id) {
            (StatusCode::OK, Some(id)) => Session::new(id),
            (StatusCode::OK, None) => {
                return Err(Error::Transport("initialize answered without an id".into()))
            }
            (status, _) => return Err(Error::unexpected(status, &body)),
        };
        self.notify(&session, &messages::initialized()).await?;
        Ok(session)
    }

    /// Like [`try_open`](Self::try_open), but sends it again while the
    /// answer is one that created nothing and invites a retry (503 with
    /// `Retry-After`: every node full or draining, or the balancer found
    /// none up; 502: the node failed before answering), up to `attempts`.
    /// Returns the session and how many retries it took.
    pub async fn open_retrying(&self, attempts: u32) -> Result<(Session, u32), Error> {
        let mut retries = 0;
        loop {
            match self.try_open().await {
                Err(Error::Status(status, _))
                    if retries + 1 < attempts
                        && matches!(
                            status,
                            StatusCode::SERVICE_UNAVAILABLE | StatusCode::BAD_GATEWAY
                        ) =>
                {
                    retries += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => return Err(error),
                Ok(session) => return Ok((session, retries)),
            }
        }
    }

    /// Calls a tool: its result.
    pub async fn try_call(
        &self,
        session: &Session,
        id: u64,
        tool: &str,
        arguments: Value,
    ) -> Result<Value, Error> {
        self.request_result(Some(session), &messages::tool_call(id, tool, arguments))
            .await
    }

    /// Calls a tool and returns the open SSE reply, unread (the tool must
    /// answer with a stream).
    pub async fn call_streaming(
        &self,
        session: &Session,
        id: u64,
        tool: &str,
        arguments: Value,
    ) -> Result<SseStream, Error> {
        let call = messages::tool_call(id, tool, arguments);
        match self.try_post(Some(session), &call).await? {
            Posted::Stream(stream) => Ok(stream),
            Posted::Json(value) => Err(Error::Transport(format!(
                "expected an SSE reply, got JSON {value}"
            ))),
            Posted::Accepted => Err(Error::Transport("expected an SSE reply, got 202".into())),
        }
    }

    /// Opens the session's standalone `GET` stream.
    pub async fn try_open_stream(&self, session: &Session) -> Result<SseStream, Error> {
        let response = self
            .try_send_raw(self.get_request(session.id(), None))
            .await?;
        match response.status() {
            StatusCode::OK if sse::is_sse(response.headers()) => {
                Ok(SseStream::new(response.into_body()))
            }
            StatusCode::NOT_FOUND => Err(Error::SessionGone),
            status => Err(Error::unexpected(status, &drain(response).await)),
        }
    }

    /// Ends the session (`DELETE`, any 2xx); [`Error::SessionGone`] if it
    /// was already gone.
    pub async fn try_delete(&self, session: &Session) -> Result<(), Error> {
        let response = self.try_send_raw(self.delete_request(session.id())).await?;
        let status = response.status();
        let body = drain(response).await;
        match status {
            status if status.is_success() => Ok(()),
            StatusCode::NOT_FOUND => Err(Error::SessionGone),
            status => Err(Error::unexpected(status, &body)),
        }
    }
}

/// The `result` of the response to `message` in `posted` (a JSON body, or
/// at the end of an SSE stream), or its JSON-RPC error.
pub(crate) async fn response_result(posted: Posted, message: &Value) -> Result<Value, Error> {
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let response = match posted {
        Posted::Json(value) => value,
        Posted::Stream(mut stream) => stream.response(&id).await?,
        Posted::Accepted => {
            return Err(Error::Transport(
                "202 to a request: no response".to_string(),
            ))
        }
    };
    match (response.get("result"), response.get("error")) {
        (Some(result), _) => Ok(result.clone()),
        (None, Some(error)) => Err(Error::Rpc(error.clone())),
        (None, None) => Err(Error::Transport(format!("not a response: {response}"))),
    }
}

//! A small MCP client (streamable HTTP, protocol 2025-11-25) that does what
//! the spec asks of a client when its session is gone and the official SDKs
//! do not yet do (python-sdk #1676, typescript-sdk #1708): on a 404 to a
//! request that carried a session id, start a new session with
//! `initialize` and send the request again in it.
//!
//! Behind a fleet this is what keeps a client working when the node that
//! owned its session died: the balancer sends the request to another node,
//! which answers 404, and [`Resilient::call`] re-initializes there.

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::fmt;
use std::time::Duration;

/// The protocol version this client speaks.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// An HTTP/1.1 client with a connection pool.
pub type Http = HyperClient<HttpConnector, Full<Bytes>>;

/// A new HTTP client.
pub fn http() -> Http {
    HyperClient::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build_http()
}

/// `METHOD url` with an empty body, read whole: the status and the body as
/// text (metrics, health probes, the admin endpoint).
pub async fn fetch_text(
    http: &Http,
    method: Method,
    url: &str,
) -> Result<(StatusCode, String), Error> {
    let request = Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::new()))
        .map_err(|e| Error::Transport(e.to_string()))?;
    let response = http.request(request).await.map_err(Error::transport)?;
    let status = response.status();
    let body = read_all(response.into_body()).await?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

async fn read_all(body: Incoming) -> Result<Bytes, Error> {
    Ok(body.collect().await.map_err(Error::transport)?.to_bytes())
}

/// What went wrong with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// 404 to a request with a session id: the session is gone (ended, or
    /// its node is). Start a new one.
    SessionGone,
    /// Any other HTTP status than the one expected, with the body's start.
    Status(StatusCode, String),
    /// The connection closed before the response came: the outcome is
    /// unknown, as with a 502. (HAProxy answers so, instead of 502, for a
    /// request it sent on a reused connection to a node that died: its
    /// `http-reuse safe` lets the client decide whether to send it again.)
    Closed,
    /// The connection failed, or the body could not be read or parsed.
    Transport(String),
    /// A JSON-RPC error answer.
    Rpc(Value),
}

impl Error {
    /// A transport error, with its chain of causes.
    fn transport(error: impl std::error::Error) -> Error {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        Error::Transport(text)
    }

    /// Whether the request failed where its node died: 502 from the
    /// balancer, or the connection closed before any response.
    pub fn is_lost_in_flight(&self) -> bool {
        matches!(self, Error::Closed) || self.status() == Some(StatusCode::BAD_GATEWAY)
    }

    /// The HTTP status, for a status error (404 for `SessionGone`).
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            Error::SessionGone => Some(StatusCode::NOT_FOUND),
            Error::Status(status, _) => Some(*status),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::SessionGone => f.write_str("404: session gone"),
            Error::Status(status, body) => write!(f, "HTTP {status}: {body}"),
            Error::Closed => f.write_str("the connection closed before the response"),
            Error::Transport(error) => write!(f, "transport: {error}"),
            Error::Rpc(error) => write!(f, "JSON-RPC error: {error}"),
        }
    }
}

impl std::error::Error for Error {}

/// One MCP endpoint (here: the balancer's) and the client's name.
#[derive(Clone)]
pub struct Client {
    http: Http,
    url: String,
    name: String,
}

/// An open session: its id, and the node that owns it (the id's first two
/// hex digits).
#[derive(Clone, PartialEq, Eq)]
pub struct Session {
    id: String,
}

impl Session {
    /// The session that `id` names (the `MCP-Session-Id` value).
    pub fn new(id: String) -> Session {
        Session { id }
    }

    /// The `MCP-Session-Id` header value. It grants access to the session:
    /// never log it whole.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The node that minted the id: its first two hex digits.
    pub fn node(&self) -> Option<u8> {
        self.id
            .get(..2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The node and a few digits: enough to tell sessions apart in a
        // log, not enough to use one.
        write!(f, "Session({}…)", self.id.get(..6).unwrap_or(&self.id))
    }
}

/// The answer to a POST: a JSON body, 202, or an SSE stream.
pub enum Answer {
    /// `application/json`: one JSON-RPC message.
    Json(Value),
    /// 202: a notification or response was taken.
    Accepted,
    /// `text/event-stream`: messages until the response.
    Stream(SseStream),
}

impl Client {
    /// A client of the MCP endpoint at `url`, introducing itself as `name`.
    pub fn new(http: Http, url: &str, name: &str) -> Client {
        Client {
            http,
            url: url.to_string(),
            name: name.to_string(),
        }
    }

    fn request(&self, method: Method, session: Option<&Session>) -> http::request::Builder {
        let mut request = Request::builder()
            .method(method)
            .uri(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session.id())
                .header("mcp-protocol-version", PROTOCOL_VERSION);
        }
        request
    }

    async fn send(
        &self,
        request: http::request::Builder,
        body: Bytes,
    ) -> Result<http::Response<Incoming>, Error> {
        let request = request
            .body(Full::new(body))
            .map_err(|e| Error::Transport(e.to_string()))?;
        self.http.request(request).await.map_err(|error| {
            let closed = std::error::Error::source(&error)
                .and_then(|e| e.downcast_ref::<hyper::Error>())
                .is_some_and(hyper::Error::is_incomplete_message);
            if closed {
                Error::Closed
            } else {
                Error::transport(error)
            }
        })
    }

    /// Posts one JSON-RPC message, in `session` if given.
    pub async fn post(&self, session: Option<&Session>, message: &Value) -> Result<Answer, Error> {
        let response = self
            .send(
                self.request(Method::POST, session),
                Bytes::from(message.to_string()),
            )
            .await?;
        let status = response.status();
        let headers = response.headers().clone();
        match status {
            StatusCode::ACCEPTED => Ok(Answer::Accepted),
            StatusCode::OK if is_sse(&headers) => {
                Ok(Answer::Stream(SseStream::new(response.into_body())))
            }
            StatusCode::OK => {
                let body = read_all(response.into_body()).await?;
                serde_json::from_slice(&body)
                    .map(Answer::Json)
                    .map_err(Error::transport)
            }
            StatusCode::NOT_FOUND if session.is_some() => Err(Error::SessionGone),
            other => {
                let body = read_all(response.into_body()).await.unwrap_or_default();
                Err(Error::Status(other, snippet(&body)))
            }
        }
    }

    /// Posts a request and waits for its response (from a JSON body or at
    /// the end of an SSE stream): the `result`, or the error.
    pub async fn request_result(
        &self,
        session: Option<&Session>,
        message: &Value,
    ) -> Result<Value, Error> {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let response = match self.post(session, message).await? {
            Answer::Json(value) => value,
            Answer::Stream(mut stream) => stream.response(&id).await?,
            Answer::Accepted => {
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

    /// Starts a session: `initialize`, then `notifications/initialized`.
    pub async fn initialize(&self) -> Result<Session, Error> {
        let message = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": { "name": self.name, "version": "1" },
            },
        });
        let response = self
            .send(
                self.request(Method::POST, None),
                Bytes::from(message.to_string()),
            )
            .await?;
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
            (status, _) => return Err(Error::Status(status, snippet(&body))),
        };
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        match self.post(Some(&session), &initialized).await? {
            Answer::Accepted => Ok(session),
            _ => Err(Error::Transport(
                "notifications/initialized not answered 202".into(),
            )),
        }
    }

    /// Like [`initialize`](Self::initialize), but sends it again while the
    /// answer is one that created nothing and invites a retry (503 with
    /// `Retry-After`: every node full or draining, or the balancer found
    /// none up; 502: the node failed before answering), up to `attempts`.
    /// Returns the session and how many retries it took.
    pub async fn initialize_retrying(&self, attempts: u32) -> Result<(Session, u32), Error> {
        let mut retries = 0;
        loop {
            match self.initialize().await {
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
    pub async fn call(
        &self,
        session: &Session,
        id: u64,
        tool: &str,
        arguments: Value,
    ) -> Result<Value, Error> {
        self.request_result(Some(session), &tool_call(id, tool, arguments))
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
        match self
            .post(Some(session), &tool_call(id, tool, arguments))
            .await?
        {
            Answer::Stream(stream) => Ok(stream),
            Answer::Json(value) => Err(Error::Transport(format!(
                "expected an SSE reply, got JSON {value}"
            ))),
            Answer::Accepted => Err(Error::Transport("expected an SSE reply, got 202".into())),
        }
    }

    /// Opens the session's standalone `GET` stream.
    pub async fn open_stream(&self, session: &Session) -> Result<SseStream, Error> {
        let request = self
            .request(Method::GET, Some(session))
            .header("accept", "text/event-stream");
        let response = self.send(request, Bytes::new()).await?;
        match response.status() {
            StatusCode::OK if is_sse(response.headers()) => {
                Ok(SseStream::new(response.into_body()))
            }
            StatusCode::NOT_FOUND => Err(Error::SessionGone),
            status => {
                let body = read_all(response.into_body()).await.unwrap_or_default();
                Err(Error::Status(status, snippet(&body)))
            }
        }
    }

    /// Ends the session (`DELETE`); 404 if it was already gone.
    pub async fn delete(&self, session: &Session) -> Result<(), Error> {
        let response = self
            .send(self.request(Method::DELETE, Some(session)), Bytes::new())
            .await?;
        let status = response.status();
        let body = read_all(response.into_body()).await.unwrap_or_default();
        match status {
            StatusCode::OK | StatusCode::NO_CONTENT => Ok(()),
            StatusCode::NOT_FOUND => Err(Error::SessionGone),
            status => Err(Error::Status(status, snippet(&body))),
        }
    }
}

/// A `tools/call` request.
pub fn tool_call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments },
    })
}

/// The text of a tool result's first content item.
pub fn result_text(result: &Value) -> Option<&str> {
    result.pointer("/content/0/text").and_then(Value::as_str)
}

fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.chars().take(200).collect()
}

/// A session kept alive across the loss of its node: every call that finds
/// the session gone (404) starts a new one and is sent again in it, once,
/// as the MCP spec asks of clients ("Session Management": a client that
/// gets 404 to a request with a session id MUST start a new session).
pub struct Resilient {
    client: Client,
    session: Session,
    next_id: u64,
    /// Sessions started because the previous one was gone.
    pub reinitialized: Vec<Reinit>,
}

/// One re-initialization: the node of the session that was gone, and the
/// node of the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reinit {
    /// The node of the lost session.
    pub from: Option<u8>,
    /// The node that took the new session.
    pub to: Option<u8>,
}

impl Resilient {
    /// Starts a session.
    pub async fn start(client: Client) -> Result<Resilient, Error> {
        let (session, _) = client.initialize_retrying(20).await?;
        Ok(Resilient {
            client,
            session,
            next_id: 1,
            reinitialized: Vec::new(),
        })
    }

    /// The current session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Calls a tool; if the session is gone, starts a new one and calls it
    /// there. A tool with side effects would need the application's own
    /// idempotency here: this client sends the call again only after a 404,
    /// which the server answers before running anything.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, Error> {
        self.next_id += 1;
        match self
            .client
            .call(&self.session, self.next_id, tool, arguments.clone())
            .await
        {
            Err(Error::SessionGone) => {
                let (session, _) = self.client.initialize_retrying(20).await?;
                self.reinitialized.push(Reinit {
                    from: self.session.node(),
                    to: session.node(),
                });
                self.session = session;
                self.next_id += 1;
                self.client
                    .call(&self.session, self.next_id, tool, arguments)
                    .await
            }
            other => other,
        }
    }

    /// Ends the session.
    pub async fn delete(self) -> Result<(), Error> {
        self.client.delete(&self.session).await
    }
}

/// An SSE stream being read: JSON-RPC messages one at a time.
pub struct SseStream {
    body: Incoming,
    buffer: String,
}

impl SseStream {
    fn new(body: Incoming) -> SseStream {
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
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                let data = data.join("\n");
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

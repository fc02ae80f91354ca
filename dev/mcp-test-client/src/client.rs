//! The [`Client`]: one MCP endpoint, how to speak to it, and the plain
//! methods (every status is an answer; see the [crate docs](crate)).

use crate::error::Error;
use crate::messages::{self, ACCEPT_BOTH, PROTOCOL_VERSION};
use crate::metrics;
use crate::pool::{http, Http};
use crate::reply::Reply;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use serde_json::Value;
use std::collections::HashMap;

/// A client of one MCP endpoint (streamable HTTP).
///
/// By default it introduces itself as `client`, initializes at
/// [`PROTOCOL_VERSION`] and sends no `MCP-Protocol-Version` header, so a
/// server's handling of the header's absence is what tests see unless they
/// ask otherwise ([`with_protocol_version`](Self::with_protocol_version)).
/// Clones share the connection pool.
#[derive(Clone)]
pub struct Client {
    http: Http,
    /// The MCP endpoint, e.g. `http://127.0.0.1:8080/mcp`.
    pub url: String,
    /// Sent with every request (e.g. `authorization`).
    headers: Vec<(String, String)>,
    /// `clientInfo.name` of its `initialize`.
    name: String,
    /// The protocol version of its `initialize`.
    version: String,
    /// Whether requests in a session carry `MCP-Protocol-Version: version`.
    version_header: bool,
}

impl Client {
    /// A client of `url` with a connection pool of its own.
    pub fn new(url: &str) -> Client {
        Client::with_http(http(), url)
    }

    /// A client of `url` on `http`'s connection pool.
    pub fn with_http(http: Http, url: &str) -> Client {
        Client {
            http,
            url: url.to_string(),
            headers: Vec::new(),
            name: "client".to_string(),
            version: PROTOCOL_VERSION.to_string(),
            version_header: false,
        }
    }

    /// A client that sends `name: value` with every request.
    pub fn with_header(mut self, name: &str, value: &str) -> Client {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// A client of `url` that sends `Authorization: Bearer TOKEN` with every
    /// request.
    pub fn with_bearer(url: &str, token: &str) -> Client {
        Client::new(url).with_header("authorization", &format!("Bearer {token}"))
    }

    /// A client whose `initialize` introduces it as `name`.
    pub fn named(mut self, name: &str) -> Client {
        self.name = name.to_string();
        self
    }

    /// A client that initializes at `version` and, as the spec asks of a
    /// client after initialization, sends it in `MCP-Protocol-Version` with
    /// every request in a session.
    pub fn with_protocol_version(mut self, version: &str) -> Client {
        self.version = version.to_string();
        self.version_header = true;
        self
    }

    /// The name its `initialize` gives.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The protocol version its `initialize` asks for.
    pub fn protocol_version(&self) -> &str {
        &self.version
    }

    /// A request to the endpoint with the headers sent with every request.
    pub fn request(&self, method: Method) -> http::request::Builder {
        self.request_to(method, &self.url)
    }

    fn request_to(&self, method: Method, url: &str) -> http::request::Builder {
        let mut request = Request::builder().method(method).uri(url);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request
    }

    /// `request` in `session`, if one is given: its `MCP-Session-Id`, and
    /// the protocol version if this client sends it.
    fn in_session(
        &self,
        mut request: http::request::Builder,
        session: Option<&str>,
    ) -> http::request::Builder {
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
            if self.version_header {
                request = request.header("mcp-protocol-version", &self.version);
            }
        }
        request
    }

    /// A JSON-RPC POST: `body` with the JSON content type and `Accept` for
    /// both answers, in `session` if given.
    pub fn post_request(
        &self,
        session: Option<&str>,
        body: impl Into<Bytes>,
    ) -> Request<Full<Bytes>> {
        let request = self
            .request(Method::POST)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH);
        self.in_session(request, session)
            .body(Full::new(body.into()))
            .expect("a valid request")
    }

    /// A 2026-07-28 POST of `body` (give it its `_meta` with
    /// [`with_meta`](crate::with_meta)): the JSON content type, `Accept`
    /// for both answers, `MCP-Protocol-Version: 2026-07-28`, and `headers`
    /// (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` as the test wants them; no
    /// session).
    pub async fn post_modern(&self, body: &Value, headers: &[(&str, &str)]) -> Reply {
        self.send(self.modern_request(body.to_string(), headers))
            .await
    }

    /// The request [`post_modern`](Self::post_modern) sends, of a body's
    /// text as it is (one a `Value` cannot hold, a member given twice, say),
    /// for a test to send as it likes.
    pub fn modern_request(
        &self,
        body: impl Into<Bytes>,
        headers: &[(&str, &str)],
    ) -> Request<Full<Bytes>> {
        let mut request = self
            .request(Method::POST)
            .header("content-type", "application/json")
            .header("accept", ACCEPT_BOTH)
            .header("mcp-protocol-version", crate::MODERN_VERSION);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
            .body(Full::new(body.into()))
            .expect("a valid request")
    }

    /// The `GET` that opens `session`'s standalone SSE stream, resuming
    /// after `last_event_id` if given.
    pub fn get_request(&self, session: &str, last_event_id: Option<&str>) -> Request<Full<Bytes>> {
        let request = self
            .request(Method::GET)
            .header("accept", "text/event-stream");
        let mut request = self.in_session(request, Some(session));
        if let Some(last) = last_event_id {
            request = request.header("last-event-id", last);
        }
        request.body(Full::default()).expect("a valid request")
    }

    /// The `DELETE` that ends `session`.
    pub fn delete_request(&self, session: &str) -> Request<Full<Bytes>> {
        self.in_session(self.request(Method::DELETE), Some(session))
            .body(Full::default())
            .expect("a valid request")
    }

    /// Sends a request; returns the response with its body still unread.
    /// Panics if no response came.
    pub async fn send_raw(&self, request: Request<Full<Bytes>>) -> http::Response<Incoming> {
        self.try_send_raw(request)
            .await
            .unwrap_or_else(|e| panic!("request failed: {e}"))
    }

    /// Sends a request and reads the response whole. Panics if no response
    /// came, or its body could not be read.
    pub async fn send(&self, request: Request<Full<Bytes>>) -> Reply {
        self.try_send(request)
            .await
            .unwrap_or_else(|e| panic!("request failed: {e}"))
    }

    /// A POST of `body` (see [`post_request`](Self::post_request)).
    pub async fn post(&self, session: Option<&str>, body: &Value) -> Reply {
        self.post_text(session, body.to_string()).await
    }

    /// [`post`](Self::post) with a body of any text (JSON or not).
    pub async fn post_text(&self, session: Option<&str>, body: impl Into<Bytes>) -> Reply {
        self.send(self.post_request(session, body)).await
    }

    /// An `initialize` as this client's name; returns the session id.
    /// Panics unless the answer is 200 at the version asked for, with an
    /// `MCP-Session-Id`.
    pub async fn initialize(&self) -> String {
        self.initialize_as(&self.name).await
    }

    /// [`initialize`](Self::initialize), introducing itself as `name`.
    pub async fn initialize_as(&self, name: &str) -> String {
        let body = messages::initialize_at(name, &self.version);
        let reply = self.post(None, &body).await;
        assert_eq!(reply.status, StatusCode::OK, "initialize: {:?}", reply.body);
        let answer = reply.answer().unwrap_or_else(|| reply.json());
        assert_eq!(
            answer["result"]["protocolVersion"], self.version,
            "initialize: {answer}"
        );
        reply
            .session_id()
            .expect("initialize echoes MCP-Session-Id")
    }

    /// `notifications/initialized` in `session`.
    pub async fn initialized(&self, session: &str) -> Reply {
        self.post(Some(session), &messages::initialized()).await
    }

    /// A session ready for use: [`initialize`](Self::initialize), then
    /// `notifications/initialized` (which must get 202); its id.
    pub async fn open(&self) -> String {
        let id = self.initialize().await;
        let ack = self.initialized(&id).await;
        assert_eq!(ack.status, StatusCode::ACCEPTED, "initialized: {ack:?}");
        id
    }

    /// A `tools/call` of `tool` in `session` (JSON-RPC id 7).
    pub async fn call(&self, session: &str, tool: &str, arguments: Value) -> Reply {
        self.post(Some(session), &messages::tool_call(7, tool, arguments))
            .await
    }

    /// `DELETE` of `session`.
    pub async fn delete(&self, session: &str) -> Reply {
        self.send(self.delete_request(session)).await
    }

    /// Opens `session`'s standalone GET stream (resuming after
    /// `last_event_id` if given); the body is left unread, and the stream
    /// stays open until it is dropped.
    pub async fn open_stream(
        &self,
        session: &str,
        last_event_id: Option<&str>,
    ) -> http::Response<Incoming> {
        self.send_raw(self.get_request(session, last_event_id))
            .await
    }

    /// `GET /metrics` beside the endpoint (its path's `/mcp` replaced), as
    /// a map of sample (name and labels) to value. Panics unless it is 200.
    pub async fn metrics(&self) -> HashMap<String, f64> {
        let url = self.url.replace("/mcp", "/metrics");
        let request = self
            .request_to(Method::GET, &url)
            .body(Full::default())
            .expect("a valid request");
        let reply = self.send(request).await;
        assert_eq!(reply.status, StatusCode::OK, "/metrics: {reply:?}");
        metrics::samples(&reply.text())
    }

    /// Sends a request; the response with its body unread, or why none
    /// came.
    pub async fn try_send_raw(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<http::Response<Incoming>, Error> {
        self.http
            .request(request)
            .await
            .map_err(Error::from_request)
    }

    /// Sends a request and reads the response whole, or says why it could
    /// not.
    pub async fn try_send(&self, request: Request<Full<Bytes>>) -> Result<Reply, Error> {
        Reply::read(self.try_send_raw(request).await?).await
    }
}

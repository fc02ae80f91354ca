//! The requests the harness sends, the same bytes for every server: a
//! 2026-07-28 `subscriptions/listen` (or, to hyper alone, a `GET`), and
//! `tools/call`s on a keep-alive connection of their own (the setup, and
//! the call that publishes).

use crate::options::Kind;
use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Instant;

pub const SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";
const VERSION: &str = "2026-07-28";

/// A request's JSON-RPC body, with the 2026-07-28 `_meta`.
fn body(id: u64, method: &str, mut params: Value) -> Bytes {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "listen-bench", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    Bytes::from(
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string(),
    )
}

/// How a request names its target: `/mcp` with a `Host` header (HTTP/1.1),
/// or the absolute URI (HTTP/2's `:authority`).
#[derive(Clone, Copy)]
pub enum Target {
    H1,
    H2,
}

fn builder(addr: SocketAddr, target: Target, method: Method) -> http::request::Builder {
    match target {
        Target::H1 => Request::builder()
            .method(method)
            .uri("/mcp")
            .header("host", addr.to_string()),
        Target::H2 => Request::builder()
            .method(method)
            .uri(format!("http://{addr}/mcp")),
    }
}

/// The request that opens listener `id`: a `subscriptions/listen` of
/// `resources/updated` for `uri` (`None`: of `tools/list_changed`; request
/// id `id`, its subscription id), or, to hyper alone, a `GET` of an SSE
/// stream.
pub fn listen(
    kind: Kind,
    addr: SocketAddr,
    target: Target,
    id: u64,
    uri: Option<&str>,
) -> Request<Full<Bytes>> {
    if kind == Kind::Floor {
        return builder(addr, target, Method::GET)
            .header("accept", "text/event-stream")
            .body(Full::new(Bytes::new()))
            .expect("a request");
    }
    let notifications = match uri {
        Some(uri) => json!({ "notifications": { "resourceSubscriptions": [uri] } }),
        None => json!({ "notifications": { "toolsListChanged": true } }),
    };
    builder(addr, target, Method::POST)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(body(id, "subscriptions/listen", notifications)))
        .expect("a request")
}

fn tool_call(addr: SocketAddr, id: u64, name: &str, arguments: Value) -> Request<Full<Bytes>> {
    let mut builder = builder(addr, Target::H1, Method::POST);
    // The basket tools declare their `basket` argument as a header
    // (`x-mcp-header`): a 2026-07-28 call must carry it.
    if let Some(basket) = arguments["basket"].as_str() {
        builder = builder.header("mcp-param-basket", basket);
    }
    builder
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(Full::new(body(
            id,
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )))
        .expect("a request")
}

/// The JSON-RPC message of an answer: its JSON body, or the last `data:`
/// of an SSE one.
fn message(bytes: &[u8]) -> Option<Value> {
    if let Ok(value) = serde_json::from_slice(bytes) {
        return Some(value);
    }
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .next_back()
}

/// A keep-alive HTTP/1.1 connection for `tools/call`s.
pub struct Caller {
    addr: SocketAddr,
    sender: http1::SendRequest<Full<Bytes>>,
    next_id: u64,
}

impl Caller {
    pub async fn connect(addr: SocketAddr) -> Caller {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(conn);
        Caller {
            addr,
            sender,
            next_id: 1_000_000_000,
        }
    }

    /// `tools/call` of `name`: its result (checked: 200, a result for its
    /// id, not an error), when it was sent and when its answer was read
    /// whole.
    pub async fn call(&mut self, name: &str, arguments: Value) -> (Value, Instant, Instant) {
        self.next_id += 1;
        let id = self.next_id;
        let request = tool_call(self.addr, id, name, arguments);
        self.sender.ready().await.expect("the connection is open");
        let sent = Instant::now();
        let response = self
            .sender
            .send_request(request)
            .await
            .unwrap_or_else(|e| panic!("FAILED: tools/call {name}: {e}"));
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        let answered = Instant::now();
        let message = message(&bytes);
        let result = message
            .as_ref()
            .filter(|m| status == 200 && m["id"] == id && m["result"]["isError"] != true)
            .map(|m| m["result"].clone())
            .unwrap_or_else(|| {
                panic!(
                    "FAILED: tools/call {name}: {status} {}",
                    String::from_utf8_lossy(&bytes)
                )
            });
        (result, sent, answered)
    }
}

/// What a server's listeners listen to, and how to make it change: made on
/// a fresh server before anything is measured.
pub struct Topic {
    pub uri: String,
    /// The tool that publishes the URI's update, and its arguments.
    trigger: Option<(&'static str, Value)>,
}

impl Topic {
    pub async fn make(kind: Kind, caller: &mut Caller) -> Topic {
        match kind {
            Kind::Sessionreg => {
                let (result, _, _) = caller.call("basket_create", json!({})).await;
                let basket = result["structuredContent"]["basket"]
                    .as_str()
                    .unwrap_or_else(|| panic!("FAILED: basket_create answered {result}"))
                    .to_string();
                Topic {
                    uri: format!("basket://{basket}"),
                    trigger: Some(("basket_add", json!({ "basket": basket, "item": "x" }))),
                }
            }
            Kind::Peer => {
                let uri = "bench://listen".to_string();
                Topic {
                    trigger: Some(("publish", json!({ "uri": uri }))),
                    uri,
                }
            }
            Kind::Floor => Topic {
                uri: String::new(),
                trigger: None,
            },
        }
    }

    /// Makes the URI change (the server publishes its update): when the
    /// call was sent, and when its answer was read.
    pub async fn publish(&self, caller: &mut Caller) -> (Instant, Instant) {
        let (tool, arguments) = self.trigger.clone().expect("a server that publishes");
        let (_, sent, answered) = caller.call(tool, arguments).await;
        (sent, answered)
    }
}

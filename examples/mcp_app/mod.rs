//! The MCP application both example servers serve (`mcp_server` on hyper
//! through `sessionreg::http::serve`, `axum_server` mounted in axum), and
//! what the two share around it: the command-line flags, building the
//! manager from them, re-reading token and allow-list files on SIGHUP,
//! `/metrics`, and the shutdown signal. Included by each with
//! `#[path = "mcp_app/mod.rs"] mod mcp_app;`.
#![allow(dead_code)]

pub mod baskets;
pub mod bounds;
pub mod bus;
pub mod fleet;
pub mod oauth;
pub mod ops;
pub mod otel;

use baskets::flags::{BasketFlags, ITEMS_PER_BASKET, ITEM_BYTES};
use baskets::{Baskets, Owner, Refused, Unadded};
use futures_util::StreamExt;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use sessionreg::handles::Resolved;
use sessionreg::http::jsonrpc::{self, Message, Request, RpcError};
use sessionreg::http::modern::{InputRequests, MirroredParams};
use sessionreg::http::{self as mcp, App, Context, HandlerError, Reply};
use sessionreg::{Reason, SessionId};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// The application: stateless tools, a little per-session state, and
/// baskets: handles (SEP-2567) that keep state across calls without a
/// session, so they serve 2026-07-28 clients too (for which `ctx.state()`
/// is `None`).
pub struct Server {
    baskets: Baskets,
    /// Bytes of the client names the live sessions keep.
    client_names: Arc<AtomicUsize>,
    /// Tells the listeners of a basket (`basket://<id>`) that it changed.
    publisher: mcp::Publisher,
    /// The mirrored parameters (`x-mcp-header`) of `basket_add` and
    /// `basket_show`, built once from their input schemas; the layer checks
    /// a call's `Mcp-Param-*` headers against its body with them.
    add_params: Arc<MirroredParams>,
    show_params: Arc<MirroredParams>,
}

impl Server {
    /// The application, its baskets bounded as `flags` say (each
    /// principal, however authenticated, may keep its share of them, so
    /// none can take them all), their ids beginning with `node` as two hex
    /// digits.
    pub fn new(flags: &BasketFlags, node: u8) -> Result<Server, String> {
        Ok(Server {
            baskets: Baskets::new(flags, node)?,
            client_names: Arc::default(),
            publisher: mcp::Publisher::new(),
            add_params: mirrored(&basket_add_schema()),
            show_params: mirrored(&basket_show_schema()),
        })
    }

    /// The publisher the manager must be built with
    /// ([`Builder::publisher`](sessionreg::http::Builder::publisher)), so
    /// that the basket updates this application publishes reach its
    /// listeners.
    pub fn publisher(&self) -> mcp::Publisher {
        self.publisher.clone()
    }

    /// The baskets of `owner` still live, as resources.
    fn basket_resources(&self, owner: &Owner) -> Vec<Value> {
        self.baskets
            .listed(owner)
            .into_iter()
            .map(|id| {
                let uri = basket_uri(id);
                let name = format!("basket {}", &uri[BASKET_SCHEME.len()..][..8]);
                json!({
                    "uri": uri,
                    "name": name,
                    "mimeType": "text/plain",
                })
            })
            .collect()
    }
}

/// The URI scheme of a basket as a resource: `basket://<basket id>`.
const BASKET_SCHEME: &str = "basket://";

/// A basket's URI as a resource, in its one canonical form (the id's own
/// text): what `resources/list` shows, what `resources/read` answers with,
/// what an update is published under.
fn basket_uri(id: SessionId) -> String {
    format!("{BASKET_SCHEME}{id}")
}

/// Who may hear of a change to `owner`'s basket: its owner (or, on a
/// server without principals, everyone: they all share the anonymous
/// owner).
fn audience(owner: &Owner) -> mcp::Audience {
    match owner {
        Some(principal) => mcp::Audience::principal(principal.clone()),
        None => mcp::Audience::Everyone,
    }
}

/// One gauge of the application's, in Prometheus text.
fn gauge(out: &mut String, name: &str, help: &str, value: usize) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
    );
}

/// Bytes counted in a gauge for as long as this lives.
struct Counted {
    gauge: Arc<AtomicUsize>,
    bytes: usize,
}

impl Counted {
    fn new(gauge: &Arc<AtomicUsize>, bytes: usize) -> Counted {
        // Relaxed: a gauge read on its own, ordering nothing else.
        gauge.fetch_add(bytes, Ordering::Relaxed);
        Counted {
            gauge: Arc::clone(gauge),
            bytes,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.gauge.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// The most bytes of a client's name (`clientInfo.name`) a session keeps:
/// it is only ever logged, and a name of any length would otherwise be kept
/// for as long as the session lives.
pub const CLIENT_NAME_BYTES: usize = 64;

/// `name`, cut to at most [`CLIENT_NAME_BYTES`] on a character boundary.
fn bounded_name(name: &str) -> String {
    let mut end = name.len().min(CLIENT_NAME_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// What the server remembers about a session.
pub struct Client {
    /// The client's name, at most [`CLIENT_NAME_BYTES`].
    name: String,
    /// `name`'s bytes, in `mcp_app_client_name_bytes`.
    _counted: Counted,
    principal: Option<mcp::Principal>,
    initialized: AtomicBool,
    /// Wakes this session's `hold` call (a permit is kept if none waits).
    release: Arc<Notify>,
}

impl App for Server {
    type Session = Client;

    fn open(
        &self,
        initialize: &Request,
        request: &http::request::Parts,
    ) -> Result<Client, RpcError> {
        // The manager has checked the request's shape (params.protocolVersion).
        // Only `clientInfo.name` is read out, borrowed, in one pass; the rest
        // (the capabilities, the client's other fields) is walked over, not
        // built. A `clientInfo` that is no object fails the read: "unknown".
        #[derive(serde::Deserialize)]
        struct Initialize<'a> {
            #[serde(borrow, rename = "clientInfo")]
            client_info: Option<ClientInfo<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct ClientInfo<'a> {
            #[serde(borrow)]
            name: Option<&'a RawValue>,
        }
        let name = initialize
            .params_borrowed::<Initialize<'_>>()
            .ok()
            .and_then(|params| params.client_info)
            .and_then(|info| info.name)
            .and_then(jsonrpc::string_text)
            .map_or_else(|| "unknown".to_string(), |name| bounded_name(&name));
        Ok(Client {
            _counted: Counted::new(&self.client_names, name.len()),
            name,
            // With an authenticator, who opened the session (it is bound
            // to them).
            principal: mcp::Principal::of(request).cloned(),
            initialized: AtomicBool::new(false),
            release: Arc::new(Notify::new()),
        })
    }

    async fn handle(&self, ctx: Context<Client>, message: Message) -> Result<Reply, HandlerError> {
        match message {
            Message::Request(request) => Ok(answer(self, &ctx, request).await),
            Message::Notification(note) => {
                if note.method == "notifications/initialized" {
                    if let Some(client) = ctx.state() {
                        client.initialized.store(true, Ordering::Relaxed);
                    }
                }
                Ok(Reply::Accepted)
            }
            Message::Response(_) => Ok(Reply::Accepted),
        }
    }

    fn discovery(&self) -> mcp::modern::Discovery {
        mcp::modern::Discovery {
            capabilities: json!({ "tools": {}, "resources": { "subscribe": true } }),
            server_info: Some(server_info()),
            ..mcp::modern::Discovery::default()
        }
    }

    fn mirrored_params(&self, tool: &str) -> Option<Arc<MirroredParams>> {
        match tool {
            "basket_add" => Some(Arc::clone(&self.add_params)),
            "basket_show" => Some(Arc::clone(&self.show_params)),
            _ => None,
        }
    }

    fn reap(&self) {
        self.baskets.reap();
    }

    fn metrics(&self, out: &mut String) {
        sessionreg::metrics::write_handles(out, &self.baskets.stats());
        let baskets::ledger::Held {
            entries,
            owners,
            bytes,
        } = self.baskets.held();
        let names = self.client_names.load(Ordering::Relaxed);
        gauge(
            out,
            "mcp_app_baskets_indexed",
            "Baskets in the owners' lists (resources/list).",
            entries,
        );
        gauge(
            out,
            "mcp_app_basket_owners_indexed",
            "Owners with a list of baskets.",
            owners,
        );
        gauge(
            out,
            "mcp_app_basket_item_bytes",
            "Bytes the baskets' items hold (each item: its bytes and 24 more).",
            bytes,
        );
        gauge(
            out,
            "mcp_app_client_name_bytes",
            "Bytes of the client names (clientInfo.name) the live sessions keep.",
            names,
        );
    }

    fn closed(&self, id: &SessionId, client: &Client, reason: Reason) {
        // `?id`: the Debug form hides the id's secret.
        tracing::debug!(session = ?id, client = %client.name, principal = ?client.principal, %reason, "client gone");
    }
}

/// What `tools/call` reads of its params, borrowed from their text (the
/// rest, `_meta` among them, is skipped by the parser, not built; the
/// arguments are read by the tool that takes them).
#[derive(serde::Deserialize)]
struct ToolCall<'a> {
    #[serde(default, borrow)]
    name: Option<&'a RawValue>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

/// `echo`'s arguments, borrowed.
#[derive(serde::Deserialize)]
struct EchoArguments<'a> {
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
}

async fn answer(server: &Server, ctx: &Context<Client>, request: Request) -> Reply {
    // Params arrive as the client's raw JSON text: each method parses what
    // it reads, when it reads it.
    // At 2026-07-28 the layer answers `server/discover` (from `discovery`
    // below) and the removed methods (`initialize`, `ping`,
    // `logging/setLevel`) before this runs, and gives every result its
    // `resultType` and caching hints: this only answers what is the
    // application's.
    match request.method.as_str() {
        // The layer negotiates the version and puts it in the result.
        // The same every time: serialized once, copied out.
        "initialize" => Reply::Serialized(INITIALIZE_RESULT.clone()),
        // The layer records a session's resource subscriptions itself.
        "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            Reply::Result(json!({}))
        }
        "resources/list" => {
            let owner = ctx.principal().cloned();
            Reply::Result(json!({ "resources": server.basket_resources(&owner) }))
        }
        "resources/templates/list" => Reply::Result(json!({ "resourceTemplates": [{
            "uriTemplate": "basket://{basket}",
            "name": "basket",
            "description": "A basket's items, one per line (its owner only).",
            "mimeType": "text/plain",
        }]})),
        "resources/read" => read_basket(server, ctx, &request),
        "tools/list" => Reply::Result(json!({ "tools": [
            {
                "name": "echo",
                "description": "Returns its text argument.",
                "inputSchema": {
                    "type": "object",
                    "properties": { "text": { "type": "string" } },
                    "required": ["text"],
                },
            },
            {
                "name": "sleep",
                "description": "Waits the given number of milliseconds (at most 60000), then answers; a task for a client that supports tasks.",
                "inputSchema": {
                    "type": "object",
                    "properties": { "ms": { "type": "integer", "minimum": 0, "maximum": MAX_SLEEP_MS } },
                    "required": ["ms"],
                },
            },
            {
                "name": "running",
                "description": "Answers how many `sleep` calls are running in this server right now (all sessions).",
                "inputSchema": { "type": "object", "properties": {} },
            },
            {
                "name": "whoami",
                "description": "Answers who the request comes from (the principal: an OAuth token's ISSUER#SUBJECT, a static token's name, or `anonymous`) and the scopes its token grants.",
                "inputSchema": { "type": "object", "properties": {} },
            },
            {
                "name": "announce",
                "description": "Sends its text as a log message on the session's GET stream; answers whether a stream took it.",
                "inputSchema": {
                    "type": "object",
                    "properties": { "text": { "type": "string" } },
                    "required": ["text"],
                },
            },
            {
                "name": "hold",
                "description": "Answers over SSE: a log message at once, the result when the session calls `release`.",
                "inputSchema": { "type": "object", "properties": {} },
            },
            {
                "name": "release",
                "description": "Lets this session's `hold` call finish.",
                "inputSchema": { "type": "object", "properties": {} },
            },
            {
                "name": "notify",
                "description": "Sends `n` log notifications (each padded with `bytes` bytes; at most 4 MiB in all) on the session's GET stream; answers how many it took.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "n": { "type": "integer", "minimum": 0, "maximum": MAX_NOTIFY },
                        "bytes": { "type": "integer", "minimum": 0, "maximum": MAX_NOTIFY_BYTES },
                    },
                    "required": ["n"],
                },
            },
            {
                "name": "basket_create",
                "description": "Starts an empty basket; answers its id. Baskets expire after 1 hour unused.",
                "inputSchema": { "type": "object", "properties": {} },
            },
            {
                "name": "basket_add",
                "description": format!("Adds an item (at most {ITEM_BYTES} bytes) to a basket (at most {ITEMS_PER_BASKET} items)."),
                "inputSchema": basket_add_schema(),
            },
            {
                "name": "basket_show",
                "description": "Lists a basket's items, comma-separated.",
                "inputSchema": basket_show_schema(),
            },
            {
                "name": "confirm",
                "description": "Asks the user to confirm `action` (2026-07-28 clients only: an input-required answer with a form elicitation, its state sealed by the server; `once: true` makes that state single use), then answers `confirmed ACTION` or `declined ACTION`.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "action": { "type": "string", "maxLength": MAX_ACTION },
                        "once": { "type": "boolean" },
                    },
                    "required": ["action"],
                },
            },
            {
                "name": "test_reconnection",
                "description": "Closes its SSE connection mid-call, then answers on the resumed stream (SSE polling; the conformance suite's server-sse-polling scenario calls it).",
                "inputSchema": { "type": "object", "properties": {} },
            },
        ]})),
        "tools/call" => match ctx.modern().and_then(mcp::ModernRequest::call) {
            // At 2026-07-28 the layer has read the name and the arguments
            // out of the params (checking the name against Mcp-Name): no
            // second pass over them, the client's _meta most of their text.
            Some(call) => {
                call_tool(
                    server,
                    ctx,
                    &request.id,
                    call.name.as_deref(),
                    call.arguments,
                )
                .await
            }
            None => match request.params_borrowed::<ToolCall<'_>>() {
                Ok(call) => {
                    // A name that is not a string is no name.
                    let name = call.name.and_then(jsonrpc::string_text);
                    call_tool(server, ctx, &request.id, name.as_deref(), call.arguments).await
                }
                Err(error) => Reply::Error(error),
            },
        },
        other => Reply::Error(RpcError::method_not_found(other)),
    }
}

async fn call_tool(
    server: &Server,
    ctx: &Context<Client>,
    id: &Value,
    name: Option<&str>,
    arguments: Option<&RawValue>,
) -> Reply {
    if name == Some("echo") {
        // Read in place and answered as a text result: no tree either way.
        // Without `text`, an empty echo.
        let text = arguments.map_or("{}", RawValue::get);
        return match serde_json::from_str::<EchoArguments<'_>>(text).map(|echo| echo.text) {
            Ok(None) => text_reply(""),
            Ok(Some(text)) => match jsonrpc::string_text(text) {
                Some(text) => text_reply(text),
                None => Reply::Error(RpcError::invalid_params("echo's `text` must be a string")),
            },
            Err(error) => Reply::Error(RpcError::invalid_params(format!(
                "invalid arguments: {error}"
            ))),
        };
    }
    let args: Value = match arguments.map(|raw| serde_json::from_str(raw.get())) {
        None => json!({}),
        Some(Ok(args)) => args,
        Some(Err(error)) => {
            return Reply::Error(RpcError::invalid_params(format!(
                "invalid arguments: {error}"
            )))
        }
    };
    if let Some(reply) = name.and_then(|name| baskets(server, ctx, name, &args)) {
        return reply;
    }
    match name {
        // A task for a 2026-07-28 client that asks for tasks (it polls
        // `tasks/get`); for any other, the call's own answer.
        Some("sleep") => match args.get("ms").and_then(Value::as_u64) {
            Some(ms) if ms <= MAX_SLEEP_MS => {
                Reply::Task(mcp::TaskWork::new(move |_| async move {
                    let _running = Sleeping::start();
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(text_content(&format!("slept {ms} ms")))
                }))
            }
            _ => Reply::Error(RpcError::invalid_params(format!(
                "sleep needs an integer argument `ms`, at most {MAX_SLEEP_MS}"
            ))),
        },
        Some("confirm") => confirm(ctx, &args),
        Some("running") => text_reply(SLEEPING.load(Ordering::Relaxed).to_string()),
        Some("whoami") => {
            let who = ctx.principal().map_or("anonymous", |p| p.as_str());
            text_reply(&match ctx.scopes() {
                Some(scopes) if !scopes.is_empty() => format!("{who} {scopes}"),
                _ => who.to_string(),
            })
        }
        Some("announce") => match args.get("text").and_then(Value::as_str) {
            Some(text) => {
                let delivered = ctx.legacy().is_some_and(|l| l.notify(&log_message(text)));
                text_reply(if delivered {
                    "delivered"
                } else {
                    "no stream open"
                })
            }
            None => Reply::Error(RpcError::invalid_params(
                "announce needs a string argument `text`",
            )),
        },
        Some("hold") => match ctx.state() {
            Some(client) => hold(Arc::clone(&client.release), id.clone()),
            None => Reply::Error(RpcError::invalid_params("hold needs a session")),
        },
        Some("release") => match ctx.state() {
            Some(client) => {
                client.release.notify_one();
                text_reply("released")
            }
            None => Reply::Error(RpcError::invalid_params("release needs a session")),
        },
        Some("notify") => {
            let n = args.get("n").and_then(Value::as_u64).unwrap_or(0);
            let bytes = args.get("bytes").and_then(Value::as_u64).unwrap_or(0);
            if n > MAX_NOTIFY || bytes > MAX_NOTIFY_BYTES || n * bytes > MAX_NOTIFY_TOTAL {
                return Reply::Error(RpcError::invalid_params(format!(
                    "notify sends at most {MAX_NOTIFY} messages of at most \
                     {MAX_NOTIFY_BYTES} bytes, {MAX_NOTIFY_TOTAL} bytes in all"
                )));
            }
            let pad = "x".repeat(bytes as usize);
            // A stream that cannot take a message drops it (counted in
            // sessionreg_http_notifications_dropped_total): never waits.
            // Each message is serialised here, on a runtime worker: yield
            // between batches so the worker serves other requests too.
            let mut delivered = 0;
            for i in 0..n {
                let note = jsonrpc::notification_message(
                    "notifications/message",
                    json!({ "level": "info", "data": { "i": i, "pad": pad } }),
                );
                delivered += usize::from(ctx.legacy().is_some_and(|l| l.notify(&note)));
                if i % NOTIFY_BATCH == NOTIFY_BATCH - 1 {
                    tokio::task::yield_now().await;
                }
            }
            text_reply(format!("delivered {delivered} of {n}"))
        }
        Some("test_reconnection") => {
            // The client gets the priming event, then the connection
            // closes; the answer waits in the stream's log for its GET +
            // Last-Event-ID. Without a resumable stream (no event log, or
            // a client older than 2025-11-25) it is an ordinary answer.
            let closed = ctx.legacy().is_some_and(|l| l.close_sse_stream());
            let id = id.clone();
            let answer = futures_util::stream::once(async move {
                if closed {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                jsonrpc::result_message(&id, text_content("reconnected"))
            });
            Reply::Stream(Box::pin(answer))
        }
        Some(other) => Reply::Error(RpcError::invalid_params(format!("unknown tool: {other}"))),
        None => Reply::Error(RpcError::invalid_params("tools/call needs params.name")),
    }
}

/// The basket tools, or `None` for another tool. A basket is a handle: an
/// opaque id with a 128-bit secret, bound to the principal that made it
/// (anonymous callers share the anonymous owner), that ends after
/// its lifetime unused (`--basket-lifetime-ms`); a call while it is in use
/// holds that off.
fn baskets(server: &Server, ctx: &Context<Client>, name: &str, args: &Value) -> Option<Reply> {
    let owner = ctx.principal().cloned();
    // The basket's own id (the argument's text may be padded) and value.
    let with_basket = |f: &dyn Fn(SessionId, &baskets::Basket) -> Reply| {
        let handle = args.get("basket").and_then(Value::as_str).unwrap_or("");
        match server.baskets.resolve(handle, &owner) {
            Resolved::Found(basket) => f(basket.id(), basket.value()),
            // The guidance's answer: a tool error that says what to do.
            Resolved::Ended => tool_error(&format!(
                "basket `{handle}` has expired; call basket_create to start a new one"
            )),
            Resolved::Unknown => tool_error(&format!(
                "no basket `{handle}`; call basket_create to start one"
            )),
        }
    };
    Some(match name {
        "basket_create" => match server.baskets.create(&owner) {
            Ok(id) => Reply::Result(json!({
                "content": [{ "type": "text", "text": id.to_string() }],
                "structuredContent": { "basket": id.to_string() },
                "isError": false,
            })),
            Err(Refused::OverShare { limit }) => tool_error(&format!(
                "you keep {limit} baskets already, the most one may; let one expire first"
            )),
            Err(Refused::AtCapacity) => tool_error("too many baskets; try again later"),
        },
        "basket_add" => match args.get("item").and_then(Value::as_str) {
            Some(item) => with_basket(&|id, basket| match basket.add(item) {
                Ok(count) => {
                    // Its listeners (listen streams, subscribed sessions)
                    // refetch. Published under the URI resources/list
                    // shows, the one they listen to, whatever padding the
                    // argument had.
                    server
                        .publisher
                        .resource_updated(basket_uri(id), audience(&owner));
                    text_reply(format!("{count} items"))
                }
                Err(Unadded::TooLong) => Reply::Error(RpcError::invalid_params(format!(
                    "basket_add's `item` is at most {ITEM_BYTES} bytes"
                ))),
                Err(Unadded::Full) => {
                    tool_error(&format!("a basket holds at most {ITEMS_PER_BASKET} items"))
                }
                Err(Unadded::OverShare { held, limit }) => tool_error(&format!(
                    "your baskets hold {held} bytes already, and {limit} is the most \
                     one's may; let one expire first"
                )),
                Err(Unadded::AtCapacity) => {
                    tool_error("the baskets hold all the bytes they may; try again later")
                }
            }),
            None => Reply::Error(RpcError::invalid_params("basket_add needs a string `item`")),
        },
        "basket_show" => with_basket(&|_, basket| text_reply(basket.joined(", "))),
        _ => return None,
    })
}

/// `resources/read` of `basket://<id>`: the basket's items, one per line,
/// for its owner; any other URI (or another's basket) is not found.
fn read_basket(server: &Server, ctx: &Context<Client>, request: &Request) -> Reply {
    #[derive(serde::Deserialize)]
    struct Read {
        uri: String,
    }
    let Ok(Read { uri }) = request.params_as::<Read>() else {
        return Reply::Error(RpcError::invalid_params(
            "resources/read needs a string `uri`",
        ));
    };
    let owner = ctx.principal().cloned();
    let found = uri
        .strip_prefix(BASKET_SCHEME)
        .map(|id| server.baskets.resolve(id, &owner));
    match found {
        Some(Resolved::Found(basket)) => Reply::Result(json!({ "contents": [{
            "uri": basket_uri(basket.id()),
            "mimeType": "text/plain",
            "text": basket.value().joined("\n"),
        }]})),
        _ => {
            let mut error = RpcError::new(RESOURCE_NOT_FOUND, "Resource not found");
            error.data = Some(json!({ "uri": uri }));
            Reply::Error(error)
        }
    }
}

/// MCP's error code for a resource that does not exist.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// The `basket` parameter as the basket tools declare it: mirrored into an
/// `Mcp-Param-Basket` header (SEP-2243), which a 2026-07-28 client sends
/// with every call naming a basket, and which a load balancer routes by
/// (`deploy/render.sh`, `MCP_ROUTE_PARAMS=Basket`): a basket's id begins
/// with its node's two hex digits. An id is no credential (a basket is
/// its principal's alone), so it may be seen by intermediaries.
fn basket_param() -> Value {
    json!({
        "type": "string",
        "description": "The basket's id, from basket_create.",
        "x-mcp-header": "Basket",
    })
}

/// The mirrored parameters of an input schema of ours (a panic here is a
/// mistake in the schemas above, found at startup).
fn mirrored(schema: &Value) -> Arc<MirroredParams> {
    Arc::new(MirroredParams::from_input_schema(schema).expect("a valid x-mcp-header annotation"))
}

/// `basket_add`'s input schema.
fn basket_add_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "basket": basket_param(),
            "item": { "type": "string", "maxLength": ITEM_BYTES },
        },
        "required": ["basket", "item"],
    })
}

/// `basket_show`'s input schema.
fn basket_show_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "basket": basket_param() },
        "required": ["basket"],
    })
}

/// The longest `action` the `confirm` tool takes, in bytes (it travels
/// sealed in the `requestState`).
const MAX_ACTION: usize = 256;

/// The `confirm` tool: a 2026-07-28 multi-round-trip call. The first round
/// answers "input required" (a form elicitation), with the action as the
/// application's state, which the layer seals (bound to the principal and
/// this very call, with a short life; single use when `once` is true). The
/// retry brings the state back with the user's answer: the layer opens it
/// before this runs, on whichever node the retry reaches, if that node
/// holds the key that sealed it (`--request-state-key-file`, shared by the
/// nodes of a fleet); else it refuses the retry.
fn confirm(ctx: &Context<Client>, args: &Value) -> Reply {
    let action = match args.get("action") {
        Some(Value::String(action)) if action.len() <= MAX_ACTION => action,
        _ => {
            return Reply::Error(RpcError::invalid_params(format!(
                "confirm needs a string `action` of at most {MAX_ACTION} bytes"
            )))
        }
    };
    let once = match args.get("once") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(once)) => *once,
        Some(_) => return Reply::Error(RpcError::invalid_params("confirm's `once` is a boolean")),
    };
    let Some(modern) = ctx.modern() else {
        return Reply::Error(RpcError::invalid_params(
            "confirm asks for input the 2026-07-28 way (input required); call it from a 2026-07-28 client",
        ));
    };
    if let (Some(state), Some(answer)) = (modern.request_state(), modern.input_response("confirm"))
    {
        // The layer has verified the state: sealed by a key of this fleet,
        // for this principal and this call, unexpired (and unused, if
        // single use). It holds the action the first round asked about.
        if state != action.as_bytes() {
            return Reply::Error(RpcError::invalid_params(
                "the requestState is not this call's",
            ));
        }
        let accepted = answer["action"] == "accept" && answer["content"]["confirm"] == true;
        let verdict = if accepted { "confirmed" } else { "declined" };
        return text_reply(format!("{verdict} {action}"));
    }
    if !modern.declares("elicitation.form") {
        return Reply::Error(RpcError::missing_capability(
            json!({ "elicitation": { "form": {} } }),
        ));
    }
    let mut ask = InputRequests::new()
        .elicit(
            "confirm",
            &format!("Confirm: {action}?"),
            json!({
                "type": "object",
                "properties": { "confirm": { "type": "boolean" } },
                "required": ["confirm"],
            }),
        )
        .request_state(action.as_bytes().to_vec());
    if once {
        ask = ask.single_use();
    }
    match modern.input_required(ask) {
        Ok(asked) => Reply::InputRequired(asked),
        Err(error) => Reply::Error(error),
    }
}

/// A tool execution error (`isError: true`), as the spec has tools report
/// what the model can act on.
fn tool_error(text: &str) -> Reply {
    Reply::Result(json!({ "content": [{ "type": "text", "text": text }], "isError": true }))
}

/// The longest `sleep` (one minute): a client cannot hold a handler slot
/// for long with it, and the manager's handler timeout bounds every call.
const MAX_SLEEP_MS: u64 = 60_000;
/// How many `sleep` calls are running in this process, for the `running`
/// tool: whether a call's handler outlived its session, seen from outside
/// (`benches/hostile.py`, `deleted-calls`).
static SLEEPING: AtomicUsize = AtomicUsize::new(0);

/// One running `sleep` call in [`SLEEPING`], from its start until its
/// future ends: it returns, or it is dropped (cancelled).
struct Sleeping;

impl Sleeping {
    fn start() -> Sleeping {
        // Relaxed: a count read on its own, ordering nothing else.
        SLEEPING.fetch_add(1, Ordering::Relaxed);
        Sleeping
    }
}

impl Drop for Sleeping {
    fn drop(&mut self) {
        SLEEPING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The most messages one `notify` call sends.
const MAX_NOTIFY: u64 = 1_000;
/// The largest padding of one `notify` message.
const MAX_NOTIFY_BYTES: u64 = 64 * 1024;
/// The most padding one `notify` call sends in all.
const MAX_NOTIFY_TOTAL: u64 = 4 * 1024 * 1024;
/// `notify` yields to the runtime after every this many messages.
const NOTIFY_BATCH: u64 = 16;

/// The `hold` tool's SSE reply: a log message at once, then (once the
/// session calls `release`) the response. A client that sees the message
/// before it releases knows the stream reached it unbuffered.
fn hold(release: Arc<Notify>, id: Value) -> Reply {
    let first = futures_util::stream::once(async { log_message("holding until release") });
    let last = futures_util::stream::once(async move {
        release.notified().await;
        jsonrpc::result_message(&id, text_content("released"))
    });
    Reply::Stream(Box::pin(first.chain(last)))
}

/// A response body holding `text` (for the examples' own routes).
pub fn text_body(text: impl Into<String>) -> mcp::Body {
    mcp::Body::full(text.into())
}

/// An MCP log message notification.
fn log_message(text: &str) -> Value {
    jsonrpc::notification_message(
        "notifications/message",
        json!({ "level": "info", "logger": "sessionreg-example", "data": text }),
    )
}

/// The `initialize` result (the layer writes the negotiated
/// `protocolVersion` into it).
static INITIALIZE_RESULT: std::sync::LazyLock<Box<RawValue>> = std::sync::LazyLock::new(|| {
    serde_json::value::to_raw_value(&json!({
        "capabilities": {
            "tools": { "listChanged": false },
            "resources": { "subscribe": true, "listChanged": false },
            "logging": {},
        },
        "serverInfo": server_info(),
    }))
    .expect("a Value serializes")
});

fn server_info() -> Value {
    json!({ "name": "sessionreg-example", "version": env!("CARGO_PKG_VERSION") })
}

/// A `tools/call` result of one text block, written straight into the
/// answer (`Reply::ToolText`: no serialization of its own).
fn text_reply(text: impl Into<String>) -> Reply {
    Reply::tool_text(text)
}

fn text_content(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": false })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_name_is_cut_on_a_character_boundary() {
        assert_eq!(bounded_name("claude"), "claude");
        let long = "é".repeat(CLIENT_NAME_BYTES);
        let cut = bounded_name(&long);
        assert_eq!(cut.len(), CLIENT_NAME_BYTES);
        // 63 bytes of "a", then a two-byte character: it does not fit.
        let straddling = format!("{}é", "a".repeat(CLIENT_NAME_BYTES - 1));
        assert_eq!(bounded_name(&straddling), "a".repeat(CLIENT_NAME_BYTES - 1));
    }
}

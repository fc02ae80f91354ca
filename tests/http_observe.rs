//! How a request is seen from outside, by OpenTelemetry's MCP semantic
//! conventions (`docs/gen-ai/mcp.md`): one SERVER span per request or
//! notification in both eras, named `{mcp.method.name} {target}` and
//! carrying the conventions' attributes as `tracing` fields (captured here
//! by a plain `tracing` layer: any subscriber sees them); the
//! `mcp_server_operation_duration_seconds` and
//! `mcp_server_session_duration_seconds` histograms in `/metrics`, their
//! series bounded; and no token, session secret or `requestState` in any
//! span.
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{eventually, with_meta, Client, Server};
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, Message, RpcError};
use sessionreg::http::BearerTokens;
use sessionreg::http::{App, Context as AppContext, HandlerError, Reply, SessionManager, TaskWork};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// A closed span: its `tracing` name, its fields as text, and where it
/// stands: its own number (spans are numbered as they open), its parent's
/// and the spans it follows from (its links).
#[derive(Debug, Clone)]
struct Closed {
    name: &'static str,
    target: &'static str,
    fields: BTreeMap<String, String>,
    serial: u64,
    parent: Option<u64>,
    follows: Vec<u64>,
}

impl Closed {
    fn get(&self, field: &str) -> Option<&str> {
        self.fields.get(field).map(String::as_str)
    }
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// A span's number, and its parent's, kept in its extensions.
struct Place {
    serial: u64,
    parent: Option<u64>,
    follows: Vec<u64>,
}

/// Every span closed in the process, with its fields.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Closed>>>);

fn serial_of<S: Subscriber + for<'a> LookupSpan<'a>>(id: &Id, ctx: &Context<'_, S>) -> Option<u64> {
    ctx.span(id)?
        .extensions()
        .get::<Place>()
        .map(|place| place.serial)
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        static SERIAL: AtomicU64 = AtomicU64::new(1);
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let span = ctx.span(id).unwrap();
        let parent = span
            .parent()
            .and_then(|parent| parent.extensions().get::<Place>().map(|p| p.serial));
        let mut extensions = span.extensions_mut();
        extensions.insert(fields);
        extensions.insert(Place {
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            parent,
            follows: Vec::new(),
        });
    }

    fn on_follows_from(&self, id: &Id, follows: &Id, ctx: Context<'_, S>) {
        let Some(follows) = serial_of(follows, &ctx) else {
            return;
        };
        if let Some(place) = ctx.span(id).unwrap().extensions_mut().get_mut::<Place>() {
            place.follows.push(follows);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let mut extensions = span.extensions_mut();
        if let Some(fields) = extensions.get_mut::<Fields>() {
            values.record(fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).unwrap();
        let fields = span.extensions_mut().remove::<Fields>().unwrap_or_default();
        let place = span.extensions_mut().remove::<Place>().unwrap();
        self.0.lock().unwrap().push(Closed {
            name: span.name(),
            target: span.metadata().target(),
            fields: fields.0,
            serial: place.serial,
            parent: place.parent,
            follows: place.follows,
        });
    }
}

/// The process's capture (one subscriber for every test of this binary;
/// each test reads the spans of its own server, by its port).
fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(capture.clone()),
        )
        .unwrap();
        capture
    })
}

/// The `mcp.server` spans closed so far of the server on `port`.
fn server_spans(port: u16) -> Vec<Closed> {
    let port = port.to_string();
    capture()
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.name == "mcp.server" && s.get("server.port") == Some(&port))
        .cloned()
        .collect()
}

/// Waits until `n` spans of the server on `port` have closed; all of them.
async fn spans_of(port: u16, n: usize) -> Vec<Closed> {
    let closed = eventually(|| server_spans(port).len() >= n).await;
    let spans = server_spans(port);
    assert!(closed, "{} of {n} spans closed: {spans:#?}", spans.len());
    spans
}

fn modern_call(id: Value, tool: &str) -> Value {
    modern_call_with(id, tool, json!({ "say": "hi" }))
}

fn modern_call_with(id: Value, tool: &str, arguments: Value) -> Value {
    with_meta(json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments },
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_has_one_server_span_named_and_described_by_the_conventions() {
    capture();
    let server = Server::start().await;
    let port = server.addr.port();
    let client = Client::new(&server.url).with_protocol_version("2025-11-25");

    // The session era: initialize, initialized, three calls, a resource.
    let session = client.open().await;
    assert_eq!(
        client.call(&session, "echo", json!({})).await.status,
        StatusCode::OK
    );
    assert_eq!(
        client.call(&session, "tool_error", json!({})).await.status,
        StatusCode::OK
    );
    let unknown = client.call(&session, "no_such_tool", json!({})).await;
    assert_eq!(unknown.json()["error"]["code"], -32602);
    let read = json!({
        "jsonrpc": "2.0", "id": "r-1", "method": "resources/read",
        "params": { "uri": "basket://42" },
    });
    assert_eq!(
        client.post(Some(&session), &read).await.status,
        StatusCode::OK
    );
    // 2026-07-28: one call, with a string id.
    let modern = client
        .post_modern(
            &modern_call(json!("req-7"), "echo"),
            &[("mcp-method", "tools/call"), ("mcp-name", "echo")],
        )
        .await;
    assert_eq!(modern.status, StatusCode::OK, "{:?}", modern.body);

    let spans = spans_of(port, 7).await;
    assert_eq!(spans.len(), 7, "one span per message: {spans:#?}");
    for span in &spans {
        assert_eq!(span.get("otel.kind"), Some("server"), "{span:?}");
        assert_eq!(span.get("network.transport"), Some("tcp"));
        assert_eq!(span.get("network.protocol.name"), Some("http"));
        assert_eq!(span.get("network.protocol.version"), Some("1.1"));
        assert_eq!(span.get("server.address"), Some("127.0.0.1"));
    }
    let named = |name: &str| -> Vec<&Closed> {
        spans
            .iter()
            .filter(|s| s.get("otel.name") == Some(name))
            .collect()
    };
    let legacy = client.protocol_version().to_owned();
    // The session's public part: its first 16 hex digits, never the rest.
    let public = &session[..16];

    let initialize = named("initialize");
    assert_eq!(initialize.len(), 1, "{spans:#?}");
    assert_eq!(initialize[0].get("mcp.method.name"), Some("initialize"));
    assert_eq!(initialize[0].get("mcp.session.id"), Some(public));
    assert_eq!(
        initialize[0].get("mcp.protocol.version"),
        Some(legacy.as_str())
    );

    let initialized = named("notifications/initialized");
    assert_eq!(initialized.len(), 1);
    assert_eq!(
        initialized[0].get("jsonrpc.request.id"),
        None,
        "a notification has no id"
    );
    assert_eq!(initialized[0].get("mcp.session.id"), Some(public));

    let echoes = named("tools/call echo");
    assert_eq!(echoes.len(), 2, "{spans:#?}");
    let echo = echoes
        .iter()
        .find(|s| s.get("mcp.session.id").is_some())
        .unwrap();
    assert_eq!(echo.get("mcp.method.name"), Some("tools/call"));
    assert_eq!(echo.get("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(echo.get("gen_ai.tool.name"), Some("echo"));
    assert_eq!(
        echo.get("jsonrpc.request.id"),
        Some("7"),
        "a number, as a string"
    );
    assert_eq!(echo.get("mcp.session.id"), Some(public));
    assert_eq!(echo.get("error.type"), None);
    assert_eq!(echo.get("otel.status_code"), None);

    let failed_tool = named("tools/call tool_error");
    assert_eq!(failed_tool.len(), 1);
    assert_eq!(failed_tool[0].get("error.type"), Some("tool_error"));
    assert_eq!(failed_tool[0].get("otel.status_code"), Some("ERROR"));

    let unknown = named("tools/call no_such_tool");
    assert_eq!(unknown.len(), 1);
    assert_eq!(unknown[0].get("error.type"), Some("-32602"));
    assert_eq!(unknown[0].get("rpc.response.status_code"), Some("-32602"));
    assert_eq!(unknown[0].get("otel.status_code"), Some("ERROR"));
    assert_eq!(
        unknown[0].get("otel.status_description"),
        Some("unknown tool")
    );

    // A resource's URI is an attribute, never in the name.
    let read = named("resources/read");
    assert_eq!(read.len(), 1, "{spans:#?}");
    assert_eq!(read[0].get("mcp.resource.uri"), Some("basket://42"));
    assert_eq!(read[0].get("jsonrpc.request.id"), Some("r-1"));
    assert_eq!(read[0].get("error.type"), Some("-32601"));

    let modern = echoes
        .iter()
        .find(|s| s.get("mcp.session.id").is_none())
        .unwrap();
    assert_eq!(modern.get("mcp.protocol.version"), Some("2026-07-28"));
    assert_eq!(modern.get("jsonrpc.request.id"), Some("req-7"));
    assert_eq!(modern.get("gen_ai.tool.name"), Some("echo"));
}

/// A sample of Prometheus text, by name and labels in the order written.
fn sample(text: &str, series: &str) -> Option<f64> {
    mcp_test_client::samples(text).get(series).copied()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_histograms_count_by_method_tool_error_and_version() {
    let server = Server::start().await;
    let client = Client::new(&server.url).with_protocol_version("2025-11-25");
    let session = client.open().await;
    for _ in 0..3 {
        client.call(&session, "echo", json!({})).await;
    }
    client.call(&session, "tool_error", json!({})).await;
    client.call(&session, "no_such_tool", json!({})).await;
    let modern = client
        .post_modern(
            &modern_call(json!(1), "echo"),
            &[("mcp-method", "tools/call"), ("mcp-name", "echo")],
        )
        .await;
    assert_eq!(modern.status, StatusCode::OK);
    assert_eq!(client.delete(&session).await.status, StatusCode::OK);

    let text = server.manager.metrics();
    let v = client.protocol_version();
    let op = "mcp_server_operation_duration_seconds";
    assert!(text.contains(&format!("# TYPE {op} histogram")), "{text}");
    let echo = format!(
        "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",mcp_protocol_version=\"{v}\""
    );
    assert_eq!(
        sample(&text, &format!("{op}_count{{{echo}}}")),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &format!("{op}_bucket{{le=\"+Inf\",{echo}}}")),
        Some(3.0)
    );
    // The conventions' buckets, 10 ms to 300 s.
    let bounds: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{op}_bucket{{le=")) && l.contains(&echo))
        .map(|l| l.split("le=\"").nth(1).unwrap().split('"').next().unwrap())
        .collect();
    assert_eq!(
        bounds,
        [
            "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1.0", "2.0", "5.0", "10.0", "30.0",
            "60.0", "120.0", "300.0", "+Inf"
        ]
    );
    let labels = |error: &str| {
        format!(
            "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{}\",error_type=\"{error}\",\
             mcp_protocol_version=\"{v}\"",
            match error {
                "tool_error" => "tool_error",
                _ => "no_such_tool",
            }
        )
    };
    assert_eq!(
        sample(&text, &format!("{op}_count{{{}}}", labels("tool_error"))),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, &format!("{op}_count{{{}}}", labels("-32602"))),
        Some(1.0),
        "{text}"
    );
    let modern = "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\",\
                  mcp_protocol_version=\"2026-07-28\"";
    assert_eq!(
        sample(&text, &format!("{op}_count{{{modern}}}")),
        Some(1.0),
        "{text}"
    );
    // One session, ended by DELETE (no error), in buckets that reach a day.
    let session = "mcp_server_session_duration_seconds";
    assert_eq!(
        sample(
            &text,
            &format!("{session}_count{{mcp_protocol_version=\"{v}\"}}")
        ),
        Some(1.0),
        "{text}"
    );
    assert!(text.contains(&format!(
        "{session}_bucket{{le=\"86400.0\",mcp_protocol_version=\"{v}\"}} 1"
    )));
    // The counters of before are all still there.
    assert!(text.contains("sessionreg_http_responses_total"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_a_client_makes_up_open_a_bounded_number_of_series() {
    let server = Server::start_with(|b| b.operation_series(3)).await;
    let client = Client::new(&server.url).with_protocol_version("2025-11-25");
    let session = client.open().await;
    for i in 0..20 {
        client
            .call(&session, &format!("made_up_{i}"), json!({}))
            .await;
    }
    let long = "x".repeat(200);
    client.call(&session, &long, json!({})).await;
    let made_up = json!({ "jsonrpc": "2.0", "id": 1, "method": "acme/made-up", "params": {} });
    client.post(Some(&session), &made_up).await;

    let text = server.manager.metrics();
    let counts: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("mcp_server_operation_duration_seconds_count{"))
        .collect();
    let named: std::collections::BTreeSet<&str> = counts
        .iter()
        .filter_map(|l| l.split("gen_ai_tool_name=\"").nth(1))
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert!(named.contains("_OTHER"), "{counts:#?}");
    assert_eq!(named.len(), 4, "three names and _OTHER: {counts:#?}");
    assert!(!text.contains(&long));
    assert!(!text.contains("acme/made-up"), "{text}");
    assert!(
        counts
            .iter()
            .any(|l| l.contains("mcp_method_name=\"_OTHER\"")),
        "{counts:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_span_carries_a_token_a_session_secret_or_a_request_state() {
    capture();
    let tokens = BearerTokens::new(BearerTokens::parse("ada=token-ada-secret\n").unwrap()).unwrap();
    let server = Server::start_with(|b| b.authenticator(tokens)).await;
    let port = server.addr.port();
    let client =
        Client::with_bearer(&server.url, "token-ada-secret").with_protocol_version("2025-11-25");
    let session = client.open().await;
    client.call(&session, "echo", json!({})).await;
    client.call(&session, "fail", json!({})).await;
    // A retry carrying a requestState (forged: refused, -32602).
    let mut retry = modern_call(json!(2), "echo");
    retry["params"]["requestState"] = json!("state-secret-0123456789");
    retry["params"]["inputResponses"] = json!({});
    let refused = client
        .post_modern(
            &retry,
            &[("mcp-method", "tools/call"), ("mcp-name", "echo")],
        )
        .await;
    assert_eq!(
        refused.status,
        StatusCode::BAD_REQUEST,
        "{:?}",
        refused.body
    );

    let spans = spans_of(port, 5).await;
    let secret = &session[16..];
    for span in &spans {
        for (field, value) in &span.fields {
            for forbidden in [
                "token-ada-secret",
                "state-secret-0123456789",
                secret,
                &session,
            ] {
                assert!(
                    !value.contains(forbidden),
                    "{field}={value} carries a secret ({forbidden})"
                );
            }
        }
    }
    // The session was named (by its public part) in the spans checked.
    assert!(spans
        .iter()
        .any(|s| s.get("mcp.session.id") == Some(&session[..16])));
}

/// A result the handler serialized itself (`Reply::Serialized`) is
/// answered as written, in its envelope at 2026-07-28 (the application's
/// `_meta` keeps its members and gains the server's name), and its
/// `isError` marks a tool's failure in both eras as a tree's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serialized_result_is_answered_as_written_and_its_is_error_counted() {
    let server = Server::start().await;
    let client = Client::new(&server.url).with_protocol_version("2025-11-25");
    let session = client.open().await;
    let legacy = client
        .call(&session, "tool_error_serialized", json!({}))
        .await;
    assert_eq!(legacy.status, StatusCode::OK);
    let result = &legacy.json()["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["_meta"], json!({ "mine": 1 }));
    assert!(result.get("resultType").is_none(), "{result}");
    let modern = client
        .post_modern(
            &modern_call(json!(2), "tool_error_serialized"),
            &[
                ("mcp-method", "tools/call"),
                ("mcp-name", "tool_error_serialized"),
            ],
        )
        .await;
    assert_eq!(modern.status, StatusCode::OK, "{:?}", modern.body);
    let result = &modern.json()["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["_meta"]["mine"], 1, "{result}");
    assert_eq!(client.delete(&session).await.status, StatusCode::OK);

    let text = server.manager.metrics();
    let op = "mcp_server_operation_duration_seconds";
    for version in ["2025-11-25", "2026-07-28"] {
        let labels = format!(
            "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"tool_error_serialized\",\
             error_type=\"tool_error\",mcp_protocol_version=\"{version}\""
        );
        assert_eq!(
            sample(&text, &format!("{op}_count{{{labels}}}")),
            Some(1.0),
            "{version}: {text}"
        );
    }
}

/// A tool's text result (`Reply::tool_text`) is written straight into the
/// answer, in its envelope at 2026-07-28, its text escaped as serde would;
/// `Reply::tool_error_text` marks a tool's failure in both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_text_result_is_answered_in_both_eras_and_its_error_counted() {
    let server = Server::start().await;
    let client = Client::new(&server.url).with_protocol_version("2025-11-25");
    let session = client.open().await;
    let text = |tool| json!({ "content": [{ "type": "text", "text": tool }] });
    let legacy = client.call(&session, "tool_text", json!({})).await;
    let result = &legacy.json()["result"];
    assert_eq!(
        result["content"],
        text("a \"quoted\" line\n")["content"],
        "{result}"
    );
    assert_eq!(result["isError"], false);
    let legacy = client.call(&session, "tool_error_text", json!({})).await;
    assert_eq!(legacy.json()["result"]["isError"], true);
    for (id, tool, is_error) in [(2, "tool_text", false), (3, "tool_error_text", true)] {
        let modern = client
            .post_modern(
                &modern_call(json!(id), tool),
                &[("mcp-method", "tools/call"), ("mcp-name", tool)],
            )
            .await;
        assert_eq!(modern.status, StatusCode::OK, "{:?}", modern.body);
        let message = modern.json();
        assert_eq!(message["id"], id);
        let result = &message["result"];
        assert_eq!(result["isError"], is_error, "{result}");
        assert_eq!(result["resultType"], "complete");
        let said = if is_error {
            "no such basket"
        } else {
            "a \"quoted\" line\n"
        };
        assert_eq!(result["content"], text(said)["content"], "{result}");
    }
    assert_eq!(client.delete(&session).await.status, StatusCode::OK);
    let text = server.manager.metrics();
    for version in ["2025-11-25", "2026-07-28"] {
        let labels = format!(
            "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"tool_error_text\",\
             error_type=\"tool_error\",mcp_protocol_version=\"{version}\""
        );
        let count = format!("mcp_server_operation_duration_seconds_count{{{labels}}}");
        assert_eq!(sample(&text, &count), Some(1.0), "{version}: {text}");
    }
}

/// Tools run as tasks: `task_done` completes, `task_failed` fails with a
/// JSON-RPC error, `task_tool_error` completes with `isError`.
struct Tasked;

impl App for Tasked {
    type Session = ();

    fn open(&self, _: &jsonrpc::Request, _: &http::request::Parts) -> Result<(), RpcError> {
        Ok(())
    }

    async fn handle(&self, _: AppContext<()>, message: Message) -> Result<Reply, HandlerError> {
        let Message::Request(request) = message else {
            return Ok(Reply::Accepted);
        };
        let params = request.params_value().unwrap_or(Value::Null);
        let text = |text: &str| json!({ "content": [{ "type": "text", "text": text }] });
        let done = text("done");
        let mut tool_error = text("it failed");
        tool_error["isError"] = json!(true);
        Ok(match params["name"].as_str() {
            Some("task_done") => Reply::Task(TaskWork::new(|_| async move { Ok(done) })),
            Some("task_failed") => Reply::Task(TaskWork::new(|_| async move {
                Err(RpcError::new(-32000, "went wrong"))
            })),
            Some("task_tool_error") => {
                Reply::Task(TaskWork::new(|_| async move { Ok(tool_error) }))
            }
            _ => Reply::Error(RpcError::method_not_found("no such tool")),
        })
    }
}

/// The spans closed so far named `name` whose field `field` is `value`.
fn spans_where(name: &str, field: &str, value: &str) -> Vec<Closed> {
    capture()
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.name == name && s.get(field) == Some(value))
        .cloned()
        .collect()
}

/// A task's work outlives the request that created it: it has a span of
/// its own (INTERNAL, the GenAI conventions' `execute_tool {tool}`), not a
/// child of the request's SERVER span (which ends when `CreateTaskResult`
/// is sent) but linked to it (`follows_from`: an OpenTelemetry link),
/// carrying the method, the tool, the task's public part (never its
/// secret: the id grants access to the task) and, when it fails, the
/// `error.type` its `tasks/get` reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_work_has_its_own_span_linked_to_the_request_that_created_it() {
    capture();
    let manager = SessionManager::builder(Tasked).tasks(true).build().unwrap();
    let url = http_support::serve_manager(&manager).await;
    let client = Client::new(&url);
    let mut ids = BTreeMap::new();
    for (n, tool) in ["task_done", "task_failed", "task_tool_error"]
        .into_iter()
        .enumerate()
    {
        let mut body = modern_call(json!(format!("task-{n}")), tool);
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({ "extensions": { TaskWork::EXTENSION: {} } });
        let answer = client
            .post_modern(&body, &[("mcp-method", "tools/call"), ("mcp-name", tool)])
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
        let result = &answer.json()["result"];
        assert_eq!(result["resultType"], "task", "{result}");
        ids.insert(tool, result["taskId"].as_str().unwrap().to_owned());
    }

    for (tool, id) in &ids {
        let found =
            eventually(|| spans_where("mcp.task", "gen_ai.tool.name", tool).len() == 1).await;
        let tasks = spans_where("mcp.task", "gen_ai.tool.name", tool);
        assert!(found, "one span of {tool}'s work: {tasks:#?}");
        let task = &tasks[0];
        assert_eq!(task.get("otel.kind"), Some("internal"), "{task:#?}");
        // Where a filter finds the requests' spans (the example's log
        // leaves `sessionreg::http::observe` out).
        assert!(task.target.starts_with("sessionreg::http::observe"));
        assert_eq!(
            task.get("otel.name"),
            Some(&*format!("execute_tool {tool}"))
        );
        assert_eq!(task.get("mcp.method.name"), Some("tools/call"));
        assert_eq!(task.get("gen_ai.operation.name"), Some("execute_tool"));
        assert_eq!(task.get("mcp.protocol.version"), Some("2026-07-28"));
        // The task's public part (its first 16 hex digits), never the rest.
        assert_eq!(task.get("mcp.task.id"), Some(&id[..16]));
        for (field, value) in &task.fields {
            assert!(
                !value.contains(&id[16..]),
                "{field}={value} carries the task's secret"
            );
        }
        // Not a child of the request's span: linked to it.
        let request = spans_where("mcp.server", "gen_ai.tool.name", tool);
        assert_eq!(request.len(), 1, "{request:#?}");
        assert_eq!(task.parent, None, "{task:#?}");
        assert_eq!(task.follows, [request[0].serial], "{task:#?} {request:#?}");
        let (error, status) = match *tool {
            "task_failed" => (Some("-32000"), Some("ERROR")),
            "task_tool_error" => (Some("tool_error"), Some("ERROR")),
            _ => (None, None),
        };
        assert_eq!(task.get("error.type"), error, "{task:#?}");
        assert_eq!(task.get("otel.status_code"), status, "{task:#?}");
    }
    let failed = &spans_where("mcp.task", "gen_ai.tool.name", "task_failed")[0];
    assert_eq!(failed.get("otel.status_description"), Some("went wrong"));
}

/// A listen stream outlives its request: the request's SERVER span ends
/// when the response head is sent (it is closed, and exported, while the
/// stream is still open), and what the stream sends later is stamped with
/// that span's context (with feature `otel`: `tests/http_otel.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_streams_span_ends_with_its_head_while_the_stream_stays_open() {
    capture();
    let server = Server::start().await;
    let port = server.addr.port();
    let client = Client::new(&server.url);
    let listen = with_meta(json!({
        "jsonrpc": "2.0", "id": "listen-9", "method": "subscriptions/listen",
        "params": { "notifications": { "toolsListChanged": true } },
    }));
    let response = client
        .send_raw(client.modern_request(
            listen.to_string(),
            &[("mcp-method", "subscriptions/listen")],
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = mcp_test_client::SseStream::new(response.into_body());
    let ack = stream
        .next_within(std::time::Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let spans = spans_of(port, 1).await;
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(spans[0].get("otel.name"), Some("subscriptions/listen"));
    assert_eq!(spans[0].get("jsonrpc.request.id"), Some("listen-9"));
    assert_eq!(spans[0].get("error.type"), None);
    // Still open: a change published now reaches it.
    server.manager.publisher().tools_changed();
    let changed = stream
        .next_within(std::time::Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed["method"], "notifications/tools/list_changed");
}

/// The application's handler runs inside its request's SERVER span, in
/// both eras and on every poll: what it traces is a child of that span
/// (the span is entered around each poll of the answer, not only its
/// first, and not left to an outer span).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handlers_own_spans_are_children_of_its_requests_span_in_both_eras() {
    capture();
    let server = Server::start().await;
    let legacy = Client::new(&server.url).with_protocol_version("2025-11-25");
    let session = legacy.open().await;
    let called = legacy
        .call(&session, "traced", json!({ "label": "legacy" }))
        .await;
    assert_eq!(called.status, StatusCode::OK, "{:?}", called.body);
    let modern_args = json!({ "label": "modern" });
    let modern = Client::new(&server.url)
        .post_modern(
            &modern_call_with(json!("traced-1"), "traced", modern_args),
            &[("mcp-method", "tools/call"), ("mcp-name", "traced")],
        )
        .await;
    assert_eq!(modern.status, StatusCode::OK, "{:?}", modern.body);

    for (label, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let request = || {
            spans_where("mcp.server", "gen_ai.tool.name", "traced")
                .into_iter()
                .filter(|s| s.get("mcp.protocol.version") == Some(version))
                .collect::<Vec<_>>()
        };
        let found = eventually(|| {
            spans_where("handler.work", "label", label).len() == 1 && request().len() == 1
        })
        .await;
        let work = spans_where("handler.work", "label", label);
        let request = request();
        assert!(found, "{work:#?} {request:#?}");
        assert_eq!(
            work[0].parent,
            Some(request[0].serial),
            "{work:#?} {request:#?}"
        );
    }
}

//! Fuzzing the request path: arbitrary methods, headers and bodies fed to
//! the manager as a tower `Service` (no sockets, so thousands of requests a
//! second), with the properties every answer must have:
//!
//! * nothing panics out of the manager;
//! * no 5xx, except a 500 for a handler's own failure (the test
//!   application's `fail` and `panic` tools), which ends that session;
//! * every refusal the manager writes (4xx) is a JSON-RPC error object;
//! * afterwards, every session ended exactly once, and nothing is left in
//!   flight.
//!
//! `cargo fuzz` needs a nightly toolchain, which this project does not use;
//! this proptest is the fuzzer. Longer runs:
//!
//! ```text
//! FUZZ_CASES=200000 cargo test --release --test http_fuzz -- --nocapture
//! ```
#![cfg(feature = "http")]

mod http_support;

use bytes::Bytes;
use futures_util::FutureExt;
use http::{HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use http_support::{Closes, TestApp};
use proptest::prelude::*;
use serde_json::{json, Value};
use sessionreg::http::{Body, SessionManager};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a header value is made of.
#[derive(Debug, Clone)]
enum HeaderText {
    /// One of a live session's ids (by index into the pool).
    Live(usize),
    /// An id whose session has ended.
    Stale,
    /// A value that means something to the layer.
    Known(&'static str),
    /// Any bytes a header value may hold.
    Bytes(Vec<u8>),
}

const NAMES: [&str; 11] = [
    "content-type",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "origin",
    "host",
    "content-length",
    "x-anything",
    "mcp-method",
    "mcp-name",
];

const KNOWN: [&str; 20] = [
    "tools/call",
    "echo",
    "0-1",
    "=?base64?ZWNobw==?=",
    "application/json",
    "text/event-stream",
    "application/json, text/event-stream",
    "*/*",
    "text/*;q=0, application/json",
    "2025-11-25",
    "2025-03-26",
    "2024-11-05",
    "2026-07-28",
    "1999-01-01",
    "http://localhost:3000",
    "https://evil.example",
    "localhost",
    "0",
    "99999999999",
    "1",
];

fn header_text() -> impl Strategy<Value = HeaderText> {
    prop_oneof![
        3 => (0usize..4).prop_map(HeaderText::Live),
        1 => Just(HeaderText::Stale),
        4 => (0..KNOWN.len()).prop_map(|i| HeaderText::Known(KNOWN[i])),
        2 => proptest::collection::vec(
            prop_oneof![0x20u8..0x7f, 0x80u8..=0xff, Just(b'\t')],
            0..80
        )
        .prop_map(HeaderText::Bytes),
    ]
}

/// A JSON value of any shape, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z/]{0,12}".prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("[a-zA-Z]{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const METHODS: [&str; 9] = [
    "initialize",
    "notifications/initialized",
    "tools/call",
    "tools/list",
    "ping",
    "",
    "nope",
    "notifications/cancelled",
    "resources/read",
];
/// The test application's tools, but those that never end on their own
/// (`hang`, `stream_forever`, `gate`).
const TOOLS: [&str; 9] = [
    "echo",
    "sleep",
    "fail",
    "panic",
    "notify",
    "stream",
    "slow_stream",
    "whoami",
    "missing",
];

/// A JSON-RPC message, well-formed or nearly so.
fn message() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop_oneof![
            Just(json!(1)),
            Just(json!("a")),
            Just(Value::Null),
            json_value()
        ]),
        prop::option::of(prop_oneof![
            (0..METHODS.len()).prop_map(|i| json!(METHODS[i])),
            json_value()
        ]),
        prop::option::of(prop_oneof![
            (0..TOOLS.len(), 0u64..5).prop_map(|(t, n)| json!({
                "name": TOOLS[t],
                "arguments": { "ms": n, "n": n, "text": "x" }
            })),
            Just(json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": { "name": "fuzz", "version": "1" } })),
            json_value(),
        ]),
        prop::option::of(prop_oneof![Just(json!("2.0")), json_value()]),
        prop::option::of(json_value()),
        prop::option::of(json_value()),
    )
        .prop_map(|(id, method, params, version, result, error)| {
            let mut object = serde_json::Map::new();
            for (key, value) in [
                ("id", id),
                ("method", method),
                ("params", params),
                ("jsonrpc", version),
                ("result", result),
                ("error", error),
            ] {
                if let Some(value) = value {
                    object.insert(key.into(), value);
                }
            }
            Value::Object(object)
        })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => message().prop_map(|m| m.to_string().into_bytes()),
        2 => json_value().prop_map(|v| v.to_string().into_bytes()),
        2 => proptest::collection::vec(any::<u8>(), 0..300),
        1 => (1usize..2000).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d)).into_bytes()),
        1 => (0usize..300).prop_map(|n| {
            // A message truncated or padded.
            let text = json!({"jsonrpc":"2.0","id":1,"method":"ping"}).to_string();
            let mut bytes = text.into_bytes();
            bytes.resize(n, b' ');
            bytes
        }),
    ]
}

fn method() -> impl Strategy<Value = Method> {
    prop_oneof![
        6 => Just(Method::POST),
        2 => Just(Method::GET),
        2 => Just(Method::DELETE),
        1 => Just(Method::PUT),
        1 => Just(Method::OPTIONS),
        1 => Just(Method::HEAD),
        1 => "[A-Z]{1,8}".prop_map(|m| Method::from_bytes(m.as_bytes()).unwrap()),
    ]
}

#[derive(Debug, Clone)]
struct Case {
    method: Method,
    headers: Vec<(usize, HeaderText)>,
    /// The usual MCP headers first (most requests get past the first checks).
    usual: bool,
    body: Vec<u8>,
}

/// A well-formed message of the protocol: most of them reach a handler.
fn well_formed() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop_oneof![
            Just(json!(1)),
            Just(json!("a")),
            any::<i32>().prop_map(Value::from)
        ]),
        0..METHODS.len(),
        0..TOOLS.len(),
        0u64..5,
    )
        .prop_map(|(id, method, tool, n)| {
            let mut message = json!({
                "jsonrpc": "2.0",
                "method": METHODS[method],
                "params": if METHODS[method] == "initialize" {
                    json!({ "protocolVersion": "2025-11-25", "capabilities": {},
                            "clientInfo": { "name": "fuzz", "version": "1" } })
                } else {
                    json!({ "name": TOOLS[tool], "arguments": { "ms": n, "n": n, "text": "x" },
                            "_meta": {
                                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                "io.modelcontextprotocol/clientCapabilities": {},
                            } })
                },
            });
            if let Some(id) = id {
                message["id"] = id;
            }
            message
        })
}

fn case() -> impl Strategy<Value = Case> {
    let random = (
        method(),
        proptest::collection::vec((0..NAMES.len(), header_text()), 0..6),
        any::<bool>(),
        body(),
    )
        .prop_map(|(method, headers, usual, body)| Case {
            method,
            headers,
            usual,
            body,
        });
    // The usual headers, a live session (most of the time), a well-formed
    // message, and a header or two more of anything.
    let nearly_right = (
        prop_oneof![4 => Just(Method::POST), 1 => Just(Method::GET), 1 => Just(Method::DELETE)],
        prop::option::of(0usize..4),
        proptest::collection::vec((0..NAMES.len(), header_text()), 0..2),
        well_formed(),
    )
        .prop_map(|(method, live, extra, message)| {
            let mut headers: Vec<_> = live.map(|i| (2, HeaderText::Live(i))).into_iter().collect();
            headers.extend(extra);
            Case {
                method,
                headers,
                usual: true,
                body: message.to_string().into_bytes(),
            }
        });
    prop_oneof![2 => random, 3 => nearly_right]
}

/// The manager under test, its sessions, and a runtime to drive it.
struct Harness {
    runtime: tokio::runtime::Runtime,
    manager: SessionManager<TestApp>,
    closes: Arc<Closes>,
    live: Mutex<Vec<String>>,
    stale: String,
}

impl Harness {
    fn new() -> Harness {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        // Session-less (2026-07-28) requests are served too. Sessions the
        // cases open and never end idle out, so that a long run stays under
        // capacity (a 503 there would be right, but is not what is tested).
        let (manager, closes, _, _) = http_support::gated_manager(|b| {
            b.event_log_events(4)
                .stream_queue(4, 4096)
                .serve_modern(true)
                .idle_timeout(Some(Duration::from_secs(2)))
        });
        let harness = Harness {
            runtime,
            manager,
            closes,
            live: Mutex::new(Vec::new()),
            stale: String::new(),
        };
        let stale = harness.open();
        harness.runtime.block_on(harness.call(
            Method::DELETE,
            &[("mcp-session-id", stale.as_bytes())],
            Vec::new(),
        ));
        Harness { stale, ..harness }
    }

    /// A new session, initialized through the manager.
    fn open(&self) -> String {
        let body = http_support::initialize_body("fuzz")
            .to_string()
            .into_bytes();
        let (status, headers, _) = self.runtime.block_on(self.call(
            Method::POST,
            &[
                ("content-type", b"application/json"),
                ("accept", http_support::ACCEPT_BOTH.as_bytes()),
            ],
            body,
        ));
        assert_eq!(status, StatusCode::OK);
        headers["mcp-session-id"].to_str().unwrap().to_string()
    }

    /// A session id from the pool (topped up as sessions end).
    fn live(&self, i: usize) -> String {
        let mut live = self.live.lock().unwrap();
        let registry = self.manager.registry();
        live.retain(|id| registry.get(&id.parse().unwrap()).is_some());
        while live.len() < 4 {
            drop(live);
            let id = self.open();
            live = self.live.lock().unwrap();
            live.push(id);
        }
        live[i % live.len()].clone()
    }

    /// Serves one request; the status, headers and (for bodies that end)
    /// the body. Panics if the manager panicked.
    async fn call(
        &self,
        method: Method,
        headers: &[(&str, &[u8])],
        body: Vec<u8>,
    ) -> (StatusCode, http::HeaderMap, Option<Bytes>) {
        let mut request = Request::builder().method(method.clone()).uri("/mcp");
        for (name, value) in headers {
            if let Ok(value) = HeaderValue::from_bytes(value) {
                request = request.header(*name, value);
            }
        }
        let request = request.body(Full::new(Bytes::from(body))).unwrap();
        let mut service = self.manager.clone();
        let response = AssertUnwindSafe(tower_service::Service::call(&mut service, request))
            .catch_unwind()
            .await
            .expect("the manager panicked")
            .unwrap();
        let (parts, body): (_, Body) = response.into_parts();
        let streaming = parts
            .headers
            .get("content-type")
            .is_some_and(|v| v == "text/event-stream");
        let body = if streaming && method == Method::GET {
            // The standalone stream never ends by itself.
            None
        } else {
            let collected = tokio::time::timeout(Duration::from_secs(30), body.collect())
                .await
                .expect("a reply body that ends");
            Some(collected.unwrap().to_bytes())
        };
        (parts.status, parts.headers, body)
    }

    fn run(&self, case: &Case) -> Result<(), TestCaseError> {
        let mut owned: Vec<(&str, Vec<u8>)> = Vec::new();
        if case.usual {
            owned.push(("content-type", b"application/json".to_vec()));
            owned.push(("accept", http_support::ACCEPT_BOTH.as_bytes().to_vec()));
        }
        for (name, text) in &case.headers {
            let value = match text {
                HeaderText::Live(i) => self.live(*i).into_bytes(),
                HeaderText::Stale => self.stale.clone().into_bytes(),
                HeaderText::Known(k) => k.as_bytes().to_vec(),
                HeaderText::Bytes(b) => b.clone(),
            };
            owned.push((NAMES[*name], value));
        }
        let headers: Vec<(&str, &[u8])> = owned.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        let (status, _, body) =
            self.runtime
                .block_on(self.call(case.method.clone(), &headers, case.body.clone()));
        if status.is_server_error() {
            // Only a handler's own failure: a 500 that says so. A failure
            // ends its session (`Failed`), except a stateless one's.
            let body = body.clone().unwrap_or_default();
            prop_assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{:?}", body);
            prop_assert!(
                String::from_utf8_lossy(&body).contains("the handler failed"),
                "{:?}",
                body
            );
        }
        if status.is_client_error() {
            let body = body.unwrap_or_default();
            let parsed: Value = serde_json::from_slice(&body).map_err(|e| {
                TestCaseError::fail(format!("{status} body is not JSON ({e}): {body:?}"))
            })?;
            prop_assert!(parsed["error"]["code"].is_i64(), "{}: {}", status, parsed);
            prop_assert_eq!(&parsed["jsonrpc"], "2.0");
        }
        Ok(())
    }
}

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

#[test]
fn the_request_path_never_panics_or_fails_on_its_own() {
    // The `panic` tool panics on purpose, often: keep those quiet, and
    // every other panic as loud as ever.
    let loud = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| info.payload().downcast_ref::<String>().map(String::as_str));
        if message != Some("handler panicked on purpose") {
            loud(info);
        }
    }));
    let harness = Harness::new();
    let started = std::time::Instant::now();
    let config = ProptestConfig {
        cases: cases(),
        // Keep shrinking short: a failure is reported with its case.
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    };
    proptest::test_runner::TestRunner::new(config)
        .run(&case(), |case| harness.run(&case))
        .unwrap();
    // Every session ended at most once; nothing is left running.
    harness.closes.assert_each_once();
    harness.runtime.block_on(async {
        assert!(harness.manager.wait_idle(Duration::from_secs(30)).await);
    });
    let http = harness.manager.http_stats();
    assert_eq!(http.handlers_in_flight, 0);
    eprintln!(
        "fuzz: {} cases in {:.1?}; {} responses ({} 2xx, {} 4xx, {} handler failures), {} sessions created",
        cases(),
        started.elapsed(),
        http.responses_total(),
        http.responses(200) + http.responses(202),
        [400, 403, 404, 405, 406, 409, 413, 415, 429]
            .iter()
            .map(|c| http.responses(*c))
            .sum::<u64>(),
        http.responses(500),
        harness.manager.stats().created,
    );
}

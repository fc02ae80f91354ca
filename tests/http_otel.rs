//! The OTLP/HTTP export (feature `otel`) against a real receiver in the
//! test, whose requests are decoded with OpenTelemetry's own protobuf
//! definitions (`opentelemetry-proto`): a request's SERVER span continues
//! the client's trace (its parent the `_meta` context, whatever trace
//! flags it has, `03` included; the HTTP `traceparent` a link; the header
//! alone the parent), what the server sends carries the span's context in
//! its `_meta`, the duration histograms reach the receiver under the
//! conventions' names and buckets; and a receiver that stops answering
//! fails no request: the spans it cannot take are dropped and counted.
//!
//! One test: the process has one global subscriber.
#![cfg(feature = "otel")]

mod http_support;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use http_support::{eventually, with_meta, Client, Server};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_test_client::SseStream;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{json, Value};
use sessionreg::http::otlp::{OtlpExport, OtlpSettings};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

/// What the receiver got, and whether it answers.
#[derive(Default)]
struct Received {
    spans: Mutex<Vec<Span>>,
    metrics: Mutex<Vec<ExportMetricsServiceRequest>>,
    /// While set, an export waits (for `release`), then gets 400.
    down: AtomicBool,
    release: Notify,
}

/// An OTLP/HTTP receiver on 127.0.0.1:0: `/v1/traces` and `/v1/metrics`,
/// protobuf.
async fn receiver() -> (String, Arc<Received>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received = Arc::new(Received::default());
    let shared = Arc::clone(&received);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let received = Arc::clone(&shared);
            tokio::spawn(async move {
                let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let received = Arc::clone(&received);
                    async move {
                        let path = request.uri().path().to_owned();
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        if received.down.load(Ordering::SeqCst) {
                            received.release.notified().await;
                            let refused = http::Response::builder()
                                .status(StatusCode::BAD_REQUEST)
                                .body(Full::new(Bytes::new()))
                                .unwrap();
                            return Ok::<_, std::convert::Infallible>(refused);
                        }
                        match path.as_str() {
                            "/v1/traces" => {
                                let export = ExportTraceServiceRequest::decode(body).unwrap();
                                let mut spans = received.spans.lock().unwrap();
                                for resource in export.resource_spans {
                                    for scope in resource.scope_spans {
                                        spans.extend(scope.spans);
                                    }
                                }
                            }
                            "/v1/metrics" => {
                                let export = ExportMetricsServiceRequest::decode(body).unwrap();
                                received.metrics.lock().unwrap().push(export);
                            }
                            other => panic!("an export to {other}"),
                        }
                        Ok(http::Response::new(Full::new(Bytes::new())))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (url, received)
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attribute(attributes, key) {
        Some(any_value::Value::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const META_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const META_PARENT: &str = "00f067aa0ba902b7";
const HEADER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HEADER_PARENT: &str = "b7ad6b7169203331";
const STREAM_TRACE: &str = "5bf92f3577b34da6a3ce929d0e0e4736";
const ALONE_TRACE: &str = "6bf92f3577b34da6a3ce929d0e0e4736";
const LISTEN_TRACE: &str = "7bf92f3577b34da6a3ce929d0e0e4736";
const ASK_TRACE: &str = "8bf92f3577b34da6a3ce929d0e0e4736";
const RETRY_TRACE: &str = "9bf92f3577b34da6a3ce929d0e0e4736";
const TASK_TRACE: &str = "abf92f3577b34da6a3ce929d0e0e4736";

fn echo_with_parent(id: u64, traceparent: &str) -> Value {
    let mut body = with_meta(json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "echo", "arguments": {} },
    }));
    body["params"]["_meta"]["traceparent"] = json!(traceparent);
    body["params"]["_meta"]["tracestate"] = json!("rojo=00f067aa0ba902b7");
    body
}

/// The next message of a stream (a safety bound against one that never
/// delivers, not a measure).
async fn next(stream: &mut SseStream) -> Value {
    stream
        .next_within(Duration::from_secs(10))
        .await
        .expect("the stream reads")
        .expect("a message")
}

/// The spans received so far, once `n` have arrived.
async fn spans(received: &Received, n: usize) -> Vec<Span> {
    let arrived = eventually(|| received.spans.lock().unwrap().len() >= n).await;
    let spans = received.spans.lock().unwrap().clone();
    assert!(arrived, "{} of {n} spans arrived: {spans:#?}", spans.len());
    spans
}

fn dropped(text: &str, cause: &str) -> f64 {
    mcp_test_client::samples(text)
        .get(&format!(
            "sessionreg_otel_spans_dropped_total{{cause=\"{cause}\"}}"
        ))
        .copied()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_export_continues_the_clients_trace_and_a_receiver_down_fails_no_request() {
    let (url, received) = receiver().await;
    let export = Arc::new(
        OtlpExport::install(OtlpSettings {
            endpoint: Some(url),
            service_name: "http_otel".into(),
            queue: 16,
            // Long: an export waits for the receiver, not for a timer.
            export_timeout: Duration::from_secs(120),
            metrics_interval: Some(Duration::from_secs(3600)),
        })
        .unwrap(),
    );
    // At INFO, as `mcp_server` has it: the requests' SERVER spans (the
    // transport's DEBUG `mcp` span, around each, stays out).
    let layer = export.layer().with_filter(LevelFilter::INFO);
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();
    // Built after the export is installed (its histograms would be
    // exported either way).
    let server = Server::start_with(|b| b.tasks(true)).await;
    let client = Client::new(&server.url);
    let call_headers = [("mcp-method", "tools/call"), ("mcp-name", "echo")];

    // 1. `_meta` and the header: `_meta` the parent (flags 03, level 2's
    //    random flag with sampled), the header a link.
    let mut request = client.modern_request(
        echo_with_parent(1, &format!("00-{META_TRACE}-{META_PARENT}-03")).to_string(),
        &call_headers,
    );
    request.headers_mut().insert(
        "traceparent",
        format!("00-{HEADER_TRACE}-{HEADER_PARENT}-01")
            .parse()
            .unwrap(),
    );
    assert_eq!(client.send(request).await.status, StatusCode::OK);

    // 2. The header alone: the parent.
    let alone = with_meta(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "echo", "arguments": {} },
    }));
    let mut request = client.modern_request(alone.to_string(), &call_headers);
    request.headers_mut().insert(
        "traceparent",
        format!("00-{ALONE_TRACE}-{HEADER_PARENT}-01")
            .parse()
            .unwrap(),
    );
    assert_eq!(client.send(request).await.status, StatusCode::OK);

    // 3. A streamed answer in a session: its notifications carry the
    //    request's span as their parent.
    let session = client.open().await;
    let call = json!({
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {
            "name": "stream", "arguments": {},
            "_meta": { "traceparent": format!("00-{STREAM_TRACE}-{META_PARENT}-01") },
        },
    });
    let streamed = client.post(Some(&session), &call).await;
    assert!(streamed.is_sse(), "{streamed:?}");
    let notes: Vec<Value> = streamed
        .messages()
        .into_iter()
        .filter(|m| m.get("method").is_some())
        .collect();
    assert_eq!(notes.len(), 2, "{notes:#?}");

    // 4. A listen stream: its acknowledgement and every notification
    //    after it carry the listen request's span as their parent, though
    //    that span ended with the response head (it is exported while the
    //    stream is still open). A session's standalone stream, which has no
    //    request of its own, carries the context a change was published in.
    let publisher = server.manager.publisher();
    let mut listen = with_meta(json!({
        "jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": { "notifications": { "toolsListChanged": true } },
    }));
    listen["params"]["_meta"]["traceparent"] = json!(format!("00-{LISTEN_TRACE}-{META_PARENT}-01"));
    let listening = client
        .send_raw(client.modern_request(
            listen.to_string(),
            &[("mcp-method", "subscriptions/listen")],
        ))
        .await;
    assert_eq!(listening.status(), StatusCode::OK);
    let mut listening = SseStream::new(listening.into_body());
    let ack = next(&mut listening).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let standalone = client.send_raw(client.get_request(&session, None)).await;
    assert_eq!(standalone.status(), StatusCode::OK);
    let mut standalone = SseStream::new(standalone.into_body());
    // The session's stream joined its topics when it opened: wait until
    // it hears a change (published outside any span).
    let joined = eventually(|| {
        publisher.prompts_changed();
        mcp_test_client::samples(&server.manager.metrics())
            .get("sessionreg_listeners_notifications_total")
            .is_some_and(|n| *n >= 1.0)
    })
    .await;
    assert!(joined);
    tracing::info_span!("publish").in_scope(|| publisher.tools_changed());
    let changed = next(&mut listening).await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let legacy_changed = loop {
        let message = next(&mut standalone).await;
        if message["method"] == "notifications/tools/list_changed" {
            break message;
        }
        assert!(
            message["params"]["_meta"]["traceparent"].is_null(),
            "published outside any span: {message}"
        );
    };

    // 5. A multi-round-trip request: the retry is a request of its own
    //    (its own trace here), its span linked to the span of the request
    //    that asked for input, whose context its sealed state carries.
    let ask_headers = [("mcp-method", "tools/call"), ("mcp-name", "ask")];
    let mut ask = with_meta(json!({
        "jsonrpc": "2.0", "id": 50, "method": "tools/call",
        "params": { "name": "ask", "arguments": {} },
    }));
    ask["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "elicitation": {} });
    ask["params"]["_meta"]["traceparent"] = json!(format!("00-{ASK_TRACE}-{META_PARENT}-01"));
    let asked = client.post_modern(&ask, &ask_headers).await;
    assert_eq!(asked.status, StatusCode::OK, "{:?}", asked.body);
    let asked = asked.json();
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let mut retry = ask.clone();
    retry["params"]["_meta"]["traceparent"] = json!(format!("00-{RETRY_TRACE}-{META_PARENT}-01"));
    retry["params"]["inputResponses"] = json!({ "ok": { "action": "accept", "content": {} } });
    retry["params"]["requestState"] = json!(state);
    let retried = client.post_modern(&retry, &ask_headers).await;
    assert_eq!(retried.status, StatusCode::OK, "{:?}", retried.body);
    assert_eq!(retried.json()["result"]["answered"], true);

    // 6. A task: its work's span is the root of a trace of its own, linked
    //    to the span of the request that created it.
    let mut call = with_meta(json!({
        "jsonrpc": "2.0", "id": 60, "method": "tools/call",
        "params": { "name": "task_echo", "arguments": {} },
    }));
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    call["params"]["_meta"]["traceparent"] = json!(format!("00-{TASK_TRACE}-{META_PARENT}-01"));
    let created = client
        .post_modern(
            &call,
            &[("mcp-method", "tools/call"), ("mcp-name", "task_echo")],
        )
        .await;
    assert_eq!(created.status, StatusCode::OK, "{:?}", created.body);
    let task_id = created.json()["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    // Its work done (its span closes as it ends: a span still open at the
    // flush would wait for the export's next tick).
    let mut get = with_meta(json!({
        "jsonrpc": "2.0", "id": 61, "method": "tasks/get", "params": { "taskId": task_id },
    }));
    get["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let got = client
            .post_modern(&get, &[("mcp-method", "tasks/get"), ("mcp-name", &task_id)])
            .await;
        if got.json()["result"]["status"] == "completed" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{:?}", got.body);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let flushed = {
        let export = Arc::clone(&export);
        tokio::task::spawn_blocking(move || export.flush())
            .await
            .unwrap()
    };
    assert!(flushed);
    // 2 modern calls, initialize, initialized, the streamed call, the
    // listen, the ask and its retry, the task's call; the task's work; and
    // the test's own `publish` span.
    let spans = spans(&received, 11).await;
    let server_spans: Vec<&Span> = spans.iter().filter(|s| s.kind == 2).collect();
    assert_eq!(
        server_spans.len(),
        spans.len() - 2,
        "all SERVER spans but the task's and the test's: {spans:#?}"
    );

    let first = spans
        .iter()
        .find(|s| hex(&s.trace_id) == META_TRACE)
        .expect("a span in the _meta's trace");
    assert_eq!(first.name, "tools/call echo");
    assert_eq!(hex(&first.parent_span_id), META_PARENT);
    assert_eq!(first.trace_state, "rojo=00f067aa0ba902b7");
    assert_eq!(first.links.len(), 1, "{first:#?}");
    assert_eq!(hex(&first.links[0].trace_id), HEADER_TRACE);
    assert_eq!(hex(&first.links[0].span_id), HEADER_PARENT);
    assert_eq!(
        text(&first.attributes, "mcp.method.name"),
        Some("tools/call")
    );
    assert_eq!(text(&first.attributes, "gen_ai.tool.name"), Some("echo"));
    assert_eq!(
        text(&first.attributes, "gen_ai.operation.name"),
        Some("execute_tool")
    );
    assert_eq!(text(&first.attributes, "jsonrpc.request.id"), Some("1"));
    assert_eq!(
        text(&first.attributes, "mcp.protocol.version"),
        Some("2026-07-28")
    );

    let second = spans
        .iter()
        .find(|s| hex(&s.trace_id) == ALONE_TRACE)
        .expect("a span in the header's trace");
    assert_eq!(hex(&second.parent_span_id), HEADER_PARENT);
    assert!(second.links.is_empty());

    let stream = spans
        .iter()
        .find(|s| hex(&s.trace_id) == STREAM_TRACE)
        .expect("the streamed call's span");
    for note in &notes {
        let traceparent = note["params"]["_meta"]["traceparent"]
            .as_str()
            .unwrap_or_else(|| panic!("no traceparent in {note}"));
        assert_eq!(
            traceparent,
            format!("00-{STREAM_TRACE}-{}-01", hex(&stream.span_id)),
            "{note}"
        );
    }

    let listen = spans
        .iter()
        .find(|s| hex(&s.trace_id) == LISTEN_TRACE)
        .expect("the listen request's span, exported while its stream is open");
    assert_eq!(listen.name, "subscriptions/listen");
    assert_eq!(hex(&listen.parent_span_id), META_PARENT);
    let listen_parent = format!("00-{LISTEN_TRACE}-{}-01", hex(&listen.span_id));
    for note in [&ack, &changed] {
        assert_eq!(
            note["params"]["_meta"]["traceparent"], listen_parent,
            "{note}"
        );
        assert_eq!(
            note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "listen-1"
        );
    }
    let publish = spans
        .iter()
        .find(|s| s.name == "publish")
        .expect("the test's publish span");
    assert_eq!(
        legacy_changed["params"]["_meta"]["traceparent"],
        format!("00-{}-{}-01", hex(&publish.trace_id), hex(&publish.span_id)),
        "{legacy_changed}"
    );
    drop((listening, standalone));

    let asked = spans
        .iter()
        .find(|s| hex(&s.trace_id) == ASK_TRACE)
        .expect("the asking request's span");
    let retried = spans
        .iter()
        .find(|s| hex(&s.trace_id) == RETRY_TRACE)
        .expect("the retry's span");
    assert_eq!(hex(&retried.parent_span_id), META_PARENT);
    assert_eq!(retried.links.len(), 1, "{retried:#?}");
    assert_eq!(hex(&retried.links[0].trace_id), ASK_TRACE);
    assert_eq!(hex(&retried.links[0].span_id), hex(&asked.span_id));
    for span in [asked, retried] {
        for kv in &span.attributes {
            let value = format!("{:?}", kv.value);
            assert!(
                !value.contains(&state),
                "{} carries the requestState",
                kv.key
            );
        }
    }

    let creating = spans
        .iter()
        .find(|s| hex(&s.trace_id) == TASK_TRACE)
        .expect("the span of the request that created the task");
    let work = spans
        .iter()
        .find(|s| s.name == "execute_tool task_echo")
        .expect("the task's work's span");
    assert_eq!(work.kind, 1, "INTERNAL: {work:#?}");
    assert!(work.parent_span_id.is_empty(), "a root: {work:#?}");
    assert_ne!(hex(&work.trace_id), TASK_TRACE);
    assert_eq!(work.links.len(), 1, "{work:#?}");
    assert_eq!(hex(&work.links[0].trace_id), TASK_TRACE);
    assert_eq!(hex(&work.links[0].span_id), hex(&creating.span_id));
    assert_eq!(
        text(&work.attributes, "gen_ai.tool.name"),
        Some("task_echo")
    );
    assert_eq!(text(&work.attributes, "mcp.task.id"), Some(&task_id[..16]));
    assert!(work
        .attributes
        .iter()
        .all(|kv| !format!("{:?}", kv.value).contains(&task_id[16..])));

    // The histograms, under the conventions' names and buckets.
    let metrics = received.metrics.lock().unwrap().clone();
    let histogram = metrics
        .iter()
        .flat_map(|m| &m.resource_metrics)
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .find(|m| m.name == "mcp.server.operation.duration")
        .expect("mcp.server.operation.duration exported");
    assert_eq!(histogram.unit, "s");
    let Some(metric::Data::Histogram(data)) = &histogram.data else {
        panic!("not a histogram: {histogram:#?}");
    };
    let echo = data
        .data_points
        .iter()
        .find(|p| {
            text(&p.attributes, "gen_ai.tool.name") == Some("echo")
                && text(&p.attributes, "mcp.protocol.version") == Some("2026-07-28")
        })
        .expect("the modern echo calls' point");
    assert_eq!(echo.count, 2);
    assert_eq!(
        echo.explicit_bounds,
        [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0]
    );

    // 5. The receiver stops answering: the export's queue fills, and
    //    every request is still answered; what found no room is counted.
    received.down.store(true, Ordering::SeqCst);
    for i in 0..40 {
        let body = echo_with_parent(100 + i, &format!("00-{META_TRACE}-{META_PARENT}-01"));
        let answer = client.post_modern(&body, &call_headers).await;
        assert_eq!(answer.status, StatusCode::OK, "request {i}: {answer:?}");
    }
    let text = server.manager.metrics();
    assert!(
        dropped(&text, "queue_full") >= 24.0,
        "the queue holds 16: {text}"
    );
    // The receiver answers the exports it held with 400: their spans are
    // lost, and counted.
    received.down.store(false, Ordering::SeqCst);
    received.release.notify_waiters();
    let counted = eventually(|| {
        received.release.notify_waiters();
        dropped(&server.manager.metrics(), "export_failed") >= 1.0
    })
    .await;
    assert!(counted, "{}", server.manager.metrics());
}

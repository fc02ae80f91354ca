//! `sessionreg_rmcp::http::StreamableHttpService` over real sockets: an
//! unmodified rmcp `#[tool_router]` handler (the example's counter) served
//! by sessionreg's layer, mounted in axum as rmcp's service is, asked by
//! the workspace's client at 2025-11-25 (a session) and 2026-07-28 (no
//! session), and by rmcp's own client.

#[path = "../examples/rmcp_counter/counter.rs"]
mod counter;
#[path = "../examples/common/listen.rs"]
mod listen;
#[path = "support/loopback.rs"]
mod loopback;

use counter::Counter;
use http::StatusCode;
use loopback::Loopback;
use mcp_test_client::{initialize_at, result_text, tool_call, with_meta, Client};
use serde_json::{json, Value};
use sessionreg_rmcp::http::{Config, StreamableHttpService};

const LEGACY: &str = "2025-11-25";

/// The counter's service on 127.0.0.1:0 at `/mcp`, with `config`.
struct Served {
    url: String,
    service: StreamableHttpService<Counter>,
    _served: Loopback,
}

impl Served {
    async fn start(config: Config) -> Served {
        let service = StreamableHttpService::new(|| Ok(Counter::new()), config);
        let served =
            Loopback::serve(axum::Router::new().nest_service("/mcp", service.clone())).await;
        Served {
            url: served.url.clone(),
            service,
            _served: served,
        }
    }

    fn client(&self) -> Client {
        Client::new(&self.url)
            .named("raw")
            .with_protocol_version(LEGACY)
    }

    fn live(&self) -> u64 {
        self.service.manager().stats().live
    }
}

fn text(answer: &Value) -> &str {
    result_text(&answer["result"]).unwrap_or_else(|| panic!("a tool result: {answer}"))
}

/// The answer of a reply, JSON or the last message of an SSE stream.
fn answer_of(reply: &mcp_test_client::Reply) -> Value {
    reply.answer().unwrap_or_else(|| reply.json())
}

#[tokio::test]
async fn a_legacy_session_initializes_lists_and_calls_and_keeps_its_handler() {
    let served = Served::start(Config::default()).await;
    let client = served.client();
    let reply = client.post(None, &initialize_at("raw", LEGACY)).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let init = answer_of(&reply);
    assert_eq!(init["result"]["protocolVersion"], LEGACY, "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    assert_eq!(
        init["result"]["instructions"],
        "A counter: increment, add, header."
    );
    let session = reply.session_id().expect("a session id");
    assert_eq!(served.live(), 1);
    let ack = client.initialized(&session).await;
    assert_eq!(ack.status, StatusCode::ACCEPTED);

    let list = client
        .post(
            Some(&session),
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        )
        .await;
    let list = answer_of(&list);
    let mut names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools: {list}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "add",
            "announce",
            "count_to_three",
            "greet",
            "header",
            "increment",
            "roots"
        ]
    );

    // The session's handler is the one its initialize made: the count goes on.
    for expected in ["1", "2"] {
        let call = client.call(&session, "increment", json!({})).await;
        assert_eq!(text(&answer_of(&call)), expected);
    }
    let call = client.call(&session, "add", json!({ "by": 40 })).await;
    assert_eq!(text(&answer_of(&call)), "42");

    // Another session has a handler of its own.
    let other = client.open().await;
    let call = client.call(&other, "increment", json!({})).await;
    assert_eq!(text(&answer_of(&call)), "1");

    assert_eq!(client.delete(&session).await.status, StatusCode::OK);
    assert_eq!(
        client.call(&session, "increment", json!({})).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(served.live(), 1);
}

#[tokio::test]
async fn a_2026_07_28_request_is_served_without_a_session() {
    let served = Served::start(Config::default()).await;
    let client = served.client();
    let list = client
        .post_modern(
            &with_meta(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
            &[("mcp-method", "tools/list")],
        )
        .await;
    assert_eq!(list.status, StatusCode::OK, "{:?}", list.body);
    assert!(list.session_id().is_none());
    let list = answer_of(&list);
    assert_eq!(
        list["result"]["tools"].as_array().map(Vec::len),
        Some(7),
        "{list}"
    );
    assert_eq!(list["result"]["resultType"], "complete");

    // Each request gets a handler of its own from the factory, as rmcp's
    // stateless requests do.
    for _ in 0..2 {
        let call = client
            .post_modern(
                &with_meta(tool_call(2, "increment", json!({}))),
                &[("mcp-method", "tools/call"), ("mcp-name", "increment")],
            )
            .await;
        assert_eq!(call.status, StatusCode::OK, "{:?}", call.body);
        assert_eq!(text(&answer_of(&call)), "1");
    }

    let discover = client
        .post_modern(
            &with_meta(json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover"})),
            &[("mcp-method", "server/discover")],
        )
        .await;
    let discover = answer_of(&discover);
    assert!(
        discover["result"]["capabilities"]["tools"].is_object(),
        "{discover}"
    );
    assert_eq!(
        discover["result"]["instructions"],
        "A counter: increment, add, header."
    );
    assert_eq!(served.live(), 0, "no session");
}

#[tokio::test]
async fn the_handler_sees_the_requests_http_parts_in_both_eras() {
    let served = Served::start(Config::default()).await;
    let client = served.client().with_header("x-tenant", "blue");
    let session = client.open().await;
    let call = client
        .call(&session, "header", json!({ "name": "x-tenant" }))
        .await;
    assert_eq!(text(&answer_of(&call)), "blue");

    let call = client
        .post_modern(
            &with_meta(tool_call(2, "header", json!({ "name": "x-tenant" }))),
            &[("mcp-method", "tools/call"), ("mcp-name", "header")],
        )
        .await;
    assert_eq!(text(&answer_of(&call)), "blue");
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_403_unless_allowed() {
    let served = Served::start(Config::default()).await;
    let init = initialize_at("raw", LEGACY);
    let foreign_origin = served
        .client()
        .with_header("origin", "https://evil.example");
    assert_eq!(
        foreign_origin.post(None, &init).await.status,
        StatusCode::FORBIDDEN
    );
    let foreign_host = served.client().with_header("host", "evil.example");
    assert_eq!(
        foreign_host.post(None, &init).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(served.live(), 0);

    let mut config = Config::default();
    config.allowed_origins.push("https://app.example".into());
    config.allowed_hosts.push("mcp.example".into());
    let served = Served::start(config).await;
    let allowed = served
        .client()
        .with_header("origin", "https://app.example")
        .with_header("host", "mcp.example");
    assert_eq!(allowed.post(None, &init).await.status, StatusCode::OK);
    assert_eq!(served.live(), 1);
}

#[tokio::test]
async fn rmcp_s_own_client_initializes_lists_and_calls() {
    use rmcp::model::{CallToolRequestParams, ClientConfig};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::ServiceExt;

    let served = Served::start(Config::default()).await;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(served.url.clone()),
    );
    let client = ClientConfig::default()
        .serve(transport)
        .await
        .expect("initialize");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 7);
    for expected in ["1", "2"] {
        let result = client
            .call_tool(CallToolRequestParams::new("increment"))
            .await
            .expect("tools/call");
        assert_eq!(result.content[0].as_text().expect("text").text, expected);
    }
    client.cancel().await.expect("close");
}

/// A `tools/call` of `count_to_three` asking for progress, with `_meta`
/// `extra` beside the progress token.
fn counting(extra: Value) -> Value {
    let mut call = tool_call(5, "count_to_three", json!({}));
    let mut meta = extra;
    meta["progressToken"] = json!("p1");
    call["params"]["_meta"] = meta;
    call
}

/// The progress values of `messages`, then whether the last is the answer `done`.
fn progress_then_done(messages: &[Value]) -> (Vec<f64>, bool) {
    let progress = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "p1", "{m}");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    let done = messages
        .last()
        .is_some_and(|last| result_text(&last["result"]) == Some("done"));
    (progress, done)
}

#[tokio::test]
async fn what_the_handler_sends_before_its_answer_streams_in_both_eras() {
    let served = Served::start(Config::default()).await;
    let client = served.client();
    let session = client.open().await;
    let reply = client.post(Some(&session), &counting(json!({}))).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.is_sse(), "{:?}", reply.body);
    assert_eq!(
        progress_then_done(&reply.messages()),
        (vec![1.0, 2.0, 3.0], true)
    );

    let modern = with_meta(tool_call(0, "x", json!({})))["params"]["_meta"].clone();
    let reply = client
        .post_modern(
            &counting(modern),
            &[("mcp-method", "tools/call"), ("mcp-name", "count_to_three")],
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert!(reply.is_sse(), "{:?}", reply.body);
    assert_eq!(
        progress_then_done(&reply.messages()),
        (vec![1.0, 2.0, 3.0], true)
    );
}

#[tokio::test]
async fn an_idle_legacy_session_keeps_no_task() {
    let served = Served::start(Config::default()).await;
    let client = served.client();
    let alive = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    // One session first: the server's and the client's connection tasks
    // are then running, and stay as they are while the same client goes on.
    let first = client.open().await;
    let call = client.call(&first, "increment", json!({})).await;
    assert_eq!(text(&answer_of(&call)), "1");
    let baseline = alive();
    // Per request, rmcp's service loop and the handler's task run until
    // the answer is out: wait for them to end, as for the ones below.
    assert!(mcp_test_client::eventually(|| alive() <= baseline).await);
    let baseline = alive();

    for _ in 0..40 {
        let session = client.open().await;
        let call = client.call(&session, "increment", json!({})).await;
        assert_eq!(text(&answer_of(&call)), "1");
    }
    assert_eq!(served.live(), 41);
    // rmcp's own service keeps a worker task per session (about 3 tokio
    // tasks): 40 idle sessions would keep the count above the baseline.
    assert!(
        mcp_test_client::eventually(|| alive() <= baseline).await,
        "{} tasks alive with 40 more idle sessions, {baseline} before",
        alive()
    );
}

/// A 2026-07-28 `tools/call` of `greet` declaring elicitation, with
/// `extra` params (the retry's `inputResponses` and `requestState`).
fn greeting(extra: Value) -> Value {
    let mut call = with_meta(tool_call(8, "greet", json!({})));
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "elicitation": {} });
    for (key, value) in extra.as_object().unwrap() {
        call["params"][key] = value.clone();
    }
    call
}

#[tokio::test]
async fn a_handlers_input_request_reaches_the_client_and_its_state_comes_back_sealed() {
    let served = Served::start(Config::default()).await;
    let client = served.client();
    let headers = [("mcp-method", "tools/call"), ("mcp-name", "greet")];
    let first = client.post_modern(&greeting(json!({})), &headers).await;
    assert_eq!(first.status, StatusCode::OK, "{:?}", first.body);
    let first = answer_of(&first);
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"]["name"]["method"], "elicitation/create",
        "{first}"
    );
    // The handler's own state goes out sealed by the layer, not as it wrote it.
    let sealed = result["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("a requestState: {first}"));
    assert!(!sealed.contains("asked-once"), "{sealed}");

    let answers = json!({ "name": { "action": "accept", "content": { "name": "Ada" } } });
    let retry = client
        .post_modern(
            &greeting(json!({ "inputResponses": answers, "requestState": sealed })),
            &headers,
        )
        .await;
    assert_eq!(retry.status, StatusCode::OK, "{:?}", retry.body);
    assert_eq!(text(&answer_of(&retry)), "Hello, Ada! (state asked-once)");

    // A state the layer did not seal never reaches the handler.
    let forged = client
        .post_modern(
            &greeting(json!({ "inputResponses": answers, "requestState": "asked-once" })),
            &headers,
        )
        .await;
    let forged = answer_of(&forged);
    assert!(forged.get("error").is_some(), "{forged}");
}

#[tokio::test]
async fn a_list_change_the_handler_announces_reaches_other_sessions_streams() {
    let served = Served::start(Config::default()).await;
    let client = served.client();
    let listening = client.open().await;
    let stream = client.open_stream(&listening, None).await;
    assert_eq!(stream.status(), StatusCode::OK);
    let mut events = mcp_test_client::SseStream::new(stream.into_body());

    let other = client.open().await;
    let call = client.call(&other, "announce", json!({})).await;
    assert_eq!(text(&answer_of(&call)), "announced");
    // Published, not put on the caller's answer stream.
    assert!(!call.is_sse(), "{:?}", call.body);

    let heard = events
        .next_within(std::time::Duration::from_secs(10))
        .await
        .expect("an event")
        .expect("the stream is open");
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
}

#[tokio::test]
async fn a_request_the_handler_sends_in_a_session_is_answered_by_the_client() {
    let served = Served::start(Config::default()).await;
    let client = served.client();
    let session = client.open().await;
    let call = client.post_request(Some(&session), tool_call(9, "roots", json!({})).to_string());
    let response = client.send_raw(call).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut events = mcp_test_client::SseStream::new(response.into_body());
    let bound = std::time::Duration::from_secs(10);
    let asked = events
        .next_within(bound)
        .await
        .unwrap()
        .expect("the handler's request");
    assert_eq!(asked["method"], "roots/list", "{asked}");
    // The session's own id, not the handler's.
    assert!(asked["id"].is_string(), "{asked}");

    let answer = json!({ "jsonrpc": "2.0", "id": asked["id"],
        "result": { "roots": [{ "uri": "file:///a" }, { "uri": "file:///b" }] } });
    assert_eq!(
        client.post(Some(&session), &answer).await.status,
        StatusCode::ACCEPTED
    );
    let done = events
        .next_within(bound)
        .await
        .unwrap()
        .expect("the answer");
    assert_eq!(text(&done), "roots: file:///a, file:///b", "{done}");
}

/// A 2026-07-28 `subscriptions/listen` with the whole filter asked for.
fn listen_request(client: &Client, id: u64) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let body = with_meta(json!({
        "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": { "notifications": {
            "toolsListChanged": true, "promptsListChanged": true,
            "resourcesListChanged": true, "resourceSubscriptions": ["counter://count"],
        } },
    }));
    client.modern_request(body.to_string(), &[("mcp-method", "subscriptions/listen")])
}

#[tokio::test]
async fn a_listen_stream_hears_what_the_handler_accepts_and_announces() {
    let served = Served::start(Config::default()).await;
    let client = served.client();
    let response = client.send_raw(listen_request(&client, 1)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut events = mcp_test_client::SseStream::new(response.into_body());
    let bound = std::time::Duration::from_secs(10);
    let ack = events
        .next_within(bound)
        .await
        .unwrap()
        .expect("the acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    // What the counter accepts (`accepted_subscription_filter`) and
    // advertises (`tools.listChanged`): the tools list, nothing else.
    assert_eq!(
        ack["params"]["notifications"],
        json!({ "toolsListChanged": true }),
        "{ack}"
    );

    let call = client
        .post_modern(
            &with_meta(tool_call(2, "announce", json!({}))),
            &[("mcp-method", "tools/call"), ("mcp-name", "announce")],
        )
        .await;
    assert_eq!(text(&answer_of(&call)), "announced");
    let heard = events
        .next_within(bound)
        .await
        .unwrap()
        .expect("the change");
    assert_eq!(
        heard["method"], "notifications/tools/list_changed",
        "{heard}"
    );
}

/// A handler with rmcp's defaults: no `accepted_subscription_filter`.
#[derive(Clone)]
struct Silent;

impl rmcp::ServerHandler for Silent {}

#[tokio::test]
async fn a_handler_that_accepts_no_filter_serves_no_listening() {
    let service = StreamableHttpService::new(|| Ok(Silent), Config::default());
    let served = Loopback::serve(axum::Router::new().nest_service("/mcp", service)).await;
    let client = Client::new(&served.url);
    let response = client.send(listen_request(&client, 1)).await;
    // As rmcp's own service: method not found.
    assert_eq!(
        response.status,
        StatusCode::NOT_FOUND,
        "{:?}",
        response.body
    );
    assert_eq!(answer_of(&response)["error"]["code"], -32601);
}

/// A handler that speaks the legacy versions only.
#[derive(Clone)]
struct LegacyOnly;

impl rmcp::ServerHandler for LegacyOnly {
    fn supported_protocol_versions(
        &self,
    ) -> std::borrow::Cow<'static, [rmcp::model::ProtocolVersion]> {
        use rmcp::model::ProtocolVersion;
        std::borrow::Cow::Owned(vec![
            ProtocolVersion::V_2025_11_25,
            ProtocolVersion::V_2025_06_18,
        ])
    }
}

#[tokio::test]
async fn a_handler_without_2026_07_28_in_its_versions_is_served_the_legacy_era_only() {
    let service = StreamableHttpService::new(|| Ok(LegacyOnly), Config::default());
    let served = Loopback::serve(axum::Router::new().nest_service("/mcp", service)).await;
    let client = Client::new(&served.url).with_protocol_version(LEGACY);
    let modern = client
        .post_modern(
            &with_meta(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
            &[("mcp-method", "tools/list")],
        )
        .await;
    assert_eq!(modern.status, StatusCode::BAD_REQUEST, "{:?}", modern.body);
    let error = answer_of(&modern);
    let supported = error["error"]["data"]["supported"]
        .as_array()
        .unwrap_or_else(|| panic!("the versions served: {error}"));
    assert!(supported.contains(&json!(LEGACY)), "{error}");
    assert!(!supported.contains(&json!("2026-07-28")), "{error}");
    // The legacy era is served.
    let session = client.open().await;
    assert!(!session.is_empty());
}

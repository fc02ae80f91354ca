//! The 2026-07-28 surface tried as an attacker would, over real
//! sockets: one principal cannot lock others out of a shared store (tasks,
//! single-use `requestState`s), a full store says so with a `Retry-After`
//! that comes true, a task waiting for input waits a bounded time, a
//! sealed state opens only for the request it was sealed for (the crafted
//! U+0000 pair of the issue included), duplicated `Mcp-Param-*` and
//! `Origin` headers are refused and mirrored integers compare exactly, a
//! setting out of range is a typed error rather than a panic, a task
//! created while the server shuts down gets a clean answer, and no log line
//! carries a whole task id.
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{eventually, with_meta, Answer, Client};
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, Message, RpcError};
use sessionreg::http::modern::{InputRequests, MirroredParams};
use sessionreg::http::SessionManager;
use sessionreg::http::TaskWork;
use sessionreg::http::{App, BearerTokens, Builder, Context, HandlerError, Reply};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The tools an attacker (and its victims) call:
///
/// * `ask`: a task that asks for input and waits for it;
/// * `quick`: a task that answers at once;
/// * `once`: asks for input with a single-use state;
/// * `A`, `B`: ask for input with a (reusable) state; the retry answers
///   with the tool's name and the arguments it ran with (`ran` records
///   them too);
/// * `count`: mirrors `n` (an integer) in `Mcp-Param-N` and `region` in
///   `Mcp-Param-Region`;
/// * `log_ctx`: a task whose work logs its context (`{ctx:?}`).
struct Guarded {
    /// The arguments `A` and `B` ran with, on a verified retry.
    ran: Mutex<Vec<(String, Value)>>,
    counted: Arc<MirroredParams>,
    /// Task works started.
    started: AtomicUsize,
}

fn text(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }] })
}

impl App for Guarded {
    type Session = ();

    fn open(&self, _: &jsonrpc::Request, _: &http::request::Parts) -> Result<(), RpcError> {
        Ok(())
    }

    fn mirrored_params(&self, tool: &str) -> Option<Arc<MirroredParams>> {
        (tool == "count").then(|| Arc::clone(&self.counted))
    }

    async fn handle(&self, ctx: Context<()>, message: Message) -> Result<Reply, HandlerError> {
        let Message::Request(request) = message else {
            return Ok(Reply::Accepted);
        };
        let params = request.params_value().unwrap_or(Value::Null);
        let modern = ctx.modern().expect("these tests speak 2026-07-28");
        let schema = json!({ "type": "object", "properties": {} });
        let ask = |asked: InputRequests| match modern.input_required(asked) {
            Ok(asked) => Reply::InputRequired(asked),
            Err(error) => Reply::Error(error),
        };
        Ok(match params["name"].as_str() {
            Some("ask") => {
                self.started.fetch_add(1, Ordering::SeqCst);
                Reply::Task(TaskWork::new(move |ctx| async move {
                    let asked = InputRequests::new().elicit("ok", "Sure?", schema);
                    ctx.input(asked).await?;
                    Ok(text("answered"))
                }))
            }
            Some("quick") => Reply::Task(TaskWork::new(|_ctx| async move { Ok(text("quick")) })),
            Some("log_ctx") => Reply::Task(TaskWork::new(|ctx| async move {
                tracing::info!(?ctx, "a task's work logs its context");
                Ok(text("logged"))
            })),
            Some("once") => ask(InputRequests::new()
                .elicit("ok", "Sure?", schema)
                .request_state(b"once".to_vec())
                .single_use()),
            Some(tool @ ("A" | "B")) => match modern.request_state() {
                Some(_) => {
                    let arguments = params["arguments"].clone();
                    self.ran
                        .lock()
                        .unwrap()
                        .push((tool.to_string(), arguments.clone()));
                    Reply::Result(json!({ "tool": tool, "arguments": arguments }))
                }
                None => ask(InputRequests::new()
                    .elicit("ok", "Sure?", schema)
                    .request_state(format!("sealed for {tool}").into_bytes())),
            },
            Some("count") => Reply::Result(text("counted")),
            _ => Reply::Error(RpcError::method_not_found("no such tool")),
        })
    }
}

struct Served {
    url: String,
    manager: SessionManager<Guarded>,
}

impl Served {
    fn ran(&self) -> Vec<(String, Value)> {
        self.manager.app().ran.lock().unwrap().clone()
    }
}

fn app() -> Guarded {
    let schema = json!({ "type": "object", "properties": {
        "n": { "type": "integer", "x-mcp-header": "N" },
        "region": { "type": "string", "x-mcp-header": "Region" } } });
    Guarded {
        ran: Mutex::new(Vec::new()),
        counted: Arc::new(MirroredParams::from_input_schema(&schema).unwrap()),
        started: AtomicUsize::new(0),
    }
}

async fn serve(configure: impl FnOnce(Builder<Guarded>) -> Builder<Guarded>) -> Served {
    let manager = configure(SessionManager::builder(app()).tasks(true))
        .build()
        .unwrap();
    let url = http_support::serve_manager(&manager).await;
    Served { url, manager }
}

/// Ada and Bob, each with a bearer token.
fn two_principals() -> BearerTokens {
    BearerTokens::new(BearerTokens::parse("ada=t-ada\nbob=t-bob").unwrap()).unwrap()
}

/// A 2026-07-28 `tools/call` of `tool`: `params` merged into
/// `{name, arguments: {}}`, the client declaring elicitation and (with
/// `tasks`) the tasks extension; `Mcp-Name` is the tool, `headers` added.
async fn call(
    client: &Client,
    tool: &str,
    params: Value,
    tasks: bool,
    headers: &[(&str, &str)],
) -> Answer {
    let mut body = with_meta(json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                     "params": { "name": tool, "arguments": {} } }));
    let mut capabilities = json!({ "elicitation": {} });
    if tasks {
        capabilities["extensions"] = json!({ TaskWork::EXTENSION: {} });
    }
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    if let Value::Object(params) = params {
        for (key, value) in params {
            body["params"][key] = value;
        }
    }
    let mut all = vec![("mcp-method", "tools/call"), ("mcp-name", tool)];
    all.extend_from_slice(headers);
    client.post_modern(&body, &all).await
}

async fn task_get(client: &Client, id: &str) -> Value {
    let mut body = with_meta(json!({ "jsonrpc": "2.0", "id": 8, "method": "tasks/get",
                                     "params": { "taskId": id } }));
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "extensions": { TaskWork::EXTENSION: {} } });
    let answer = client
        .post_modern(&body, &[("mcp-method", "tasks/get"), ("mcp-name", id)])
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    answer.json()["result"].clone()
}

/// Polls the task until its status is `want`.
async fn until(client: &Client, id: &str, want: &str) -> Value {
    for _ in 0..1_000 {
        let task = task_get(client, id).await;
        if task["status"] == want {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never became {want}");
}

fn task_id(answer: &Answer) -> String {
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let result = answer.json()["result"].clone();
    assert_eq!(result["resultType"], "task", "{result}");
    result["taskId"].as_str().unwrap().to_string()
}

fn retry_after(answer: &Answer) -> u64 {
    answer.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// The error message of a refused call.
fn message(answer: &Answer) -> String {
    answer.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

// --- 1. fair shares -----------------------------------------------------

/// With two bearer tokens, one principal filled the whole task
/// store with tasks waiting for input (never answered), and every other
/// principal's call got 503 from then on. Now each principal has a share
/// (a tenth of the store by default): past it 429, saying which bound, and
/// the other principal is served as if nothing happened.
#[tokio::test]
async fn a_principal_past_its_task_share_gets_429_and_no_other_principal_notices() {
    let served = serve(|b| b.authenticator(two_principals()).task_capacity(20)).await;
    let ada = Client::with_bearer(&served.url, "t-ada");
    let bob = Client::with_bearer(&served.url, "t-bob");
    for _ in 0..2 {
        task_id(&call(&ada, "ask", json!({}), true, &[]).await);
    }
    let refused = call(&ada, "ask", json!({}), true, &[]).await;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{:?}",
        refused.body
    );
    assert!(refused.headers.contains_key("retry-after"));
    let error = &refused.json()["error"];
    assert!(
        error["message"].as_str().unwrap().contains("task share"),
        "{error}"
    );
    assert_eq!(error["data"]["bound"], "task_share", "{error}");
    assert_eq!(error["data"]["limit"], 2, "{error}");
    // Bob has his whole share, and the store its room.
    for _ in 0..2 {
        let id = task_id(&call(&bob, "ask", json!({}), true, &[]).await);
        assert_eq!(
            until(&bob, &id, "input_required").await["status"],
            "input_required"
        );
    }
    let stats = served.manager.task_stats().unwrap();
    assert_eq!(stats.registry.live, 4);
}

/// The single-use record of `requestState`s has the same shape, the
/// same share (a tenth of `single_use_states`).
#[tokio::test]
async fn a_principal_past_its_single_use_share_gets_429_and_no_other_principal_notices() {
    let served = serve(|b| b.authenticator(two_principals()).single_use_states(20)).await;
    let ada = Client::with_bearer(&served.url, "t-ada");
    let bob = Client::with_bearer(&served.url, "t-bob");
    for _ in 0..2 {
        let asked = call(&ada, "once", json!({}), false, &[]).await;
        assert_eq!(asked.json()["result"]["resultType"], "input_required");
    }
    let refused = call(&ada, "once", json!({}), false, &[]).await;
    assert_eq!(
        refused.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{:?}",
        refused.body
    );
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(refused.json()["error"]["data"]["bound"], "single_use_share");
    for _ in 0..2 {
        let asked = call(&bob, "once", json!({}), false, &[]).await;
        assert_eq!(
            asked.json()["result"]["resultType"],
            "input_required",
            "{:?}",
            asked.body
        );
    }
}

/// A full store answered "the server is busy; retry later" with
/// a `Retry-After` of 1 s that could not come true (space frees only when a
/// retained task's retention ends). Now the 503 says which store is full,
/// and its `Retry-After` is when the soonest place frees; retried then,
/// the call is served.
#[tokio::test]
async fn a_full_task_store_says_so_with_a_retry_after_that_comes_true() {
    let retention = Duration::from_secs(2);
    let served = serve(|b| b.task_capacity(3).task_retention(retention)).await;
    let client = Client::new(&served.url);
    for _ in 0..3 {
        let id = task_id(&call(&client, "quick", json!({}), true, &[]).await);
        until(&client, &id, "completed").await;
    }
    let refused = call(&client, "quick", json!({}), true, &[]).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        message(&refused).contains("task store is full"),
        "{:?}",
        refused.body
    );
    assert_eq!(refused.json()["error"]["data"]["bound"], "task_capacity");
    let after = retry_after(&refused);
    // The soonest retention ends about 2 s from now, freed by the next
    // sweep: never sooner than the retention left, never much later.
    assert!((1..=4).contains(&after), "Retry-After: {after}");
    tokio::time::sleep(Duration::from_secs(after)).await;
    let mut served_again = false;
    for _ in 0..100 {
        if call(&client, "quick", json!({}), true, &[]).await.status == StatusCode::OK {
            served_again = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served_again, "a retry after Retry-After was served");
}

/// A task that asks for input and is never answered held its
/// place forever (running work never ends by its TTL, and the wait had no
/// limit). Now the wait is bounded: past it the task fails, saying why,
/// and its work is dropped.
#[tokio::test]
async fn a_task_waiting_for_input_fails_after_its_input_timeout() {
    let served = serve(|b| b.task_input_timeout(Some(Duration::from_millis(300)))).await;
    let client = Client::new(&served.url);
    let id = task_id(&call(&client, "ask", json!({}), true, &[]).await);
    assert_eq!(
        until(&client, &id, "input_required").await["status"],
        "input_required"
    );
    let failed = until(&client, &id, "failed").await;
    let message = failed["statusMessage"].as_str().unwrap();
    assert!(
        message.contains("no input arrived within 0.3 s"),
        "{failed}"
    );
    assert_eq!(failed["error"]["data"]["inputTimeoutMs"], 300, "{failed}");
    assert!(failed.get("inputRequests").is_none(), "{failed}");
    let stats = served.manager.task_stats().unwrap();
    assert_eq!(stats.ended(sessionreg::EndKind::Failed), 1);
    // A late answer changes nothing.
    let mut update = with_meta(json!({ "jsonrpc": "2.0", "id": 9, "method": "tasks/update",
        "params": { "taskId": id, "inputResponses": { "ok": { "action": "accept" } } } }));
    update["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "extensions": { TaskWork::EXTENSION: {} } });
    client
        .post_modern(
            &update,
            &[("mcp-method", "tasks/update"), ("mcp-name", &id)],
        )
        .await;
    assert_eq!(task_get(&client, &id).await["status"], "failed");
}

/// A task kept after its end still counts against its owner's share (one
/// principal cannot refill the store faster than its retention), and its
/// place comes back once the retention has passed; the 429's `Retry-After`
/// says when.
#[tokio::test]
async fn retention_counts_against_its_owners_share_until_it_frees() {
    let served = serve(|b| {
        b.authenticator(two_principals())
            .task_share(Some(1))
            .task_retention(Duration::from_secs(1))
    })
    .await;
    let ada = Client::with_bearer(&served.url, "t-ada");
    let id = task_id(&call(&ada, "quick", json!({}), true, &[]).await);
    until(&ada, &id, "completed").await;
    let refused = call(&ada, "quick", json!({}), true, &[]).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    let after = retry_after(&refused);
    assert!((1..=3).contains(&after), "Retry-After: {after}");
    tokio::time::sleep(Duration::from_secs(after)).await;
    let mut served_again = false;
    for _ in 0..100 {
        if call(&ada, "quick", json!({}), true, &[]).await.status == StatusCode::OK {
            served_again = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served_again, "the place came back after the retention");
}

// --- 2. bindings that cannot collide ----------------------------------

/// The digest of the issue: `method \0 key \0 json(value) \0 ...`, keys as
/// raw bytes. `crafted` is a first request (tool A, harmless arguments)
/// whose params hash, that way, like `target`'s (the tool `tool`, with the
/// arguments an attacker wants): one key carries, between U+0000s, the
/// other request's members.
fn crafted_pair(tool: &str) -> (Value, Value) {
    let wanted = json!({ "path": "/etc/passwd", "force": true });
    let harmless = json!({ "a": 1 });
    let first_key = format!("_a\u{0}0\u{0}arguments\u{0}{wanted}\u{0}name\u{0}\"{tool}\"\u{0}o");
    let last_key = format!("o\u{0}0\u{0}arguments\u{0}{harmless}\u{0}name");
    let crafted = json!({ first_key: 0, "arguments": harmless, "name": "A" });
    let target = json!({ "_a": 0, "arguments": wanted, "name": tool, last_key: "A" });
    (crafted, target)
}

/// A state sealed for `tools/call` of A with harmless arguments
/// opened for A with `{"path": "/etc/passwd", "force": true}`, and for B.
/// Now the binding is over an unambiguous encoding: both are refused, and
/// the tool never runs.
#[tokio::test]
async fn a_state_sealed_for_a_crafted_request_opens_for_no_other() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    for tool in ["A", "B"] {
        let (crafted, target) = crafted_pair(tool);
        let asked = call(&client, "A", crafted, false, &[]).await;
        let result = asked.json()["result"].clone();
        assert_eq!(result["resultType"], "input_required", "{result}");
        let state = result["requestState"].as_str().unwrap().to_string();
        let mut retry = target;
        retry["requestState"] = state.into();
        retry["inputResponses"] = json!({ "ok": { "action": "accept" } });
        let answer = call(&client, tool, retry, false, &[]).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{tool}: {:?}",
            answer.body
        );
        assert_eq!(
            answer.json()["error"]["code"],
            jsonrpc::RpcError::INVALID_PARAMS
        );
    }
    assert_eq!(served.ran(), vec![], "no tool ran with a state not its own");
}

/// The honest retry still opens (the binding ignores only what a retry
/// adds: `requestState`, `inputResponses`, and the per-request `_meta`).
#[tokio::test]
async fn a_state_opens_for_its_own_retry() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let arguments = json!({ "path": "/tmp/x", "weird\u{0}key": [1, "\u{0}"] });
    let asked = call(&client, "A", json!({ "arguments": arguments }), false, &[]).await;
    let state = asked.json()["result"]["requestState"].clone();
    let retry = json!({ "arguments": arguments, "requestState": state,
                        "inputResponses": { "ok": { "action": "accept" } } });
    let answer = call(&client, "A", retry, false, &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(served.ran(), vec![("A".to_string(), arguments)]);
}

// --- 3. headers -------------------------------------------------------

/// A second `Mcp-Param-*` header was accepted (the first was
/// checked; a gateway in front may act on the other). Now any header of
/// that family given twice is 400, whether the tool mirrors it or not.
#[tokio::test]
async fn a_second_mcp_param_header_is_400() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let args = json!({ "arguments": { "n": 1, "region": "eu" } });
    let fine = call(
        &client,
        "count",
        args.clone(),
        false,
        &[("mcp-param-n", "1"), ("mcp-param-region", "eu")],
    )
    .await;
    assert_eq!(fine.status, StatusCode::OK, "{:?}", fine.body);
    for extra in ["mcp-param-region", "mcp-param-tenant"] {
        let headers = [
            ("mcp-param-n", "1"),
            ("mcp-param-region", "eu"),
            (extra, "us"),
            ("mcp-param-tenant", "acme"),
        ];
        let twice = call(&client, "count", args.clone(), false, &headers).await;
        assert_eq!(
            twice.status,
            StatusCode::BAD_REQUEST,
            "{extra}: {:?}",
            twice.body
        );
        assert_eq!(
            twice.json()["error"]["code"],
            jsonrpc::RpcError::HEADER_MISMATCH
        );
        assert!(
            message(&twice).contains("more than once"),
            "{:?}",
            twice.body
        );
    }
}

/// Mirrored integers were compared as `f64`: 2^53 + 1 matched
/// 2^53, and `4.2e1` matched 42. Now they compare exactly, in the decimal
/// form the transport page gives (`42`, `-7`; `42.0` equals 42, as its
/// note on numeric comparison says), within the JavaScript-safe range the
/// page requires.
#[tokio::test]
async fn mirrored_integers_compare_exactly() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let count = |n: Value, header: &'static str| {
        let client = &client;
        async move {
            let args = json!({ "arguments": { "n": n } });
            call(client, "count", args, false, &[("mcp-param-n", header)])
                .await
                .status
        }
    };
    assert_eq!(count(json!(42), "42").await, StatusCode::OK);
    assert_eq!(count(json!(42), "42.0").await, StatusCode::OK);
    assert_eq!(count(json!(-7), "-7").await, StatusCode::OK);
    let max_safe = 9_007_199_254_740_991_i64;
    assert_eq!(
        count(json!(max_safe), "9007199254740991").await,
        StatusCode::OK
    );
    for (body, header) in [
        (json!(9_007_199_254_740_992_i64), "9007199254740993"),
        (json!(9_007_199_254_740_993_i64), "9007199254740993"),
        (json!(42), "4.2e1"),
        (json!(42), "42.5"),
        (json!(42), "+42"),
        (json!(42), "042"),
        (json!(42), "0x2a"),
        (json!(42), "43"),
    ] {
        assert_eq!(
            count(body.clone(), header).await,
            StatusCode::BAD_REQUEST,
            "{body} vs {header}"
        );
    }
}

/// With two `Origin` headers only the first was checked. Now a
/// second one is 400, before anything reads either.
#[tokio::test]
async fn a_second_origin_header_is_400() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let body = with_meta(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": { "name": "count", "arguments": {} } }));
    let once = [
        ("mcp-method", "tools/call"),
        ("mcp-name", "count"),
        ("origin", "http://localhost:1"),
    ];
    let answer = client.post_modern(&body, &once).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let twice = [
        ("mcp-method", "tools/call"),
        ("mcp-name", "count"),
        ("origin", "http://localhost:1"),
        ("origin", "https://evil.example"),
    ];
    let answer = client.post_modern(&body, &twice).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{:?}", answer.body);
    assert!(message(&answer).contains("Origin"), "{:?}", answer.body);
}

// --- 7. shutdown and logs ---------------------------------------------

/// A task created while shutdown's sweep ran panicked its
/// connection (`expect("held by its running guard")`). Creations racing a
/// sweep that runs again and again are answered, every one, with a task or
/// a clean JSON-RPC error: never a dropped connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_created_while_the_server_shuts_down_get_clean_answers() {
    let served = serve(|b| b.task_capacity(100_000)).await;
    let client = Client::new(&served.url);
    let manager = served.manager.clone();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sweeping = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut sweeps = 0u64;
            while !stop.load(Ordering::SeqCst) {
                manager.shutdown();
                sweeps += 1;
            }
            sweeps
        })
    };
    let mut statuses = std::collections::BTreeMap::new();
    for _ in 0..40 {
        let calls = (0..10).map(|_| {
            let client = &client;
            async move {
                let mut body =
                    with_meta(json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                                 "params": { "name": "quick", "arguments": {} } }));
                body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                    json!({ "extensions": { TaskWork::EXTENSION: {} } });
                let request = client.modern_request(
                    body.to_string(),
                    &[("mcp-method", "tools/call"), ("mcp-name", "quick")],
                );
                client.try_send(request).await
            }
        });
        for answer in futures_util::future::join_all(calls).await {
            let answer = answer.expect("every call is answered, none dropped");
            let body = answer.json();
            assert!(
                body.get("result").is_some() || body["error"]["code"].is_i64(),
                "{body}"
            );
            *statuses.entry(answer.status.as_u16()).or_insert(0) += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    let sweeps = sweeping.join().unwrap();
    assert!(sweeps > 0);
    for status in statuses.keys() {
        assert!([200, 503].contains(status), "{statuses:?}");
    }
}

/// `TaskContext`'s `Debug` printed the whole task id (a bearer
/// credential: whoever holds it reads the task). A task's work that logs
/// its context now logs the id's `Debug` form (slot, generation, node),
/// never its secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_log_line_carries_a_whole_task_id() {
    let captured = Captured::default();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .with_ansi(false)
        .init();
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let id = task_id(&call(&client, "log_ctx", json!({}), true, &[]).await);
    until(&client, &id, "completed").await;
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("a task's work logs its context"),
        "the work logged"
    );
    // The secret: the id's last 32 hex digits.
    let secret = &id[id.len() - 32..];
    assert!(
        !logs.contains(secret),
        "a log line carries the task id {id}"
    );
    assert!(!logs.contains(&id[id.len() - 16..]), "half of its secret");
}

/// Everything logged, as the `fmt` layer writes it.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

// --- 6. configuration -------------------------------------------------

/// A `requestState` life longer than the record of single-use
/// states can measure panicked `build()` (an `expect` on the registry's
/// error). Now it is a typed error naming the setting and its maximum.
#[test]
fn a_request_state_ttl_too_long_is_a_typed_error_not_a_panic() {
    let built = std::panic::catch_unwind(|| {
        SessionManager::builder(app())
            .request_state_ttl(Duration::from_millis(300_000_000_000))
            .build()
            .err()
            .map(|e| e.to_string())
    });
    let error = built.expect("build() does not panic").expect("an error");
    assert!(error.contains("request_state_ttl"), "{error}");
}

/// `task_capacity` 0 reached `expect("a capacity the builder
/// checked")`. Now it is a typed error naming the setting.
#[test]
fn a_task_capacity_of_zero_is_a_typed_error_not_a_panic() {
    let built = std::panic::catch_unwind(|| {
        SessionManager::builder(app())
            .tasks(true)
            .task_capacity(0)
            .build()
            .err()
            .map(|e| e.to_string())
    });
    let error = built.expect("build() does not panic").expect("an error");
    assert!(error.contains("task_capacity"), "{error}");
}

#[tokio::test]
async fn anonymous_servers_keep_their_global_bounds_only() {
    let served = serve(|b| b.task_capacity(20)).await;
    let client = Client::new(&served.url);
    for _ in 0..20 {
        task_id(&call(&client, "ask", json!({}), true, &[]).await);
    }
    let refused = call(&client, "ask", json!({}), true, &[]).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(eventually(|| served.manager.app().started.load(Ordering::SeqCst) == 21).await);
}

/// `conformance_server
/// --request-state-ttl-ms 300000000000` panicked in `Builder::build`. The
/// example now prints the typed error (naming the setting and its maximum)
/// and exits 2, as for a flag clap refuses. Built by cargo (a no-op when up
/// to date), in this test's profile.
#[test]
fn the_example_says_why_a_setting_is_out_of_range_and_exits_2() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "run",
        "--quiet",
        "-p",
        "sessionreg",
        "--example",
        "conformance_server",
    ]);
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    let output = command
        .args([
            "--",
            "--addr",
            "127.0.0.1:0",
            "--request-state-ttl-ms",
            "300000000000",
        ])
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("request_state_ttl = 300000000s is out of range"),
        "{stderr}"
    );
    assert!(stderr.contains("at most 31536000s"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

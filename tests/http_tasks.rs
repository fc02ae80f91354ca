//! The tasks extension (`io.modelcontextprotocol/tasks`) over real sockets:
//! a task's life through `tools/call`, `tasks/get`, `tasks/update` and
//! `tasks/cancel`; who may see a task; and what a hostile client cannot do
//! with it (guess ids, flood, never poll, outlive its TTL).
#![cfg(feature = "http")]

mod http_support;

use http::StatusCode;
use http_support::{eventually, with_meta, Answer, Client};
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, Message, RpcError};
use sessionreg::http::modern::InputRequests;
use sessionreg::http::SessionManager;
use sessionreg::http::TaskWork;
use sessionreg::http::{App, BearerTokens, Builder, Context, HandlerError, Reply};
use sessionreg::{EndKind, Miss};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Tools: `wait` (a task until `release`d, or its work dropped), `ask`
/// (a task that asks for `a` and `b`), `fail` (fails with a JSON-RPC
/// error), `only_task` (required to be a task), `quick` (a task that
/// answers at once), `own` (a task of a store of the application's own).
#[derive(Default)]
struct Jobs {
    release: Arc<Notify>,
    /// `wait` works running now (counted out when their future is dropped).
    waiting: Arc<AtomicUsize>,
}

struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn text(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }] })
}

impl App for Jobs {
    type Session = ();

    fn open(&self, _: &jsonrpc::Request, _: &http::request::Parts) -> Result<(), RpcError> {
        Ok(())
    }

    async fn handle(&self, _ctx: Context<()>, message: Message) -> Result<Reply, HandlerError> {
        let Message::Request(request) = message else {
            return Ok(Reply::Accepted);
        };
        let params = request.params_value().unwrap_or(Value::Null);
        Ok(match params["name"].as_str() {
            Some("wait") => {
                let (release, waiting) = (Arc::clone(&self.release), Arc::clone(&self.waiting));
                Reply::Task(TaskWork::new(move |_ctx| async move {
                    waiting.fetch_add(1, Ordering::SeqCst);
                    let _counted = Counted(waiting);
                    release.notified().await;
                    Ok(text("released"))
                }))
            }
            Some("ask") => Reply::Task(TaskWork::new(|ctx| async move {
                let schema = json!({ "type": "object", "properties": {} });
                let answers = ctx
                    .input(
                        InputRequests::new()
                            .elicit("a", "A?", schema.clone())
                            .elicit("b", "B?", schema),
                    )
                    .await?;
                Ok(text(&format!(
                    "{} {}",
                    answers["a"]["v"], answers["b"]["v"]
                )))
            })),
            Some("fail") => Reply::Task(TaskWork::new(|_ctx| async move {
                Err(RpcError::new(-32000, "went wrong"))
            })),
            Some("only_task") => {
                Reply::Task(TaskWork::new(|_ctx| async move { Ok(text("as a task")) }).required())
            }
            Some("quick") => Reply::Task(TaskWork::new(|_ctx| async move { Ok(text("quick")) })),
            // A task of a store of the application's own, whose result
            // says "complete" where the layer must write "task".
            Some("own") => Reply::TaskCreated(
                serde_json::value::to_raw_value(&json!({
                    "taskId": "own-1", "status": "working", "resultType": "complete",
                    "createdAt": "2026-12-05T00:00:00Z", "ttlMs": 60000,
                }))
                .unwrap(),
            ),
            _ => Reply::Error(RpcError::method_not_found("no such tool")),
        })
    }
}

struct Served {
    url: String,
    manager: SessionManager<Jobs>,
}

impl Served {
    fn ended(&self, kind: EndKind) -> u64 {
        self.manager.task_stats().unwrap().ended(kind)
    }

    fn waiting(&self) -> usize {
        self.manager.app().waiting.load(Ordering::SeqCst)
    }
}

async fn serve(configure: impl FnOnce(Builder<Jobs>) -> Builder<Jobs>) -> Served {
    let manager = configure(SessionManager::builder(Jobs::default()).tasks(true))
        .build()
        .unwrap();
    let url = http_support::serve_manager(&manager).await;
    Served { url, manager }
}

/// A 2026-07-28 request; `tasks`: whether the client declares the
/// extension on it. `Mcp-Name` is the tool's name or the task id.
async fn send(
    client: &Client,
    method: &str,
    params: Value,
    tasks: bool,
    name: Option<&str>,
) -> Answer {
    let mut body =
        with_meta(json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }));
    if tasks {
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({ "extensions": { TaskWork::EXTENSION: {} } });
    }
    let name = name.map(str::to_owned).or_else(|| params_name(&body));
    let mut headers = vec![("mcp-method", method)];
    if let Some(name) = &name {
        headers.push(("mcp-name", name));
    }
    client.post_modern(&body, &headers).await
}

fn params_name(body: &Value) -> Option<String> {
    let params = &body["params"];
    params["name"]
        .as_str()
        .or_else(|| params["taskId"].as_str())
        .map(str::to_owned)
}

async fn call(client: &Client, tool: &str, tasks: bool) -> Answer {
    send(
        client,
        "tools/call",
        json!({ "name": tool, "arguments": {} }),
        tasks,
        None,
    )
    .await
}

/// Calls `tool` as a task; returns its id.
async fn create(client: &Client, tool: &str) -> String {
    let answer = call(client, tool, true).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let result = &answer.json()["result"];
    assert_eq!(result["resultType"], "task", "{result}");
    for absent in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(result.get(absent).is_none(), "{absent} in {result}");
    }
    assert!(result["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(result["ttlMs"].as_u64().unwrap() > 0);
    result["taskId"].as_str().unwrap().to_string()
}

async fn get(client: &Client, id: &str) -> Value {
    let answer = send(client, "tasks/get", json!({ "taskId": id }), true, None).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    answer.json()
}

async fn status(client: &Client, id: &str) -> String {
    get(client, id).await["result"]["status"]
        .as_str()
        .unwrap_or("?")
        .to_string()
}

/// Polls until the task's status is `want`.
async fn until(client: &Client, id: &str, want: &str) -> Value {
    for _ in 0..500 {
        let answer = get(client, id).await;
        if answer["result"]["status"] == want {
            return answer["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never became {want}: {}", get(client, id).await);
}

/// A task the application keeps in a store of its own
/// (`Reply::TaskCreated`), on a server whose layer does not serve tasks:
/// answered as a task (`resultType: "task"`, the server named) where the
/// call declared the extension, refused with -32603 where it did not (a
/// client that did not ask cannot take one). Where the layer's store
/// serves `tasks/*`, refused too: nothing would ever find that task.
#[tokio::test]
async fn a_task_of_the_applications_own_store_is_a_task_only_where_asked_for() {
    let layered = serve(|b| b).await;
    let refused = call(&Client::new(&layered.url), "own", true).await.json();
    assert_eq!(
        refused["error"]["code"],
        jsonrpc::RpcError::INTERNAL_ERROR,
        "{refused}"
    );
    assert!(refused["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("Reply::Task")));

    let served = serve(|b| b.tasks(false)).await;
    let client = Client::new(&served.url);
    let answer = call(&client, "own", true).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let result = &answer.json()["result"];
    assert_eq!(result["resultType"], "task", "{result}");
    assert_eq!(result["taskId"], "own-1");
    assert_eq!(result["ttlMs"], 60000);

    let refused = call(&client, "own", false).await.json();
    assert_eq!(
        refused["error"]["code"],
        jsonrpc::RpcError::INTERNAL_ERROR,
        "{refused}"
    );
    assert!(refused.get("result").is_none(), "{refused}");
}

#[tokio::test]
async fn a_task_runs_is_polled_and_completes_and_discovery_says_so() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let discover = send(&client, "server/discover", json!({}), false, None).await;
    assert_eq!(
        discover.json()["result"]["capabilities"]["extensions"][TaskWork::EXTENSION],
        json!({})
    );
    let id = create(&client, "wait").await;
    // Readable at once (created before the answer), and working.
    assert_eq!(status(&client, &id).await, "working");
    assert!(eventually(|| served.waiting() == 1).await);
    served.manager.app().release.notify_one();
    let done = until(&client, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "released");
    assert_eq!(get(&client, &id).await["result"]["resultType"], "complete");
    let failed = create(&client, "fail").await;
    let failed = until(&client, &failed, "failed").await;
    assert_eq!(failed["error"]["code"], -32000);
    assert!(failed.get("result").is_none());
    assert_eq!(
        (
            served.ended(EndKind::Completed),
            served.ended(EndKind::Failed)
        ),
        (1, 1)
    );
}

#[tokio::test]
async fn without_the_extension_a_task_runs_inline_or_is_refused_when_required() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let inline = call(&client, "quick", false).await;
    assert_eq!(inline.json()["result"]["resultType"], "complete");
    assert_eq!(inline.json()["result"]["content"][0]["text"], "quick");
    let refused = call(&client, "only_task", false).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    let error = &refused.json()["error"];
    assert_eq!(error["code"], -32021);
    assert_eq!(
        error["data"]["requiredCapabilities"]["extensions"][TaskWork::EXTENSION],
        json!({})
    );
    // The task methods too, before the id is even looked at.
    let get = send(
        &client,
        "tasks/get",
        json!({ "taskId": "made-up" }),
        false,
        None,
    )
    .await;
    assert_eq!(get.json()["error"]["code"], -32021);
    assert_eq!(served.manager.task_stats().unwrap().registry.created, 0);
}

#[tokio::test]
async fn input_is_asked_updated_in_parts_and_unknown_keys_are_ignored() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let id = create(&client, "ask").await;
    let asked = until(&client, &id, "input_required").await;
    assert_eq!(asked["inputRequests"]["a"]["method"], "elicitation/create");
    let update = |responses: Value| {
        let (client, id) = (&client, id.clone());
        async move {
            let answer = send(
                client,
                "tasks/update",
                json!({ "taskId": id, "inputResponses": responses }),
                true,
                None,
            )
            .await;
            assert_eq!(answer.json()["result"], json!({ "resultType": "complete" }));
        }
    };
    update(json!({ "a": { "v": 1 }, "never-asked": { "v": 0 } })).await;
    let partial = get(&client, &id).await["result"].clone();
    assert_eq!(partial["status"], "input_required");
    assert!(partial["inputRequests"].get("a").is_none());
    assert!(partial["inputRequests"].get("b").is_some());
    // Answered already: ignored.
    update(json!({ "a": { "v": 9 } })).await;
    update(json!({ "b": { "v": 2 } })).await;
    let done = until(&client, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "1 2");
}

#[tokio::test]
async fn cancel_ends_the_task_drops_its_work_and_is_acknowledged_again() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let id = create(&client, "wait").await;
    assert!(eventually(|| served.waiting() == 1).await);
    for _ in 0..2 {
        let answer = send(&client, "tasks/cancel", json!({ "taskId": id }), true, None).await;
        assert_eq!(answer.json()["result"], json!({ "resultType": "complete" }));
    }
    assert_eq!(status(&client, &id).await, "cancelled");
    assert!(
        eventually(|| served.waiting() == 0).await,
        "the work's future was dropped"
    );
    assert_eq!(served.ended(EndKind::Cancelled), 1);
    // A release now finds no work: the outcome stays.
    served.manager.app().release.notify_one();
    assert_eq!(status(&client, &id).await, "cancelled");
}

#[tokio::test]
async fn guessed_ids_and_another_principals_task_are_not_found_and_counted() {
    let tokens = BearerTokens::new(BearerTokens::parse("ada=t-ada\nbob=t-bob").unwrap()).unwrap();
    let served = serve(|b| b.authenticator(tokens)).await;
    let ada = Client::with_bearer(&served.url, "t-ada");
    let bob = Client::with_bearer(&served.url, "t-bob");
    let id = create(&ada, "quick").await;
    let not_found = |answer: Answer| {
        assert_eq!(answer.status, StatusCode::OK);
        let error = &answer.json()["error"];
        assert_eq!(error["code"], jsonrpc::RpcError::INVALID_PARAMS);
        assert_eq!(error["message"], "Failed to retrieve task: Task not found");
    };
    not_found(send(&bob, "tasks/get", json!({ "taskId": id }), true, None).await);
    not_found(send(&bob, "tasks/cancel", json!({ "taskId": id }), true, None).await);
    // The id with one digit of its secret changed, and ids made up.
    let mut forged = id.clone().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
    let forged = String::from_utf8(forged).unwrap();
    for guess in [
        forged.as_str(),
        "00000000-0000-4000-8000-000000000000",
        "tasks-conformance-nonexistent-12345",
    ] {
        not_found(send(&ada, "tasks/get", json!({ "taskId": guess }), true, None).await);
    }
    let stats = served.manager.task_stats().unwrap().registry;
    assert_eq!(stats.misses(Miss::Principal), 2);
    assert_eq!(stats.misses(Miss::Forged), 1);
    assert_eq!(stats.misses(Miss::Malformed), 2);
    let metrics = served.manager.metrics();
    assert!(metrics.contains("sessionreg_task_lookups_rejected_total{cause=\"forged\"} 1"));
    // Ada's task is untouched.
    until(&ada, &id, "completed").await;
}

#[tokio::test]
async fn the_routing_header_must_name_the_task() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    let id = create(&client, "quick").await;
    let answer = send(
        &client,
        "tasks/get",
        json!({ "taskId": id }),
        true,
        Some("another-task"),
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer.json()["error"]["code"],
        jsonrpc::RpcError::HEADER_MISMATCH
    );
}

#[tokio::test]
async fn a_flood_of_tasks_meets_the_capacity_and_ended_ones_make_room_after_their_retention() {
    let served = serve(|b| {
        b.task_capacity(3)
            .task_retention(Duration::from_millis(100))
    })
    .await;
    let client = Client::new(&served.url);
    let ids: Vec<String> =
        futures_util::future::join_all((0..3).map(|_| create(&client, "quick"))).await;
    let refused = call(&client, "quick", true).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.headers.contains_key("retry-after"));
    // Never polled: each is freed once its retention has passed.
    assert!(eventually(|| served.manager.task_stats().unwrap().registry.live == 0).await);
    let gone = send(
        &client,
        "tasks/get",
        json!({ "taskId": ids[0] }),
        true,
        None,
    )
    .await;
    assert_eq!(
        gone.json()["error"]["message"],
        "Failed to retrieve task: Task has expired"
    );
    create(&client, "quick").await;
}

#[tokio::test]
async fn running_work_outlives_its_ttl_unless_the_server_opts_in() {
    let kept = serve(|b| b.task_retention(Duration::from_millis(50))).await;
    let client = Client::new(&kept.url);
    let id = create(&client, "wait").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status(&client, &id).await, "working");
    assert_eq!(kept.waiting(), 1);
    kept.manager.app().release.notify_one();
    until(&client, &id, "completed").await;

    // Opted in: the work ends at its TTL (here the retention, 300 ms).
    let ended = serve(|b| {
        b.task_retention(Duration::from_millis(300))
            .task_ttl_ends_work(true)
    })
    .await;
    let client = Client::new(&ended.url);
    let id = create(&client, "wait").await;
    let failed = until(&client, &id, "failed").await;
    assert!(failed["error"]["message"]
        .as_str()
        .unwrap()
        .contains("time to live"));
    assert_eq!(ended.ended(EndKind::Expired), 1);
    assert!(
        eventually(|| ended.waiting() == 0).await,
        "its work was dropped"
    );
}

#[tokio::test]
async fn shutdown_stops_every_tasks_work() {
    let served = serve(|b| b).await;
    let client = Client::new(&served.url);
    create(&client, "wait").await;
    assert!(eventually(|| served.waiting() == 1).await);
    served
        .manager
        .shutdown_gracefully(Duration::from_millis(10))
        .await;
    assert!(eventually(|| served.waiting() == 0).await);
    assert!(eventually(|| served.ended(EndKind::Abandoned) == 1).await);
}

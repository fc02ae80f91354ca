//! rmcp's own client (`StreamableHttpClientTransport`, reqwest) against the
//! tasks example's server (its own `app.rs`) on sessionreg's TaskManager:
//! on the stateless 2026-07-28 wire (`server/discover`, each request on its
//! own) and on the legacy wire (an `initialize`d session in sessionreg's
//! registry). Waits poll as a client does (the bound is a safety net, not
//! the assertion).

#[path = "../examples/rmcp_tasks_server/app.rs"]
mod app;
#[path = "../examples/common/listen.rs"]
mod listen;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, DetailedTask, ErrorCode, GetTaskParams, Implementation, InputResponses,
    ProtocolVersion, Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError, ServiceExt};
use serde_json::{json, Value};
use sessionreg::EndKind;
use sessionreg_rmcp::{RegistrySessionManager, TaskManager};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

struct Server {
    url: String,
    tasks: TaskManager,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start(tasks: TaskManager) -> Server {
        let sessions = Arc::new(RegistrySessionManager::default());
        let stop = CancellationToken::new();
        let router = app::router(sessions, tasks.clone(), stop.child_token(), String::new);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let stopped = stop.clone().cancelled_owned();
        let task = tokio::spawn(async move {
            let _ = listen::serve(listener, router, stopped).await;
        });
        Server {
            url,
            tasks,
            stop,
            task,
        }
    }

    async fn stop(self) {
        self.tasks.shutdown();
        self.stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }
}

type Client = RunningService<RoleClient, ClientConfig>;

fn config(tasks: bool) -> ClientConfig {
    let capabilities = if tasks {
        json!({ "elicitation": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } })
    } else {
        json!({ "elicitation": {} })
    };
    let capabilities: ClientCapabilities = serde_json::from_value(capabilities).unwrap();
    ClientConfig::new(capabilities, Implementation::new("tasks-test", "0"))
}

/// A client on the stateless 2026-07-28 wire.
async fn stateless(url: &str, tasks: bool) -> Client {
    config(tasks)
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
            ),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("server/discover")
}

/// A client with a session (legacy `initialize`).
async fn session(url: &str, tasks: bool) -> Client {
    config(tasks)
        .serve(StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
        ))
        .await
        .expect("initialize")
}

fn call(tool: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned()).with_arguments(args.as_object().unwrap().clone())
}

async fn create(client: &Client, tool: &str, args: Value) -> Task {
    match client.call_tool_once(call(tool, args)).await.unwrap() {
        CallToolResponse::Task(create) => create.task,
        other => panic!("{tool}: expected a task, got {other:?}"),
    }
}

async fn get(client: &Client, id: &str) -> DetailedTask {
    client
        .peer()
        .get_task(GetTaskParams::new(id.to_owned()))
        .await
        .unwrap()
        .task
}

/// Polls `tasks/get` until `done` holds for the task.
async fn poll(client: &Client, id: &str, done: impl Fn(&DetailedTask) -> bool) -> DetailedTask {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let task = get(client, id).await;
        if done(&task) || Instant::now() > deadline {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A `confirm_delete` task of `filename`, once it asks for its input: the
/// task as created, and as it reads then.
async fn asking(client: &Client, filename: &str) -> (Task, DetailedTask) {
    let task = create(client, "confirm_delete", json!({ "filename": filename })).await;
    let asking = poll(client, &task.task_id, |t| {
        t.status() == TaskStatus::InputRequired
    })
    .await;
    (task, asking)
}

async fn terminal(client: &Client, id: &str) -> DetailedTask {
    poll(client, id, |t| t.status().is_terminal()).await
}

fn text(payload: &TaskPayload) -> String {
    let TaskPayload::Completed { result } = payload else {
        panic!("not completed: {payload:?}");
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result.clone())).unwrap();
    result.content[0].as_text().unwrap().text.clone()
}

fn inputs(task: &DetailedTask) -> Vec<String> {
    match &task.payload {
        TaskPayload::InputRequired { input_requests } => input_requests.keys().cloned().collect(),
        _ => vec![],
    }
}

async fn update(client: &Client, id: &str, responses: Value) {
    let responses: InputResponses = serde_json::from_value(responses).unwrap();
    client
        .peer()
        .update_task(UpdateTaskParams::new(id.to_owned(), responses))
        .await
        .unwrap();
}

async fn cancel(client: &Client, id: &str) -> Result<(), ServiceError> {
    client
        .peer()
        .cancel_task(CancelTaskParams::new(id.to_owned()))
        .await
}

fn code(error: ServiceError) -> ErrorCode {
    match error {
        ServiceError::McpError(e) => e.code,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test]
async fn stateless_rmcp_client_runs_tasks_to_completion_and_failure() {
    let server = Server::start(TaskManager::builder().node_id(0x5e).build().unwrap()).await;
    let client = stateless(&server.url, true).await;

    // A sync-only tool stays sync.
    let greet = client
        .call_tool_once(call("greet", json!({ "name": "rmcp" })))
        .await
        .unwrap();
    let CallToolResponse::Complete(greet) = greet else {
        panic!("greet is sync: {greet:?}");
    };
    assert_eq!(greet.content[0].as_text().unwrap().text, "Hello, rmcp!");

    let task = create(
        &client,
        "slow_compute",
        json!({ "seconds": 0.05, "label": "e2e" }),
    )
    .await;
    assert_eq!(task.task_id.len(), 48);
    assert!(task.task_id.starts_with("5e"), "{}", task.task_id);
    assert_eq!(task.ttl_ms, Some(300_000));
    let done = terminal(&client, &task.task_id).await;
    assert_eq!(text(&done.payload), "computed e2e in 0.05 s");

    // A tool error completes its task; a JSON-RPC error fails it.
    let failing = create(&client, "failing_job", json!({})).await;
    let done = terminal(&client, &failing.task_id).await;
    let TaskPayload::Completed { result } = &done.payload else {
        panic!("{done:?}");
    };
    assert_eq!(result["isError"], true);
    let broken = create(&client, "protocol_error_job", json!({})).await;
    let done = terminal(&client, &broken.task_id).await;
    let TaskPayload::Failed { error } = &done.payload else {
        panic!("{done:?}");
    };
    assert_eq!(error["code"], -32603);

    let unknown = client
        .peer()
        .get_task(GetTaskParams::new("no-such-task".to_owned()))
        .await
        .unwrap_err();
    assert_eq!(code(unknown), ErrorCode::INVALID_PARAMS);

    let stats = server.tasks.stats();
    assert_eq!(stats.ended(EndKind::Completed), 2);
    assert_eq!(stats.ended(EndKind::Failed), 1);
    assert_eq!(server.tasks.running_task_count(), 0);
    client.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn stateless_rmcp_client_answers_input_requests_with_tasks_update() {
    let server = Server::start(TaskManager::new()).await;
    let client = stateless(&server.url, true).await;

    let (task, asking) = asking(&client, "a.txt").await;
    assert_eq!(inputs(&asking), ["confirm"]);
    // An unknown key is acknowledged and changes nothing.
    update(&client, &task.task_id, json!({ "nope": {} })).await;
    assert_eq!(inputs(&get(&client, &task.task_id).await), ["confirm"]);
    update(
        &client,
        &task.task_id,
        json!({ "confirm": { "action": "accept", "content": { "confirm": true } } }),
    )
    .await;
    let done = terminal(&client, &task.task_id).await;
    assert_eq!(text(&done.payload), "Deleted a.txt");

    // Two requests at once, answered one by one.
    let task = create(&client, "multi_input", json!({})).await;
    let asking = poll(&client, &task.task_id, |t| inputs(t).len() == 2).await;
    assert_eq!(inputs(&asking), ["confirm", "name"]);
    update(
        &client,
        &task.task_id,
        json!({ "name": { "action": "accept", "content": { "name": "Ada" } } }),
    )
    .await;
    assert_eq!(inputs(&get(&client, &task.task_id).await), ["confirm"]);
    update(
        &client,
        &task.task_id,
        json!({ "confirm": { "action": "accept", "content": { "confirm": true } } }),
    )
    .await;
    let done = terminal(&client, &task.task_id).await;
    assert_eq!(text(&done.payload), "name: Ada; confirmed: true");

    // An MRTR round first, then a task with the elicited name.
    let round1 = client
        .call_tool_once(call("test_tool_with_task", json!({})))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(round1) = round1 else {
        panic!("an MRTR round first: {round1:?}");
    };
    assert!(round1.input_requests.unwrap().contains_key("user_name"));
    let responses: InputResponses = serde_json::from_value(
        json!({ "user_name": { "action": "accept", "content": { "name": "Alice" } } }),
    )
    .unwrap();
    let round2 = client
        .call_tool_once(call("test_tool_with_task", json!({})).with_input_responses(responses))
        .await
        .unwrap();
    let CallToolResponse::Task(round2) = round2 else {
        panic!("then a task: {round2:?}");
    };
    let done = terminal(&client, &round2.task.task_id).await;
    assert_eq!(text(&done.payload), "Hello, Alice!");
    client.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn stateless_rmcp_client_cancels_a_running_task() {
    let server = Server::start(TaskManager::new()).await;
    let client = stateless(&server.url, true).await;
    let task = create(
        &client,
        "slow_compute",
        json!({ "seconds": 600, "label": "cancel" }),
    )
    .await;
    assert_eq!(server.tasks.running_task_count(), 1);
    cancel(&client, &task.task_id).await.unwrap();
    let done = terminal(&client, &task.task_id).await;
    assert_eq!(done.status(), TaskStatus::Cancelled);
    // Again, on an ended task: the same empty acknowledgement.
    cancel(&client, &task.task_id).await.unwrap();
    assert_eq!(server.tasks.stats().ended(EndKind::Cancelled), 1);
    assert_eq!(server.tasks.running_task_count(), 0);
    client.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn without_the_extension_tools_run_sync_and_tasks_methods_are_refused() {
    let server = Server::start(TaskManager::new()).await;
    let plain = stateless(&server.url, false).await;
    let sync = plain
        .call_tool_once(call(
            "slow_compute",
            json!({ "seconds": 0, "label": "sync" }),
        ))
        .await
        .unwrap();
    assert!(
        matches!(sync, CallToolResponse::Complete(_)),
        "sync without the extension: {sync:?}"
    );
    let required = plain
        .call_tool_once(call("failing_job", json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        code(required),
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
    );
    let gated = plain
        .peer()
        .get_task(GetTaskParams::new("gate".to_owned()))
        .await
        .unwrap_err();
    assert_eq!(code(gated), ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
    plain.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn tasks_outlive_the_session_that_created_them_on_the_legacy_wire() {
    let server = Server::start(TaskManager::new()).await;
    let first = session(&server.url, true).await;
    let (task, _) = asking(&first, "b.txt").await;
    // rmcp's client ends its session with a DELETE; the task is the
    // manager's, not the session's.
    first.cancel().await.unwrap();
    let second = session(&server.url, true).await;
    assert_eq!(inputs(&get(&second, &task.task_id).await), ["confirm"]);
    update(
        &second,
        &task.task_id,
        json!({ "confirm": { "action": "decline" } }),
    )
    .await;
    let done = terminal(&second, &task.task_id).await;
    assert_eq!(text(&done.payload), "Kept b.txt");
    second.cancel().await.unwrap();
    server.stop().await;
}

#[tokio::test]
async fn at_capacity_the_client_sees_a_failed_task_with_the_reason() {
    let server = Server::start(TaskManager::builder().capacity(1).build().unwrap()).await;
    let client = stateless(&server.url, true).await;
    let held = create(
        &client,
        "slow_compute",
        json!({ "seconds": 600, "label": "held" }),
    )
    .await;
    let refused = create(
        &client,
        "slow_compute",
        json!({ "seconds": 1, "label": "refused" }),
    )
    .await;
    assert_eq!(refused.status, TaskStatus::Failed);
    let got = get(&client, &refused.task_id).await;
    let TaskPayload::Failed { error } = &got.payload else {
        panic!("{got:?}");
    };
    assert_eq!(
        error["message"],
        "task not started: the task store is full (1 tasks)"
    );
    cancel(&client, &held.task_id).await.unwrap();
    assert_eq!(
        terminal(&client, &held.task_id).await.status(),
        TaskStatus::Cancelled
    );
    client.cancel().await.unwrap();
    server.stop().await;
}

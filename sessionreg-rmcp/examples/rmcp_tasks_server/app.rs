//! The tasks example's server: an rmcp tool server serving the Tasks
//! extension (SEP-2663) with the fixtures of the official conformance
//! suite's `tasks-*` scenarios. The tests include this file (`#[path]`), so
//! what they serve is what the example serves.
//!
//! It is generic over the task manager ([`Tasks`]) only so that the same
//! server can run on rmcp 3.11's own `TaskManager` for comparison
//! (`--tasks rmcp`); an application names one type and needs none of this.
//! Both managers have the same methods: the impls below are one-line
//! delegations.
//!
//! Tools (`taskSupport` as the suite expects it):
//!
//! * `greet {name}` — sync only: `Hello, {name}!`.
//! * `slow_compute {seconds, label}` — optional: a task with the
//!   extension, sync without; sleeps `seconds`, stops at once on
//!   `tasks/cancel` (the task ends `cancelled`).
//! * `failing_job` — required: without the extension `-32021`; the task
//!   completes with a tool error (`isError: true`) after 1 s.
//! * `protocol_error_job` — optional: the task fails with a JSON-RPC error
//!   (sync: the call is answered with that error).
//! * `confirm_delete {filename}` — optional: the task asks for an
//!   elicitation (`confirm`) and completes when answered (sync: an MRTR
//!   round).
//! * `multi_input` — optional: the task asks for two inputs at once,
//!   answered separately (sync: an MRTR round with both).
//! * `test_tool_with_task` — an MRTR round first (`user_name`), then a task
//!   (sync without the extension) whose result greets the elicited name.
// Each includer uses a part.
#![allow(dead_code)]

#[path = "../common/endpoint.rs"]
pub mod endpoint;

use axum::Router;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, InputRequest,
    InputRequests, InputRequiredResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Task, Tool, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskFuture, TaskOptions};
use rmcp::transport::streamable_http_server::{
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::{json, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the server needs of a task manager: the methods rmcp's
/// `TaskManager` and sessionreg's share.
pub trait Tasks: Clone + Send + Sync + 'static {
    /// What a task's operation is handed.
    type Context: Context;
    /// `TaskManager::spawn`.
    fn spawn(&self, options: TaskOptions, work: impl FnOnce(Self::Context) -> TaskFuture) -> Task;
    /// `TaskManager::get_task`.
    fn get_task(&self, task_id: &str) -> Result<DetailedTask, McpError>;
    /// `TaskManager::update_task`.
    fn update_task(
        &self,
        task_id: &str,
        responses: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), McpError>;
    /// `TaskManager::cancel_task`.
    fn cancel_task(&self, task_id: &str) -> Result<(), McpError>;
}

/// What the fixtures need of a task's context.
pub trait Context: Send + Sync + 'static {
    /// `TaskContext::request_input`.
    fn request_input(
        &self,
        key: &str,
        request: InputRequest,
    ) -> impl Future<Output = Result<Value, TaskExit>> + Send + '_;
    /// `TaskContext::cancelled`.
    fn cancelled(&self) -> impl Future<Output = ()> + Send + '_;
}

impl Tasks for sessionreg_rmcp::TaskManager {
    type Context = sessionreg_rmcp::TaskContext;
    fn spawn(&self, options: TaskOptions, work: impl FnOnce(Self::Context) -> TaskFuture) -> Task {
        sessionreg_rmcp::TaskManager::spawn(self, options, work)
    }
    fn get_task(&self, task_id: &str) -> Result<DetailedTask, McpError> {
        sessionreg_rmcp::TaskManager::get_task(self, task_id)
    }
    fn update_task(
        &self,
        task_id: &str,
        responses: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), McpError> {
        sessionreg_rmcp::TaskManager::update_task(self, task_id, responses)
    }
    fn cancel_task(&self, task_id: &str) -> Result<(), McpError> {
        sessionreg_rmcp::TaskManager::cancel_task(self, task_id)
    }
}

impl Context for sessionreg_rmcp::TaskContext {
    fn request_input(
        &self,
        key: &str,
        request: InputRequest,
    ) -> impl Future<Output = Result<Value, TaskExit>> + Send + '_ {
        sessionreg_rmcp::TaskContext::request_input(self, key.to_owned(), request)
    }
    fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        sessionreg_rmcp::TaskContext::cancelled(self)
    }
}

impl Tasks for rmcp::task_manager::TaskManager {
    type Context = rmcp::task_manager::TaskContext;
    fn spawn(&self, options: TaskOptions, work: impl FnOnce(Self::Context) -> TaskFuture) -> Task {
        rmcp::task_manager::TaskManager::spawn(self, options, work)
    }
    fn get_task(&self, task_id: &str) -> Result<DetailedTask, McpError> {
        rmcp::task_manager::TaskManager::get_task(self, task_id)
    }
    fn update_task(
        &self,
        task_id: &str,
        responses: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), McpError> {
        rmcp::task_manager::TaskManager::update_task(self, task_id, responses)
    }
    fn cancel_task(&self, task_id: &str) -> Result<(), McpError> {
        rmcp::task_manager::TaskManager::cancel_task(self, task_id)
    }
}

impl Context for rmcp::task_manager::TaskContext {
    fn request_input(
        &self,
        key: &str,
        request: InputRequest,
    ) -> impl Future<Output = Result<Value, TaskExit>> + Send + '_ {
        rmcp::task_manager::TaskContext::request_input(self, key.to_owned(), request)
    }
    fn cancelled(&self) -> impl Future<Output = ()> + Send + '_ {
        rmcp::task_manager::TaskContext::cancelled(self)
    }
}

/// The tool server; one task manager for every request (with the
/// 2026-07-28 wire rmcp makes a handler per request).
#[derive(Clone)]
pub struct TasksServer<M> {
    tasks: M,
    /// Suggested `pollIntervalMs` of every task.
    poll_interval_ms: u64,
}

impl<M: Tasks> TasksServer<M> {
    /// A server spawning its tasks on `tasks`.
    pub fn new(tasks: M) -> Self {
        TasksServer {
            tasks,
            poll_interval_ms: 200,
        }
    }

    fn options(&self) -> TaskOptions {
        TaskOptions::new().with_poll_interval_ms(self.poll_interval_ms)
    }

    fn task(&self, work: impl FnOnce(M::Context) -> TaskFuture) -> CallToolResponse {
        CallToolResponse::Task(CreateTaskResult::new(
            self.tasks.spawn(self.options(), work),
        ))
    }
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn tool(name: &'static str, description: &'static str, properties: Value) -> Tool {
    Tool::new(
        name,
        description,
        object(json!({ "type": "object", "properties": properties })),
    )
}

/// An `elicitation/create` input request for one field.
fn elicitation(message: &str, field: &str, kind: &str) -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { field: { "type": kind } },
                "required": [field],
            },
        },
    }))
    .expect("a valid elicitation request")
}

/// `content.<field>` of an elicitation answer that accepted.
fn accepted<'a>(answer: &'a Value, field: &str) -> Option<&'a Value> {
    if answer.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    answer.get("content")?.get(field)
}

/// Sleeps `seconds`, or stops when the task is cancelled.
async fn sleep_or_cancel(ctx: &impl Context, seconds: f64) -> Result<(), TaskExit> {
    tokio::select! {
        _ = ctx.cancelled() => Err(TaskExit::Cancelled),
        _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => Ok(()),
    }
}

fn input_required(requests: InputRequests) -> CallToolResponse {
    CallToolResponse::InputRequired(InputRequiredResult::from_input_requests(requests))
}

fn confirm_request(filename: &str) -> InputRequest {
    elicitation(&format!("Delete {filename}?"), "confirm", "boolean")
}

fn confirm_outcome(filename: &str, answer: &Value) -> CallToolResult {
    if accepted(answer, "confirm").and_then(Value::as_bool) == Some(true) {
        text(format!("Deleted {filename}"))
    } else {
        text(format!("Kept {filename}"))
    }
}

fn multi_requests() -> [(&'static str, InputRequest); 2] {
    [
        ("name", elicitation("What is your name?", "name", "string")),
        (
            "confirm",
            elicitation("Shall I go on?", "confirm", "boolean"),
        ),
    ]
}

fn multi_outcome(name: &Value, confirm: &Value) -> CallToolResult {
    let name = accepted(name, "name")
        .and_then(Value::as_str)
        .unwrap_or("nobody");
    let confirmed = accepted(confirm, "confirm").is_some();
    text(format!("name: {name}; confirmed: {confirmed}"))
}

impl<M: Tasks> ServerHandler for TasksServer<M> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![
            tool(
                "greet",
                "Greets by name (sync only)",
                json!({ "name": { "type": "string" } }),
            ),
            tool(
                "slow_compute",
                "Sleeps `seconds`, then answers (a task with the tasks extension)",
                json!({ "seconds": { "type": "number" }, "label": { "type": "string" } }),
            ),
            tool(
                "failing_job",
                "A task (required) whose result is a tool error",
                json!({}),
            ),
            tool(
                "protocol_error_job",
                "A task that fails with a JSON-RPC error",
                json!({}),
            ),
            tool(
                "confirm_delete",
                "Asks to confirm, then answers (a task with the tasks extension)",
                json!({ "filename": { "type": "string" } }),
            ),
            tool(
                "multi_input",
                "Asks two questions at once (a task with the tasks extension)",
                json!({}),
            ),
            tool(
                "test_tool_with_task",
                "Asks for a name (MRTR), then greets it from a task",
                json!({}),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let with_tasks = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let args = request.arguments.unwrap_or_default();
        let responses = request.input_responses.unwrap_or_default();
        let arg_str = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
        match request.name.as_ref() {
            "greet" => Ok(text(format!("Hello, {}!", arg_str("name"))).into()),
            "slow_compute" => {
                let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
                let seconds = seconds.clamp(0.0, 3600.0);
                let label = arg_str("label").to_owned();
                if !with_tasks {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    return Ok(text(format!("computed {label} in {seconds} s")).into());
                }
                Ok(self.task(move |ctx| {
                    Box::pin(async move {
                        sleep_or_cancel(&ctx, seconds).await?;
                        Ok(text(format!("computed {label} in {seconds} s")))
                    })
                }))
            }
            "failing_job" => {
                if !with_tasks {
                    return Err(McpError::missing_required_client_capability(
                        ClientCapabilities::builder().enable_tasks().build(),
                    ));
                }
                Ok(self.task(|ctx| {
                    Box::pin(async move {
                        sleep_or_cancel(&ctx, 1.0).await?;
                        Ok(CallToolResult::error(vec![ContentBlock::text(
                            "failing_job: the job failed",
                        )]))
                    })
                }))
            }
            "protocol_error_job" => {
                let error =
                    || McpError::internal_error("protocol_error_job: internal failure", None);
                if !with_tasks {
                    return Err(error());
                }
                Ok(self.task(move |ctx| {
                    Box::pin(async move {
                        sleep_or_cancel(&ctx, 0.2).await?;
                        Err(TaskExit::Error(error()))
                    })
                }))
            }
            "confirm_delete" => {
                let filename = arg_str("filename").to_owned();
                if !with_tasks {
                    return Ok(match responses.get("confirm") {
                        Some(answer) => confirm_outcome(&filename, answer).into(),
                        None => input_required(
                            [("confirm".to_owned(), confirm_request(&filename))].into(),
                        ),
                    });
                }
                Ok(self.task(move |ctx| {
                    Box::pin(async move {
                        let answer = ctx
                            .request_input("confirm", confirm_request(&filename))
                            .await?;
                        Ok(confirm_outcome(&filename, &answer))
                    })
                }))
            }
            "multi_input" => {
                if !with_tasks {
                    return Ok(match (responses.get("name"), responses.get("confirm")) {
                        (Some(name), Some(confirm)) => multi_outcome(name, confirm).into(),
                        _ => input_required(
                            multi_requests()
                                .into_iter()
                                .map(|(key, request)| (key.to_owned(), request))
                                .collect(),
                        ),
                    });
                }
                Ok(self.task(|ctx| {
                    Box::pin(async move {
                        let [(name_key, name), (confirm_key, confirm)] = multi_requests();
                        // Both outstanding at once: the client may answer
                        // them in one tasks/update or in two.
                        let (name, confirm) = tokio::join!(
                            ctx.request_input(name_key, name),
                            ctx.request_input(confirm_key, confirm),
                        );
                        Ok(multi_outcome(&name?, &confirm?))
                    })
                }))
            }
            "test_tool_with_task" => {
                let Some(name) = responses
                    .get("user_name")
                    .and_then(|answer| accepted(answer, "name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                else {
                    return Ok(input_required(
                        [(
                            "user_name".to_owned(),
                            elicitation("What is your name?", "name", "string"),
                        )]
                        .into(),
                    ));
                };
                if !with_tasks {
                    return Ok(text(format!("Hello, {name}!")).into());
                }
                Ok(self.task(move |ctx| {
                    Box::pin(async move {
                        sleep_or_cancel(&ctx, 0.1).await?;
                        Ok(text(format!("Hello, {name}!")))
                    })
                }))
            }
            other => Err(McpError::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }
}

/// The MCP endpoint at `/mcp` (rmcp's service with `manager` for the
/// legacy wire's sessions and `tasks` for every task, behind the
/// [`StatusLayer`](sessionreg_rmcp::StatusLayer)) and `GET /metrics` (whatever `metrics` renders).
/// Cancelling `token` ends rmcp's sessions and streams.
pub fn router<S: SessionManager, M: Tasks>(
    manager: Arc<S>,
    tasks: M,
    token: CancellationToken,
    metrics: impl Fn() -> String + Clone + Send + Sync + 'static,
) -> Router {
    let mcp = StreamableHttpService::new(
        move || Ok(TasksServer::new(tasks.clone())),
        manager,
        StreamableHttpServerConfig::default().with_cancellation_token(token),
    );
    endpoint::endpoint(mcp, metrics)
}

//! `rmcp_tasks_server`: rmcp 3.11 serving the Tasks extension (SEP-2663)
//! on a task manager picked by `--tasks`: `sessionreg` (sessionreg-rmcp's
//! `TaskManager`, the drop-in the README promotes) or `rmcp` (rmcp's own
//! `rmcp::task_manager::TaskManager`), for `benches/e2e --tasks N` to
//! compare through HTTP `tasks/*`. The same flags and first line as
//! `rmcp_server` (`--addr`, and the flags of examples/mcp_server, ignored
//! but `--max-sessions`, which is also the sessionreg manager's task
//! capacity), `TCP_NODELAY` on every connection, rmcp's default config.
//!
//! One tool, `work {seconds}`: with the tasks extension it answers at once
//! with a task that sleeps `seconds` and then completes with the text
//! `done` (stopping at once on `tasks/cancel`); without it, it sleeps and
//! answers `done`. `tasks/get` and `tasks/cancel` are the manager's. The
//! generic part is only so that one binary serves both managers (an
//! application names one type): their methods are the same.
//!
//! ```text
//! cargo build --release -p e2e-rmcp --bin rmcp_tasks_server
//! cargo bench --bench e2e -- --tasks 10000 --server "target/release/rmcp_tasks_server --tasks sessionreg" \
//!     --against "target/release/rmcp_tasks_server --tasks rmcp"
//! ```

mod serve;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, ServerCapabilities, ServerConfig,
    Task,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskFuture, TaskOptions};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// What the server needs of a task manager (rmcp's and sessionreg-rmcp's
/// have the same methods).
trait Tasks: Clone + Send + Sync + 'static {
    type Context: Send + Sync + 'static;
    fn spawn(&self, options: TaskOptions, work: impl FnOnce(Self::Context) -> TaskFuture) -> Task;
    fn get_task(&self, task_id: &str) -> Result<DetailedTask, ErrorData>;
    fn cancel_task(&self, task_id: &str) -> Result<(), ErrorData>;
    fn cancelled(context: &Self::Context) -> impl Future<Output = ()> + Send + '_;
}

impl Tasks for sessionreg_rmcp::TaskManager {
    type Context = sessionreg_rmcp::TaskContext;
    fn spawn(&self, options: TaskOptions, work: impl FnOnce(Self::Context) -> TaskFuture) -> Task {
        sessionreg_rmcp::TaskManager::spawn(self, options, work)
    }
    fn get_task(&self, task_id: &str) -> Result<DetailedTask, ErrorData> {
        sessionreg_rmcp::TaskManager::get_task(self, task_id)
    }
    fn cancel_task(&self, task_id: &str) -> Result<(), ErrorData> {
        sessionreg_rmcp::TaskManager::cancel_task(self, task_id)
    }
    fn cancelled(context: &Self::Context) -> impl Future<Output = ()> + Send + '_ {
        context.cancelled()
    }
}

impl Tasks for rmcp::task_manager::TaskManager {
    type Context = rmcp::task_manager::TaskContext;
    fn spawn(&self, options: TaskOptions, work: impl FnOnce(Self::Context) -> TaskFuture) -> Task {
        rmcp::task_manager::TaskManager::spawn(self, options, work)
    }
    fn get_task(&self, task_id: &str) -> Result<DetailedTask, ErrorData> {
        rmcp::task_manager::TaskManager::get_task(self, task_id)
    }
    fn cancel_task(&self, task_id: &str) -> Result<(), ErrorData> {
        rmcp::task_manager::TaskManager::cancel_task(self, task_id)
    }
    fn cancelled(context: &Self::Context) -> impl Future<Output = ()> + Send + '_ {
        context.cancelled()
    }
}

#[derive(Clone)]
struct Server<M>(M);

impl<M: Tasks> ServerHandler for Server<M> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "work" {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {}", request.name),
                None,
            ));
        }
        let seconds = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("seconds"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            .clamp(0.0, 86_400.0);
        let done = || CallToolResult::success(vec![ContentBlock::text("done")]);
        let with_tasks = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        if !with_tasks {
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            return Ok(done().into());
        }
        let task = self.0.spawn(TaskOptions::new(), move |ctx| {
            Box::pin(async move {
                tokio::select! {
                    _ = M::cancelled(&ctx) => Err(TaskExit::Cancelled),
                    _ = tokio::time::sleep(Duration::from_secs_f64(seconds)) => Ok(done()),
                }
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.0.get_task(&request.task_id)?))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.0.cancel_task(&request.task_id)
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // `--tasks sessionreg|rmcp` is this binary's; the rest are serve.rs's.
    let mut args: Vec<String> = std::env::args().collect();
    let manager = match args.iter().position(|a| a == "--tasks") {
        Some(at) if at + 1 < args.len() => {
            let which = args.remove(at + 1);
            args.remove(at);
            which
        }
        _ => "sessionreg".to_string(),
    };
    let flags = serve::flags_from(args.into_iter().skip(1));
    let sessions = Arc::new(LocalSessionManager::default());
    match manager.as_str() {
        "sessionreg" => {
            let mut builder = sessionreg_rmcp::TaskManager::builder();
            if let Some(max) = flags.max_sessions {
                builder = builder.capacity(max);
            }
            let tasks = builder.build().map_err(std::io::Error::other)?;
            let metrics = {
                let tasks = tasks.clone();
                move || tasks.metrics()
            };
            serve::serve_with(&flags, sessions, move || Ok(Server(tasks.clone())), metrics).await
        }
        "rmcp" => {
            let tasks = rmcp::task_manager::TaskManager::new();
            serve::serve_with(
                &flags,
                sessions,
                move || Ok(Server(tasks.clone())),
                String::new,
            )
            .await
        }
        other => panic!("--tasks {other}: sessionreg or rmcp"),
    }
}

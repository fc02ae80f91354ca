//! 2026-07-28 requests (no session) and the tasks extension
//! (`io.modelcontextprotocol/tasks`), as programs send them (the fleet demo
//! and its test): a `tools/call` that the server answers with a task
//! ([`Client::try_create_task`]), then `tasks/get` until it ends
//! ([`Client::try_task_get`]).
//!
//! Every request carries `Mcp-Method` and, for the methods that have one,
//! `Mcp-Name`: the tool's name for `tools/call`, the task's id for `tasks/*`.
//! A balancer routes a `tasks/*` request to the task's node by that header
//! (`deploy/render.sh`), as it routes a session's by `MCP-Session-Id`.

use crate::checked::response_result;
use crate::client::Client;
use crate::error::Error;
use serde_json::{json, Value};
use std::fmt;

/// The protocol version without sessions.
pub const MODERN_VERSION: &str = "2026-07-28";

/// The tasks extension's name, as a client declares it in its capabilities.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The JSON-RPC error code of a `tasks/*` request for a task the server
/// does not hold (unknown, another node's, ended and freed).
pub const TASK_NOT_FOUND_CODE: i64 = -32602;

/// A 2026-07-28 request (JSON-RPC id `id`): `params` with the per-request
/// `_meta` (protocol version, client info, capabilities declaring the tasks
/// extension).
pub fn modern_request_body(id: u64, method: &str, params: Value) -> Value {
    modern_body(
        id,
        method,
        params,
        json!({ "extensions": { TASKS_EXTENSION: {} } }),
    )
}

/// [`modern_request_body`] with the client capabilities given.
fn modern_body(id: u64, method: &str, params: Value, capabilities: Value) -> Value {
    let mut params = if params.is_object() {
        params
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "mcp-test-client", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// A task, as a client knows it: its id, and the node that holds it (the
/// id's first two hex digits: task ids are minted like session ids).
#[derive(Clone, PartialEq, Eq)]
pub struct Task {
    id: String,
}

impl Task {
    /// The task that `id` names (a `CreateTaskResult`'s `taskId`).
    pub fn new(id: String) -> Task {
        Task { id }
    }

    /// Its id. It grants access to the task: never log it whole.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The node that minted the id: its first two hex digits.
    pub fn node(&self) -> Option<u8> {
        crate::session::node_of(&self.id)
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Task({}…)", self.id.get(..6).unwrap_or(&self.id))
    }
}

impl Client {
    /// Sends a 2026-07-28 request ([`modern_request_body`]'s `params`) and
    /// waits for its response: the `result`, or the JSON-RPC error
    /// ([`Error::Rpc`]), or another status than 200 ([`Error::Status`]).
    pub async fn try_modern(
        &self,
        id: u64,
        method: &str,
        name: Option<&str>,
        params: Value,
    ) -> Result<Value, Error> {
        self.send_modern(modern_request_body(id, method, params), name)
            .await
    }

    /// Calls `tool` at 2026-07-28 without declaring the tasks extension, so
    /// the call's own answer is its result (a tool that would be a task
    /// runs inline).
    pub async fn try_modern_call(
        &self,
        id: u64,
        tool: &str,
        arguments: Value,
    ) -> Result<Value, Error> {
        let params = json!({ "name": tool, "arguments": arguments });
        let message = modern_body(id, "tools/call", params, json!({}));
        self.send_modern(message, Some(tool)).await
    }

    /// Posts a 2026-07-28 request: its `result`, or why not.
    async fn send_modern(&self, message: Value, name: Option<&str>) -> Result<Value, Error> {
        let method = message["method"].as_str().unwrap_or_default().to_string();
        let mut headers = vec![("mcp-method", method.as_str())];
        headers.extend(name.map(|name| ("mcp-name", name)));
        let request = self.modern_request(message.to_string(), &headers);
        response_result(self.try_post_request(request, false).await?, &message).await
    }

    /// Calls `tool` as a task (the client declares the tasks extension):
    /// the task, if the server answered with a `CreateTaskResult`
    /// (`resultType: "task"`); a transport error if it answered otherwise.
    pub async fn try_create_task(
        &self,
        id: u64,
        tool: &str,
        arguments: Value,
    ) -> Result<Task, Error> {
        let params = json!({ "name": tool, "arguments": arguments });
        let result = self
            .try_modern(id, "tools/call", Some(tool), params)
            .await?;
        match (result["resultType"].as_str(), result["taskId"].as_str()) {
            (Some("task"), Some(task)) => Ok(Task::new(task.to_string())),
            _ => Err(Error::Transport(format!("not a task: {result}"))),
        }
    }

    /// `tasks/get`: the task's state (`status`: `working`, `completed`,
    /// ...; once completed, its `result`). A task the server does not hold
    /// is a JSON-RPC error ([`Error::is_task_not_found`]).
    pub async fn try_task_get(&self, id: u64, task: &Task) -> Result<Value, Error> {
        let params = json!({ "taskId": task.id() });
        self.try_modern(id, "tasks/get", Some(task.id()), params)
            .await
    }
}

impl Error {
    /// Whether this is the answer to a `tasks/*` request for a task the
    /// server does not hold: "Failed to retrieve task: Task not found"
    /// (never held here: another node's, a guess), not "... Task has
    /// expired" (held here once, ended and freed).
    pub fn is_task_not_found(&self) -> bool {
        matches!(self, Error::Rpc(error)
            if error["code"] == TASK_NOT_FOUND_CODE
                && error["message"] == "Failed to retrieve task: Task not found")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_knows_its_node_and_hides_its_id() {
        let task = Task::new(format!("0a{}", "f".repeat(46)));
        assert_eq!(task.node(), Some(10));
        assert_eq!(format!("{task:?}"), "Task(0affff…)");
        assert_eq!(Task::new("zz".into()).node(), None);
    }

    #[test]
    fn not_found_is_told_from_expired_and_other_errors() {
        let error =
            |code: i64, message: &str| Error::Rpc(json!({ "code": code, "message": message }));
        assert!(error(-32602, "Failed to retrieve task: Task not found").is_task_not_found());
        assert!(!error(-32602, "Failed to retrieve task: Task has expired").is_task_not_found());
        assert!(!error(-32600, "Failed to retrieve task: Task not found").is_task_not_found());
        assert!(!Error::SessionGone.is_task_not_found());
    }

    #[test]
    fn a_modern_body_declares_the_extension() {
        let body = modern_request_body(3, "tasks/get", json!({ "taskId": "00ab" }));
        assert_eq!(body["id"], 3);
        assert_eq!(body["params"]["taskId"], "00ab");
        let meta = &body["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            MODERN_VERSION
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"]["extensions"][TASKS_EXTENSION],
            json!({})
        );
    }
}

//! The extension's own words: its identifier as clients declare it, its
//! capability, the refusal of a client that did not declare it, the
//! default polling interval, and the work run inline for a client that did
//! not ask for a task.

use super::entry::TaskEntry;
use super::work::{self, TaskWork};
use crate::http::wire::jsonrpc::RpcError;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The extension's identifier, as clients declare it under
/// `capabilities.extensions` ([`TaskWork::EXTENSION`]).
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The polling interval suggested to clients unless the work says
/// otherwise ([`TaskWork::DEFAULT_POLL_INTERVAL`]).
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The tasks the layer keeps.
pub(crate) type Store = crate::TaskStore<TaskEntry, serde_json::Value>;

/// The client capability a task needs: the extension, declared on the
/// request.
pub(crate) fn extension_capability() -> Value {
    json!({ "extensions": { TASKS_EXTENSION: {} } })
}

/// The `-32021` error for a client that did not declare the extension.
pub(crate) fn extension_required() -> RpcError {
    RpcError::missing_capability(extension_capability())
}

/// `work` started inline, as the call's own answer (the client did not
/// ask for tasks): the future of its result, or its error, which whoever
/// awaits the call polls (`TaskChoice::chosen`).
pub(crate) fn inline(
    work: TaskWork,
    cancel: CancellationToken,
) -> BoxFuture<'static, Result<Value, RpcError>> {
    (work.work)(work::TaskContext::inline(cancel))
}

/// Adds the extension to the capabilities `server/discover` gives.
pub(crate) fn advertise(capabilities: &mut Value) {
    if !capabilities.is_object() {
        *capabilities = json!({});
    }
    if let Value::Object(capabilities) = capabilities {
        let extensions = capabilities
            .entry("extensions")
            .or_insert_with(|| json!({}));
        if let Value::Object(extensions) = extensions {
            extensions
                .entry(TASKS_EXTENSION)
                .or_insert_with(|| json!({}));
        }
    }
}

//! The extension's task methods: `tasks/get`, `tasks/update` and
//! `tasks/cancel` ([`serve_method`]).

use super::entry;
use super::{extension_capability, Tasks};
use crate::http::input::input_responses;
use crate::http::wire::jsonrpc::Request;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use crate::{Ended, Miss};
use serde_json::{json, Value};

/// The task methods the layer answers (`tasks/result` and `tasks/list`
/// were removed: the era answers them 404 with the other removed methods).
pub(crate) const METHODS: [&str; 3] = ["tasks/get", "tasks/update", "tasks/cancel"];

/// Answers `tasks/get`, `tasks/update` or `tasks/cancel`, in this order of
/// checks: the client declared the extension on this request (`-32021`,
/// before anything is looked up), `taskId` is a string, the task is the
/// requester's (another principal's is as unknown as a made-up id:
/// `-32602`, counted in the store's misses).
pub(crate) fn serve_method(
    tasks: &Tasks,
    request: &Request,
    declared: bool,
    owner: Option<&Principal>,
) -> Result<Value, Reject> {
    if !declared {
        return Err(Reject::MissingCapability(extension_capability()));
    }
    let params = request.params_value().unwrap_or(Value::Null);
    let Some(task_id) = params["taskId"].as_str() else {
        return Err(Reject::TaskParams("taskId must be a string"));
    };
    let found = tasks
        .store
        .parse_id(task_id.as_bytes())
        .map_err(|_| Miss::Malformed)
        .and_then(|id| {
            tasks
                .store
                .get_if(&id, |entry| entry.owner.as_ref() == owner)
        });
    let task = match found {
        Ok(task) => task,
        Err(Miss::Stale | Miss::Expired) => return Err(Reject::TaskExpired),
        Err(_) => return Err(Reject::TaskNotFound),
    };
    match request.method.as_str() {
        "tasks/get" => Ok(Value::Object(entry::detailed(task_id, &task))),
        "tasks/update" => {
            let responses = params
                .get("inputResponses")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let responses = input_responses(responses).map_err(|_| {
                Reject::TaskParams("inputResponses must be an object of input responses")
            })?;
            if !task.has_ended() {
                task.value().answer(responses);
            }
            Ok(json!({}))
        }
        "tasks/cancel" => {
            // Cancelling an ended task is acknowledged the same (the
            // spec: eventually consistent; the suite: idempotent).
            if tasks.store.settle(&task, Ended::Cancelled).is_won() {
                task.value().cancel.cancel();
                task.value().ended(&tasks.places);
            }
            Ok(json!({}))
        }
        other => Err(Reject::NoSuchMethod(other.to_string())),
    }
}

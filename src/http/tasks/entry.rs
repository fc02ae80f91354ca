//! What the layer keeps of one task beside its outcome ([`TaskEntry`]: who
//! created it, when, its status message and its outstanding input
//! requests), and the task's wire form (`Task`, `DetailedTask`).
//!
//! A task's status is read outcome first: once its outcome is set it is
//! terminal, whatever its input requests were; before, it is
//! `input_required` while any request is outstanding, else `working`. Its
//! end clears the requests, and an update that arrives after it is
//! ignored, so a task never goes back from terminal.

use super::places::Places;
use super::time::iso8601;
use crate::http::wire::free_times::Freeing;
use crate::http::wire::jsonrpc::{self, RpcError};
use crate::http::wire::principal::Principal;
use crate::http::wire::unix_time::unix_ms;
use crate::shares::Share;
use crate::{Ended, Task};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// One task, as the layer keeps it in the store.
pub(crate) struct TaskEntry {
    /// The principal that created it: only the same finds it.
    pub(crate) owner: Option<Principal>,
    created_ms: u64,
    updated_ms: AtomicU64,
    poll_interval_ms: u64,
    ttl_ms: u64,
    live: Mutex<Live>,
    /// Cancelled when the task ends by `tasks/cancel`, its deadline, its
    /// wait for input, or the server's shutdown: the work's future is
    /// dropped.
    pub(crate) cancel: CancellationToken,
    /// The owner's place under its share of the store, held while the task
    /// runs and while it is retained, given back when the entry is freed.
    _share: Option<Share<Principal>>,
    /// When the task's place frees (its end plus the retention), recorded
    /// once, at its end.
    freeing: OnceLock<Freeing>,
}

#[derive(Default)]
struct Live {
    status_message: Option<String>,
    /// Outstanding input requests, by key, in the order asked.
    pending: Map<String, Value>,
    /// Where each outstanding request's answer goes.
    waiting: HashMap<String, oneshot::Sender<Value>>,
    /// Every key ever asked (unique over the task's life).
    used: HashSet<String>,
}

impl TaskEntry {
    pub(crate) fn new(
        owner: Option<Principal>,
        share: Option<Share<Principal>>,
        poll_interval_ms: u64,
        ttl_ms: u64,
        status_message: Option<String>,
        cancel: CancellationToken,
    ) -> TaskEntry {
        let now = unix_ms();
        TaskEntry {
            owner,
            created_ms: now,
            updated_ms: AtomicU64::new(now),
            poll_interval_ms,
            ttl_ms,
            live: Mutex::new(Live {
                status_message,
                ..Live::default()
            }),
            cancel,
            _share: share,
            freeing: OnceLock::new(),
        }
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        // Consistent whatever a holder did: no code under the lock calls out.
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn touch(&self) {
        // Relaxed: a timestamp read on its own.
        self.updated_ms.fetch_max(unix_ms(), Ordering::Relaxed);
    }

    /// Registers input requests; the receivers get their answers. A key
    /// used before in this task's life refuses the lot.
    pub(crate) fn ask(
        &self,
        requests: Map<String, Value>,
    ) -> Result<Vec<(String, oneshot::Receiver<Value>)>, RpcError> {
        let mut live = self.live();
        if let Some(key) = requests.keys().find(|k| live.used.contains(*k)) {
            return Err(RpcError::new(
                jsonrpc::RpcError::INTERNAL_ERROR,
                format!("input request key {key:?} was used before in this task"),
            ));
        }
        let mut waiting = Vec::with_capacity(requests.len());
        for (key, request) in requests {
            let (tx, rx) = oneshot::channel();
            live.used.insert(key.clone());
            live.waiting.insert(key.clone(), tx);
            live.pending.insert(key.clone(), request);
            waiting.push((key, rx));
        }
        drop(live);
        self.touch();
        Ok(waiting)
    }

    /// Hands each response to its outstanding request; responses to keys
    /// not outstanding (never asked, answered already, or the task over)
    /// are ignored, as the spec says.
    pub(crate) fn answer(&self, responses: Map<String, Value>) {
        let mut live = self.live();
        for (key, response) in responses {
            if live.pending.remove(&key).is_some() {
                if let Some(tx) = live.waiting.remove(&key) {
                    // The work may have stopped waiting: nothing to do.
                    let _ = tx.send(response);
                }
            }
        }
        drop(live);
        self.touch();
    }

    /// The task has ended: nothing is outstanding any more (a waiting
    /// `input` call sees its sender dropped), and its place frees once its
    /// retention has passed (recorded at the first call).
    pub(crate) fn ended(&self, places: &Places) {
        let mut live = self.live();
        live.pending.clear();
        live.waiting.clear();
        drop(live);
        self.touch();
        self.freeing
            .get_or_init(|| places.ended(self.owner.as_ref()));
    }

    pub(crate) fn set_status_message(&self, message: String) {
        self.live().status_message = Some(message);
        self.touch();
    }
}

/// The error a task that ended without its work's own answer carries.
pub(crate) fn unanswered(ended: &Ended<Value>) -> Option<Value> {
    let message = match ended {
        Ended::Expired => "the task's time to live passed before it finished",
        Ended::Abandoned => "the task's work stopped without an answer",
        _ => return None,
    };
    Some(json!({ "code": jsonrpc::RpcError::INTERNAL_ERROR, "message": message }))
}

/// The task's fields (`Task`, and `DetailedTask`'s status payload), as
/// `CreateTaskResult` and `tasks/get` carry them.
pub(crate) fn detailed(id: &str, task: &Task<TaskEntry, Value>) -> Map<String, Value> {
    let entry = task.value();
    let mut out = Map::new();
    out.insert("taskId".into(), id.into());
    let live = entry.live();
    let mut status_message = live.status_message.clone();
    match task.outcome() {
        Some(Ended::Completed(result)) => {
            out.insert("status".into(), "completed".into());
            out.insert("result".into(), result.clone());
        }
        Some(Ended::Failed(error)) => {
            out.insert("status".into(), "failed".into());
            status_message =
                status_message.or_else(|| error["message"].as_str().map(str::to_owned));
            out.insert("error".into(), error.clone());
        }
        Some(Ended::Cancelled) => {
            out.insert("status".into(), "cancelled".into());
        }
        Some(other) => {
            let error = unanswered(other).expect("an end without the work's answer");
            status_message = error["message"].as_str().map(str::to_owned);
            out.insert("status".into(), "failed".into());
            out.insert("error".into(), error);
        }
        // Running (or its end being written this instant).
        None if !live.pending.is_empty() => {
            out.insert("status".into(), "input_required".into());
            out.insert("inputRequests".into(), Value::Object(live.pending.clone()));
        }
        None => {
            out.insert("status".into(), "working".into());
        }
    }
    drop(live);
    if let Some(message) = status_message {
        out.insert("statusMessage".into(), message.into());
    }
    out.insert("createdAt".into(), iso8601(entry.created_ms).into());
    let updated = entry.updated_ms.load(Ordering::Relaxed);
    out.insert("lastUpdatedAt".into(), iso8601(updated).into());
    out.insert("ttlMs".into(), entry.ttl_ms.into());
    out.insert("pollIntervalMs".into(), entry.poll_interval_ms.into());
    out
}

//! Heap bytes per idle task (ended, completed with a small tool result,
//! retained) at 100k such tasks, counted by a global allocator that tracks
//! every byte requested (`Layout::size`, as `benches/memory.rs` counts),
//! for:
//!
//! * `http_layer`: sessionreg's HTTP layer with its real task entry: a
//!   `SessionManager` built with `.tasks(true)`, driven in-process through
//!   `SessionManager::handle` with 2026-07-28 `tools/call` requests that
//!   declare the tasks extension, for a tool answering `Reply::Task` whose
//!   work returns the result at once;
//! * `task_store`: `sessionreg::TaskStore<Entry, Value>`, the bench's
//!   entry (`src/lib.rs`), created and finished directly;
//! * `rmcp`: rmcp 3.11's `TaskManager`, `spawn` of an operation that
//!   returns the same result at once, run to completion on a
//!   current-thread runtime (with no TTL, unlimited retention: the same
//!   bytes as with one, `ttl_ms` is an `Option<u64>` either way, and
//!   rmcp's sweeps, one per spawn, then read no clock for its terminal
//!   tasks, which keeps this quadratic prefill to about a minute);
//! * `moka`: `moka::sync::Cache<String, Arc<Record>>` with
//!   `time_to_idle`, the completed record inserted.
//!
//! Each figure is the growth of the live heap from a warm container
//! already holding 1,000 such tasks to the same holding 101,000, ÷
//! 100,000: what one more idle task costs, its result included (the
//! result's own heap bytes are printed, in each store's form, so it can be
//! subtracted). Nothing expires during the count (retention one hour).
//!
//! Run: `cargo bench -p tasks-bench --bench tasks_memory`

#[path = "../../support/counting.rs"]
mod counting;

use bytes::Bytes;
use counting::{mark, Counting};
use http_body_util::{BodyExt, Full};
use moka::sync::Cache;
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{Message, Request, RpcError};
use sessionreg::http::TaskWork;
use sessionreg::http::{App, Context, HandlerError, Reply, SessionManager};
use sessionreg::{EndKind, Ended, TaskStore};
use std::sync::Arc;
use tasks_bench::{rmcp_result, runtime, tool_result, Entry, Record, Status, RETENTION};

const TASKS: usize = 100_000;
const WARM: usize = 1_000;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

struct Row {
    name: &'static str,
    bytes: usize,
    peak: usize,
    allocs: usize,
    result: usize,
}

fn since(name: &'static str, (bytes, allocs): (usize, usize), result: usize) -> Row {
    Row {
        name,
        bytes: counting::live_bytes() - bytes,
        peak: counting::peak_bytes() - bytes,
        allocs: counting::live_allocs() - allocs,
        result,
    }
}

/// The heap bytes `make`'s value holds.
fn heap_of<T>(make: impl FnOnce() -> T) -> usize {
    let before = counting::live_bytes();
    let value = make();
    let bytes = counting::live_bytes() - before;
    drop(value);
    bytes
}

// --- the HTTP layer ----------------------------------------------------------

/// One tool, `quick`: a task whose work answers at once.
struct Quick;

impl App for Quick {
    type Session = ();

    fn open(&self, _: &Request, _: &http::request::Parts) -> Result<(), RpcError> {
        Ok(())
    }

    async fn handle(&self, _ctx: Context<()>, message: Message) -> Result<Reply, HandlerError> {
        Ok(match message {
            Message::Request(_) => Reply::Task(TaskWork::new(|_ctx| async { Ok(tool_result()) })),
            _ => Reply::Accepted,
        })
    }
}

/// A 2026-07-28 `tools/call` of `quick` that declares the tasks extension
/// (the wire of `tests/http_tasks.rs`).
fn call(id: usize) -> http::Request<Full<Bytes>> {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "quick", "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "bench", "version": "1" },
                "io.modelcontextprotocol/clientCapabilities": {
                    "extensions": { TaskWork::EXTENSION: {} },
                },
            },
        },
    });
    http::Request::builder()
        .method(http::Method::POST)
        .uri("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "quick")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a request")
}

fn http_layer() -> Row {
    let rt = runtime();
    rt.block_on(async {
        let manager = SessionManager::builder(Quick)
            .tasks(true)
            .task_capacity(2 * (WARM + TASKS))
            .task_retention(RETENTION)
            .build()
            .expect("a manager");
        let completed = || {
            manager
                .task_stats()
                .expect("tasks on")
                .ended(EndKind::Completed)
        };
        let calls = |from: usize, count: usize| {
            let manager = &manager;
            async move {
                for id in from..from + count {
                    let response = manager.handle(call(id)).await;
                    assert_eq!(response.status(), 200);
                    let body = response.into_body().collect().await.expect("a body");
                    let body: Value = serde_json::from_slice(&body.to_bytes()).expect("JSON");
                    assert_eq!(body["result"]["resultType"], "task", "{body}");
                    // The work runs (and ends its task) at once.
                    tokio::task::yield_now().await;
                }
            }
        };
        calls(0, WARM).await;
        while completed() < WARM as u64 {
            tokio::task::yield_now().await;
        }
        let start = mark();
        calls(WARM, TASKS).await;
        while completed() < (WARM + TASKS) as u64 {
            tokio::task::yield_now().await;
        }
        let row = since("http_layer", start, heap_of(tool_result));
        let stats = manager.task_stats().expect("tasks on");
        assert_eq!(stats.registry.live, (WARM + TASKS) as u64);
        assert_eq!(stats.running(), 0);
        row
    })
}

// --- the task store itself ---------------------------------------------------

fn task_store() -> Row {
    let store: TaskStore<Entry, Value> = TaskStore::builder()
        .capacity(2 * (WARM + TASKS))
        .retention(RETENTION)
        .build()
        .expect("a store");
    let end = |count: usize| {
        for _ in 0..count {
            let running = store.create(Entry::new()).expect("within capacity");
            assert!(running.finish(Ended::Completed(tool_result())).is_won());
        }
    };
    end(WARM);
    let start = mark();
    end(TASKS);
    let row = since("task_store", start, heap_of(tool_result));
    assert_eq!(store.stats().registry.live, (WARM + TASKS) as u64);
    row
}

// --- rmcp ------------------------------------------------------------------

fn rmcp() -> Row {
    use rmcp::task_manager::{TaskManager, TaskOptions};
    let rt = runtime();
    rt.block_on(async {
        let manager = TaskManager::new();
        let spawn = |count: usize| {
            let manager = &manager;
            async move {
                for _ in 0..count {
                    manager.spawn(TaskOptions::new().with_ttl_ms(None), |_ctx| {
                        Box::pin(async { Ok(rmcp_result()) })
                    });
                    tokio::task::yield_now().await;
                }
                while manager.running_task_count() > 0 {
                    tokio::task::yield_now().await;
                }
            }
        };
        spawn(WARM).await;
        let start = mark();
        spawn(TASKS).await;
        // rmcp stores the result as the JSON object `CallToolResult`
        // serializes to.
        let result = heap_of(|| serde_json::to_value(rmcp_result()).expect("JSON"));
        since("rmcp", start, result)
    })
}

// --- moka ------------------------------------------------------------------

fn moka() -> Row {
    let cache: Cache<String, Arc<Record>> = Cache::builder().time_to_idle(RETENTION).build();
    let insert = |count: usize| {
        for _ in 0..count {
            let record = Record {
                entry: Entry::new(),
                status: Status::Completed,
                result: Some(tool_result()),
            };
            cache.insert(uuid::Uuid::new_v4().to_string(), Arc::new(record));
        }
        cache.run_pending_tasks();
    };
    insert(WARM);
    let start = mark();
    insert(TASKS);
    let row = since("moka", start, heap_of(tool_result));
    assert_eq!(cache.entry_count(), (WARM + TASKS) as u64);
    row
}

fn main() {
    // Warm thread-locals (CSPRNGs, thread ids, runtime) outside the counts.
    let _warm = task_store();
    let rows = [http_layer(), task_store(), rmcp(), moka()];
    let per = |bytes: usize| bytes as f64 / TASKS as f64;
    println!(
        "heap bytes per idle task (completed, retained) at {}k → {}k tasks held, result included\n",
        WARM / 1000,
        (WARM + TASKS) / 1000
    );
    println!("| store | bytes/task | of which the result | bytes/task without it | × http_layer | peak bytes/task | allocations/task |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let http = rows[0].bytes as f64;
    for row in &rows {
        println!(
            "| {} | {:.1} | {} | {:.1} | {:.2} | {:.1} | {:.2} |",
            row.name,
            per(row.bytes),
            row.result,
            per(row.bytes) - row.result as f64,
            row.bytes as f64 / http,
            per(row.peak),
            row.allocs as f64 / TASKS as f64,
        );
    }
    let ours = per(rows[0].bytes) - rows[0].result as f64;
    println!();
    println!(
        "goal: ≤ 1 KiB per idle task plus its result (http_layer): {ours:.1} B ({})",
        if ours <= 1024.0 { "met" } else { "missed" }
    );
}

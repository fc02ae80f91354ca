//! sessionreg_rmcp::TaskManager on its own: spawn, get, update, cancel, the
//! TTL (ignored by default, a deadline with `abort_at_ttl`), the capacity,
//! the retention and its reaper, shutdown, principals; and one piece of
//! code run on rmcp 3.11's manager and on this one, differing in the `use`
//! line only, observing the same states. Time is tokio's
//! paused clock (the TTL deadline) and a ManualClock (the retention): no
//! test waits for real time or asserts a duration.

use rmcp::model::{CallToolResult, ContentBlock, ErrorCode, InputRequest, TaskPayload, TaskStatus};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use sessionreg::{EndKind, ManualClock};
use sessionreg_rmcp::tasks::{SpawnError, TaskExit, TaskManager, TaskOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

fn ok(text: &str) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.to_owned())])
}

fn elicit(message: &str) -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": { "type": "object", "properties": {} },
        },
    }))
    .unwrap()
}

/// Lets the spawned work run until `done` holds (each round yields to the
/// runtime once; the bound only stops a broken test).
async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the condition never held");
}

fn status(tasks: &TaskManager, id: &str) -> TaskStatus {
    tasks.get_task(id).unwrap().status()
}

async fn terminal(tasks: &TaskManager, id: &str) -> TaskPayload {
    until(|| status(tasks, id).is_terminal()).await;
    tasks.get_task(id).unwrap().payload
}

fn result_text(payload: &TaskPayload) -> String {
    let TaskPayload::Completed { result } = payload else {
        panic!("not completed: {payload:?}");
    };
    let result: CallToolResult = serde_json::from_value(Value::Object(result.clone())).unwrap();
    result.content[0].as_text().unwrap().text.clone()
}

fn error_message(payload: &TaskPayload) -> String {
    let TaskPayload::Failed { error } = payload else {
        panic!("not failed: {payload:?}");
    };
    error["message"].as_str().unwrap().to_owned()
}

fn manual(clock: &ManualClock) -> sessionreg_rmcp::TaskManagerBuilder {
    TaskManager::builder()
        .manual_clock(clock)
        .retention(Duration::from_secs(1))
        .no_reaper()
}

#[tokio::test]
async fn a_task_is_readable_before_spawn_returns_and_completes_with_its_result() {
    let tasks = TaskManager::builder().node_id(0x5e).build().unwrap();
    let (go, wait) = oneshot::channel::<()>();
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let seen_in_task = seen.clone();
    let task = tasks.spawn(
        TaskOptions::new()
            .with_poll_interval_ms(25)
            .with_status_message("queued"),
        move |ctx| {
            *seen_in_task.lock().unwrap() = ctx.task_id().to_owned();
            Box::pin(async move {
                let _ = wait.await;
                ctx.set_status_message("done soon");
                Ok(ok("42"))
            })
        },
    );
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(task.task_id.len(), 48, "{}", task.task_id);
    assert!(
        task.task_id.starts_with("5e"),
        "node prefix: {}",
        task.task_id
    );
    assert_eq!(*seen.lock().unwrap(), task.task_id);
    assert_eq!(task.poll_interval_ms, Some(25));
    assert_eq!(task.status_message.as_deref(), Some("queued"));
    // rmcp's default TTL (5 min) is within the default retention (10 min).
    assert_eq!(task.ttl_ms, Some(300_000));

    let now = tasks.get_task(&task.task_id).unwrap();
    assert_eq!(now.status(), TaskStatus::Working);
    assert_eq!(now.task.created_at, task.created_at);
    assert_eq!(tasks.running_task_count(), 1);

    go.send(()).unwrap();
    let payload = terminal(&tasks, &task.task_id).await;
    assert_eq!(result_text(&payload), "42");
    let done = tasks.get_task(&task.task_id).unwrap();
    assert_eq!(done.task.status_message.as_deref(), Some("done soon"));
    assert_eq!(tasks.running_task_count(), 0);
    assert_eq!(tasks.stats().ended(EndKind::Completed), 1);
}

#[tokio::test]
async fn input_requests_are_answered_separately_and_unknown_keys_are_ignored() {
    let tasks = TaskManager::new();
    let task = tasks.spawn(TaskOptions::new(), |ctx| {
        Box::pin(async move {
            let (a, b) = tokio::join!(
                ctx.request_input("first", elicit("one?")),
                ctx.request_input("second", elicit("two?")),
            );
            let reused = ctx.request_input("first", elicit("again?")).await;
            let reused = match reused {
                Err(TaskExit::Error(e)) => e.message.to_string(),
                other => format!("{other:?}"),
            };
            Ok(ok(&format!("{} {} / {reused}", a?["v"], b?["v"])))
        })
    });
    let id = task.task_id.clone();
    until(|| {
        matches!(
            &tasks.get_task(&id).unwrap().payload,
            TaskPayload::InputRequired { input_requests } if input_requests.len() == 2
        )
    })
    .await;

    // An unknown key, an empty update: acknowledged, nothing changes.
    tasks
        .update_task(&id, [("nope".to_owned(), json!({"v": 0}))])
        .unwrap();
    tasks.update_task(&id, []).unwrap();
    assert_eq!(status(&tasks, &id), TaskStatus::InputRequired);

    // A partial update: at once, only the other key is outstanding.
    tasks
        .update_task(&id, [("first".to_owned(), json!({"v": 1}))])
        .unwrap();
    let TaskPayload::InputRequired { input_requests } = tasks.get_task(&id).unwrap().payload else {
        panic!("still input_required");
    };
    assert_eq!(input_requests.keys().collect::<Vec<_>>(), ["second"]);
    // Answering it twice, or the first again: ignored.
    tasks
        .update_task(
            &id,
            [
                ("second".to_owned(), json!({"v": 2})),
                ("second".to_owned(), json!({"v": 3})),
                ("first".to_owned(), json!({"v": 4})),
            ],
        )
        .unwrap();
    let payload = terminal(&tasks, &id).await;
    assert_eq!(
        result_text(&payload),
        "1 2 / inputRequests key \"first\" was already used for this task"
    );
    // An ended task still acknowledges updates.
    tasks
        .update_task(&id, [("late".to_owned(), json!({}))])
        .unwrap();
}

#[tokio::test]
async fn cancel_is_cooperative_wakes_input_waits_and_acknowledges_ended_tasks() {
    let tasks = TaskManager::new();
    // Parked on input: the cancel wakes it with TaskExit::Cancelled.
    let parked = tasks.spawn(TaskOptions::new(), |ctx| {
        Box::pin(async move {
            let answer = ctx.request_input("k", elicit("forever?")).await;
            assert!(matches!(answer, Err(TaskExit::Cancelled)));
            // Asking again after the cancel does not wait.
            let again = ctx.request_input("k2", elicit("still?")).await;
            assert!(matches!(again, Err(TaskExit::Cancelled)));
            assert!(ctx.is_cancel_requested());
            Err(TaskExit::Cancelled)
        })
    });
    until(|| status(&tasks, &parked.task_id) == TaskStatus::InputRequired).await;
    tasks.cancel_task(&parked.task_id).unwrap();
    assert!(matches!(
        terminal(&tasks, &parked.task_id).await,
        TaskPayload::Cancelled
    ));
    // Idempotent on an ended task; it stays cancelled.
    tasks.cancel_task(&parked.task_id).unwrap();
    assert_eq!(status(&tasks, &parked.task_id), TaskStatus::Cancelled);

    // The work may finish anyway: completed.
    let stubborn = tasks.spawn(TaskOptions::new(), |ctx| {
        Box::pin(async move {
            ctx.cancelled().await;
            Ok(ok("finished anyway"))
        })
    });
    tasks.cancel_task(&stubborn.task_id).unwrap();
    let payload = terminal(&tasks, &stubborn.task_id).await;
    assert_eq!(result_text(&payload), "finished anyway");

    // Or fail for a reason of its own: failed, with its error.
    let failing = tasks.spawn(TaskOptions::new(), |ctx| {
        Box::pin(async move {
            ctx.cancelled().await;
            Err(TaskExit::Error(McpError::internal_error(
                "database write failed",
                None,
            )))
        })
    });
    tasks.cancel_task(&failing.task_id).unwrap();
    let payload = terminal(&tasks, &failing.task_id).await;
    assert_eq!(error_message(&payload), "database write failed");

    let stats = tasks.stats();
    assert_eq!(stats.ended(EndKind::Cancelled), 1);
    assert_eq!(stats.ended(EndKind::Completed), 1);
    assert_eq!(stats.ended(EndKind::Failed), 1);
    let metrics = tasks.metrics();
    for line in [
        "sessionreg_tasks_running 0",
        "sessionreg_tasks_created_total 3",
        "sessionreg_tasks_ended_total{outcome=\"cancelled\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in {metrics}");
    }
}

#[tokio::test]
async fn an_input_request_the_work_stops_waiting_for_is_withdrawn() {
    let tasks = TaskManager::new();
    let (go, wait) = oneshot::channel::<()>();
    let (finish, finished) = oneshot::channel::<()>();
    let task = tasks.spawn(TaskOptions::new(), |ctx| {
        Box::pin(async move {
            tokio::select! {
                _ = ctx.request_input("k", elicit("quick?")) => unreachable!("nobody answers"),
                _ = wait => {}
            }
            let _ = finished.await;
            Ok(ok("moved on"))
        })
    });
    until(|| status(&tasks, &task.task_id) == TaskStatus::InputRequired).await;
    go.send(()).unwrap();
    until(|| status(&tasks, &task.task_id) == TaskStatus::Working).await;
    finish.send(()).unwrap();
    terminal(&tasks, &task.task_id).await;
}

#[tokio::test(start_paused = true)]
async fn the_ttl_never_ends_running_work_by_default() {
    let tasks = TaskManager::new();
    let (go, wait) = oneshot::channel::<()>();
    let task = tasks.spawn(TaskOptions::new().with_ttl_ms(10), |_ctx| {
        Box::pin(async move {
            let _ = wait.await;
            Ok(ok("late but whole"))
        })
    });
    assert_eq!(task.ttl_ms, Some(10));
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(status(&tasks, &task.task_id), TaskStatus::Working);
    assert_eq!(tasks.running_task_count(), 1);
    go.send(()).unwrap();
    let payload = terminal(&tasks, &task.task_id).await;
    assert_eq!(result_text(&payload), "late but whole");
}

#[tokio::test(start_paused = true)]
async fn with_abort_at_ttl_the_deadline_drops_the_work_and_fails_the_task() {
    let tasks = TaskManager::builder().abort_at_ttl(true).build().unwrap();
    struct Dropped(Arc<AtomicBool>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let guard = Dropped(dropped.clone());
    let task = tasks.spawn(TaskOptions::new().with_ttl_ms(50), move |ctx| {
        Box::pin(async move {
            let _guard = guard;
            let _ = ctx.request_input("k", elicit("in time?")).await;
            std::future::pending::<()>().await;
            Ok(ok("never"))
        })
    });
    // No deadline for a task without a TTL.
    let untimed = tasks.spawn(TaskOptions::new().with_ttl_ms(None), |_ctx| {
        Box::pin(async {
            tokio::time::sleep(Duration::from_secs(7200)).await;
            Ok(ok("in its own time"))
        })
    });
    until(|| status(&tasks, &task.task_id) == TaskStatus::InputRequired).await;
    tokio::time::advance(Duration::from_millis(49)).await;
    assert_eq!(status(&tasks, &task.task_id), TaskStatus::InputRequired);
    tokio::time::advance(Duration::from_millis(2)).await;
    let payload = terminal(&tasks, &task.task_id).await;
    assert_eq!(
        error_message(&payload),
        "task expired: TTL elapsed before completion"
    );
    assert!(dropped.load(Ordering::SeqCst), "the work was dropped");
    // Input for an expired task is acknowledged and goes nowhere.
    tasks
        .update_task(&task.task_id, [("k".to_owned(), json!({}))])
        .unwrap();
    assert_eq!(tasks.stats().ended(EndKind::Expired), 1);
    assert_eq!(tasks.running_task_count(), 1);
    tokio::time::sleep(Duration::from_secs(7200)).await;
    let payload = terminal(&tasks, &untimed.task_id).await;
    assert_eq!(result_text(&payload), "in its own time");
}

#[tokio::test]
async fn at_capacity_try_spawn_refuses_and_spawn_returns_a_failed_task() {
    let clock = ManualClock::new();
    let tasks = manual(&clock).capacity(2).node_id(3).build().unwrap();
    let (go, wait) = oneshot::channel::<()>();
    let first = tasks.spawn(TaskOptions::new(), |_ctx| {
        Box::pin(async move {
            let _ = wait.await;
            Ok(ok("first"))
        })
    });
    let second = tasks.spawn(TaskOptions::new(), |ctx| {
        Box::pin(async move {
            ctx.cancelled().await;
            Err(TaskExit::Cancelled)
        })
    });

    let mut called = false;
    let refused = tasks.try_spawn(TaskOptions::new(), |_ctx| {
        called = true;
        Box::pin(async { Ok(ok("never")) })
    });
    assert!(!called, "make_future is not called at capacity");
    assert_eq!(refused.unwrap_err(), SpawnError::AtCapacity { capacity: 2 });
    let error = McpError::from(SpawnError::AtCapacity { capacity: 2 });
    assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
    assert_eq!(error.data.unwrap()["reason"], "at_capacity");

    let seed = tasks.spawn(TaskOptions::new().with_poll_interval_ms(7), |_ctx| {
        unreachable!("make_future is not called at capacity")
    });
    assert_eq!(seed.status, TaskStatus::Failed);
    assert!(
        seed.task_id.starts_with("03-refused-full-"),
        "{}",
        seed.task_id
    );
    assert_eq!(seed.poll_interval_ms, Some(7));
    assert!(seed.status_message.unwrap().contains("full"));
    // tasks/get answers it as a failed task with the reason, and nothing
    // is stored for it.
    let got = tasks.get_task(&seed.task_id).unwrap();
    assert_eq!(got.status(), TaskStatus::Failed);
    assert_eq!(got.task.created_at, seed.created_at);
    assert_eq!(
        error_message(&got.payload),
        "task not started: the task store is full (2 tasks)"
    );
    tasks.update_task(&seed.task_id, []).unwrap();
    tasks.cancel_task(&seed.task_id).unwrap();
    assert_eq!(tasks.running_task_count(), 2);
    assert_eq!(tasks.stats().registry.live, 2);

    // Room again once an ended task is freed after its retention.
    tasks.cancel_task(&second.task_id).unwrap();
    terminal(&tasks, &second.task_id).await;
    assert!(tasks
        .try_spawn(TaskOptions::new(), |_ctx| unreachable!())
        .is_err());
    assert_eq!(tasks.reap(), 0, "the sweep that stamps its end");
    clock.advance(Duration::from_millis(1_001));
    assert_eq!(tasks.reap(), 1);
    let third = tasks
        .try_spawn(TaskOptions::new(), |_ctx| {
            Box::pin(async { Ok(ok("third")) })
        })
        .unwrap();
    assert_eq!(
        result_text(&terminal(&tasks, &third.task_id).await),
        "third"
    );
    go.send(()).unwrap();
    assert_eq!(
        result_text(&terminal(&tasks, &first.task_id).await),
        "first"
    );
}

#[tokio::test]
async fn ended_tasks_are_kept_for_the_retention_and_running_ones_for_ever() {
    let clock = ManualClock::new();
    let tasks = manual(&clock).build().unwrap();
    let (go, wait) = oneshot::channel::<()>();
    let long = tasks.spawn(TaskOptions::new(), |_ctx| {
        Box::pin(async move {
            let _ = wait.await;
            Ok(ok("long"))
        })
    });
    let short = tasks.spawn(TaskOptions::new().with_ttl_ms(None), |_ctx| {
        Box::pin(async { Ok(ok("short")) })
    });
    // What is advertised is what is kept: at most the retention.
    assert_eq!(long.ttl_ms, Some(1_000));
    assert_eq!(short.ttl_ms, Some(1_000));
    terminal(&tasks, &short.task_id).await;

    assert_eq!(tasks.reap(), 0, "the sweep that stamps its end");
    clock.advance(Duration::from_millis(999));
    assert_eq!(tasks.reap(), 0);
    assert_eq!(status(&tasks, &short.task_id), TaskStatus::Completed);
    clock.advance(Duration::from_millis(2));
    assert_eq!(tasks.reap(), 1);
    let gone = tasks.get_task(&short.task_id).unwrap_err();
    assert_eq!(gone.code, ErrorCode::INVALID_PARAMS);

    clock.advance(Duration::from_secs(3600));
    assert_eq!(tasks.reap(), 0, "running work is never freed");
    assert_eq!(status(&tasks, &long.task_id), TaskStatus::Working);
    go.send(()).unwrap();
    terminal(&tasks, &long.task_id).await;
    assert_eq!(tasks.stats().registry.live, 1);
}

#[tokio::test(start_paused = true)]
async fn the_background_reaper_frees_ended_tasks_and_stops_on_shutdown_and_drop() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let clock = ManualClock::new();
    let tasks = TaskManager::builder()
        .manual_clock(&clock)
        .retention(Duration::from_secs(1))
        .reap_every(Duration::from_millis(10))
        .build()
        .unwrap();
    let done = tasks.spawn(TaskOptions::new(), |_ctx| {
        Box::pin(async { Ok(ok("done")) })
    });
    terminal(&tasks, &done.task_id).await;
    assert_eq!(metrics.num_alive_tasks(), 1, "the reaper");
    tokio::time::sleep(Duration::from_millis(20)).await;
    clock.advance(Duration::from_millis(1_001));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let gone = tasks.get_task(&done.task_id).unwrap_err();
    assert_eq!(gone.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(tasks.stats().registry.live, 0);

    // Shutdown: running work is dropped (abandoned), every task freed, the
    // reaper stopped, and nothing new starts.
    let running = tasks.spawn(TaskOptions::new(), |_ctx| {
        Box::pin(async {
            std::future::pending::<()>().await;
            Ok(ok("never"))
        })
    });
    assert_eq!(metrics.num_alive_tasks(), 2);
    tasks.shutdown();
    until(|| metrics.num_alive_tasks() == 0).await;
    assert_eq!(tasks.stats().ended(EndKind::Abandoned), 1);
    assert_eq!(tasks.running_task_count(), 0);
    assert_eq!(
        tasks.get_task(&running.task_id).unwrap_err().code,
        ErrorCode::INVALID_PARAMS
    );
    assert_eq!(
        tasks
            .try_spawn(TaskOptions::new(), |_ctx| unreachable!())
            .unwrap_err(),
        SpawnError::ShuttingDown
    );
    let refused = tasks.spawn(TaskOptions::new(), |_ctx| unreachable!());
    assert_eq!(refused.status, TaskStatus::Failed);
    assert_eq!(
        error_message(&tasks.get_task(&refused.task_id).unwrap().payload),
        "task not started: the server is shutting down"
    );

    // Dropping the last clone stops the reaper too.
    let other = TaskManager::builder()
        .reap_every(Duration::from_millis(10))
        .build()
        .unwrap();
    let clone = other.clone();
    let done = other.spawn(TaskOptions::new(), |_ctx| Box::pin(async { Ok(ok("x")) }));
    terminal(&other, &done.task_id).await;
    assert_eq!(metrics.num_alive_tasks(), 1);
    drop(other);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(metrics.num_alive_tasks(), 1, "a clone keeps it");
    drop(clone);
    until(|| metrics.num_alive_tasks() == 0).await;
}

#[tokio::test]
async fn work_that_panics_fails_its_task_as_abandoned() {
    let tasks = TaskManager::new();
    let task = tasks.spawn(TaskOptions::new(), |_ctx| {
        Box::pin(async {
            tokio::task::yield_now().await;
            panic!("the work broke");
        })
    });
    let payload = terminal(&tasks, &task.task_id).await;
    assert!(
        error_message(&payload).starts_with("task abandoned"),
        "{payload:?}"
    );
    assert_eq!(tasks.stats().ended(EndKind::Abandoned), 1);
    assert_eq!(tasks.running_task_count(), 0);
}

#[tokio::test]
async fn unknown_and_forged_ids_are_invalid_params_and_not_echoed() {
    let tasks = TaskManager::new();
    let task = tasks.spawn(TaskOptions::new(), |_ctx| {
        Box::pin(async {
            std::future::pending::<()>().await;
            Ok(ok("never"))
        })
    });
    let mut forged = task.task_id.clone().into_bytes();
    let last = forged.len() - 1;
    forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
    let forged = String::from_utf8(forged).unwrap();
    for id in [
        "nope",
        "tasks-conformance-nonexistent-12345",
        "00-refused-full-x-1",
        &forged,
    ] {
        for error in [
            tasks.get_task(id).unwrap_err(),
            tasks.update_task(id, []).unwrap_err(),
            tasks.cancel_task(id).unwrap_err(),
        ] {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{id}");
            assert!(!error.message.contains(id), "the id is not echoed");
        }
    }
    assert_eq!(status(&tasks, &task.task_id), TaskStatus::Working);
    tasks.shutdown();
}

#[tokio::test]
async fn the_as_methods_answer_another_principals_task_as_unknown() {
    let tasks = TaskManager::new();
    let task = tasks.spawn_as("ada", TaskOptions::new(), |ctx| {
        Box::pin(async move {
            let answer = ctx.request_input("k", elicit("who?")).await?;
            Ok(ok(answer["who"].as_str().unwrap()))
        })
    });
    let id = task.task_id.as_str();
    let unbound = tasks.spawn(TaskOptions::new(), |_ctx| {
        Box::pin(async { Ok(ok("anyone's")) })
    });
    until(|| status(&tasks, id) == TaskStatus::InputRequired).await;
    for error in [
        tasks.get_task_as("eve", id).unwrap_err(),
        tasks.update_task_as("eve", id, []).unwrap_err(),
        tasks.cancel_task_as("eve", id).unwrap_err(),
        tasks.get_task_as("ada", &unbound.task_id).unwrap_err(),
    ] {
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    }
    assert_eq!(
        tasks.get_task_as("ada", id).unwrap().status(),
        TaskStatus::InputRequired
    );
    tasks
        .update_task_as("ada", id, [("k".to_owned(), json!({"who": "ada"}))])
        .unwrap();
    assert_eq!(result_text(&terminal(&tasks, id).await), "ada");
    // The plain methods do not check.
    tasks.cancel_task(id).unwrap();
    let bound = tasks
        .try_spawn_as("ada", TaskOptions::new(), |_ctx| {
            Box::pin(async { Ok(ok("bound")) })
        })
        .unwrap();
    assert_eq!(
        result_text(&terminal(&tasks, &bound.task_id).await),
        "bound"
    );
}

/// The same code, twice, differing in one `use` line: on rmcp 3.11's own
/// manager and on this one. It compiles against both (same names, same
/// signatures) and observes the same states.
macro_rules! on_manager {
    ($module:ident, $($manager:ident)::+) => {
        mod $module {
            use $($manager)::+::{TaskExit, TaskManager, TaskOptions};
            use rmcp::model::{CallToolResult, ContentBlock, TaskStatus};

            pub async fn run() -> Vec<String> {
                let tasks = TaskManager::new();
                let mut seen = vec![];
                let task = tasks.spawn(TaskOptions::new().with_ttl_ms(60_000), |ctx| {
                    Box::pin(async move {
                        let answer = ctx.request_input("n", super::elicit("n?")).await?;
                        ctx.set_status_message("thanks");
                        if ctx.is_cancel_requested() {
                            return Err(TaskExit::Cancelled);
                        }
                        let n = answer["n"].to_string();
                        Ok(CallToolResult::success(vec![ContentBlock::text(n)]))
                    })
                });
                let id = task.task_id.clone();
                seen.push(format!("{:?} {}", task.status, tasks.running_task_count()));
                super::until(|| {
                    tasks.get_task(&id).unwrap().status() == TaskStatus::InputRequired
                })
                .await;
                tasks
                    .update_task(&id, [("n".to_owned(), serde_json::json!({ "n": 7 }))])
                    .unwrap();
                super::until(|| tasks.get_task(&id).unwrap().status().is_terminal()).await;
                let done = tasks.get_task(&id).unwrap();
                seen.push(format!(
                    "{:?} {:?} {}",
                    done.status(),
                    done.task.status_message,
                    super::result_text(&done.payload)
                ));
                tasks.cancel_task(&id).unwrap();
                seen.push(format!("{:?}", tasks.get_task(&id).unwrap().status()));
                let parked = tasks.spawn(TaskOptions::new(), |ctx| {
                    Box::pin(async move {
                        ctx.cancelled().await;
                        Err(TaskExit::Cancelled)
                    })
                });
                tasks.cancel_task(&parked.task_id).unwrap();
                super::until(|| tasks.running_task_count() == 0).await;
                seen.push(format!("{:?}", tasks.get_task(&parked.task_id).unwrap().status()));
                seen.push(format!("{:?}", tasks.get_task("nope").unwrap_err().code));
                let _forever = tasks.spawn(TaskOptions::new(), |_ctx| {
                    Box::pin(async move {
                        std::future::pending::<()>().await;
                        Err(TaskExit::Cancelled)
                    })
                });
                seen.push(format!("running {}", tasks.running_task_count()));
                tasks.shutdown();
                // At once, before any aborted work has unwound.
                seen.push(format!("after shutdown {}", tasks.running_task_count()));
                seen
            }
        }
    };
}

on_manager!(on_rmcp, rmcp::task_manager);
on_manager!(on_sessionreg, sessionreg_rmcp::tasks);

#[tokio::test]
async fn the_same_code_runs_alike_on_rmcps_manager_and_on_this_one() {
    let rmcp = on_rmcp::run().await;
    assert_eq!(
        rmcp,
        [
            "Working 1",
            "Completed Some(\"thanks\") 7",
            "Completed",
            "Cancelled",
            "ErrorCode(-32602)",
            "running 1",
            "after shutdown 0",
        ]
    );
    assert_eq!(on_sessionreg::run().await, rmcp);
}

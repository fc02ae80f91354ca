//! A fleet of `mcp_server` nodes behind a real nginx or HAProxy, every
//! request routed to the node that holds its state by the first two hex
//! digits of its id (a session's `MCP-Session-Id`, a task's id in the
//! `Mcp-Name` of a `tasks/*` request, or a basket's id in the
//! `Mcp-Param-Basket` header of a `tools/call`), with no state in the
//! balancer.
//!
//! ```text
//! cargo run --release --example fleet -- --nodes 3 --balancer nginx
//! cargo run --release --example fleet -- --nodes 3 --balancer haproxy
//! cargo run --release --example fleet -- --nodes 3 --balancer nginx --redis
//! ```
//!
//! With `--redis` the nodes are joined to a real `redis-server` (the
//! fleet's bus), and listeners across nodes, Redis killed and Redis back
//! are shown first (`redis.rs`).
//!
//! 1. Builds `examples/mcp_server` with cargo (a no-op when it is up to
//!    date; `SESSIONREG_MCP_SERVER=PATH` uses a binary of your own) and
//!    starts N nodes on loopback, node i with `--node-id i`, all with one
//!    `--request-state-key-file` of the fleet's.
//! 2. Starts the balancer from PATH with the configuration that
//!    `MCP_ROUTE_PARAMS=Basket deploy/render.sh` prints (the Debian
//!    package `nginx` or `haproxy` must be installed).
//! 3. Drives sessions through the balancer from many clients at once:
//!    initialize, `notifications/initialized`, `tools/list`, tool calls,
//!    a GET stream with a notification on it, a POST answered over SSE,
//!    DELETE, and sessions left to idle out. Each client also keeps one
//!    session open throughout. Each client also drives tasks, as a
//!    2026-07-28 client (no session) that declares the tasks extension:
//!    `tools/call` of `sleep`, answered with a task (round-robin: it
//!    names no node), then `tasks/get` with `Mcp-Name: <task id>` through
//!    the balancer until the task has completed. And each makes a basket
//!    (`basket_create`, round-robin), adds as many items to it as it has
//!    rounds, each call naming the basket in `Mcp-Param-Basket` (as the
//!    Python SDK mirrors the tool's `x-mcp-header` argument), and calls
//!    `confirm`, whose input-required retry goes round-robin too: it opens
//!    on whichever node it reaches, as they share the key file.
//!    With `--python PYTHON` (an interpreter with tests/interop/requirements.txt
//!    installed), tests/interop/fleet_client.py first drives the official Python
//!    SDK's `Client(url)` through the balancer: 100 `basket_add` calls to
//!    one basket, and a `confirm` it retries by itself.
//! 4. Has every client start longer tasks, then kills one node (SIGKILL)
//!    with those tasks running on it and a tool call in flight on it (502
//!    is the one answer that call may get), and goes on: the clients whose
//!    kept session was on it get 404 and re-initialize on a survivor (see
//!    `mcp_test_client::Resilient`: what the official SDKs do not do yet);
//!    the tasks it held are lost with it, so polling one answers "Task not
//!    found" from a survivor, while the tasks of the other nodes complete;
//!    one of its baskets answers "no basket" from a survivor.
//! 5. Prints, per node: sessions created, requests served, requests that
//!    reached the wrong node (each node counts the ids of other nodes it
//!    is sent, in `/metrics`: before the kill every such count must be 0,
//!    after it only the killed node's ids may appear, answered 404), the
//!    killed node's ids answered 404, and the sessions live at the end (0);
//!    then the same for tasks: created, completed, task requests that
//!    reached the wrong node (`mcp_server_foreign_task_ids_total`), the
//!    killed node's task ids answered "Task not found", tasks running at
//!    the end (0).
//!
//! Exits 1 on any misrouted request (of a session, a task or a basket: a
//! node counted another live node's id, or a live node's task answered
//! "Task not found", or its basket "no basket"), leaked session, lost task
//! of a live node, refused `requestState` or unexpected answer.
//!
//! Steps 1 and 2, and the nodes' metrics, are the `fleet` crate's (shared
//! with `tests/fleet.rs`); the clients are `mcp-test-client`'s.

mod redis;

use clap::Parser;
use fleet::{calls, Fleet, Kind, Metrics, Node};
use mcp_test_client::{result_text, Client, Error, Http, Resilient, Session, Task};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(about = "A fleet of mcp_server nodes behind nginx or HAProxy")]
struct Args {
    /// Nodes to start (2..=256): one is killed midway.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(2..=256))]
    nodes: u16,
    /// The balancer: nginx or haproxy (from PATH).
    #[arg(long, default_value = "nginx")]
    balancer: Kind,
    /// Concurrent clients.
    #[arg(long, default_value_t = 24)]
    clients: usize,
    /// Short sessions per client, before the kill and again after it.
    #[arg(long, default_value_t = 12)]
    rounds: usize,
    /// The nodes' idle timeout, in milliseconds (some sessions are left to
    /// expire).
    #[arg(long, default_value_t = 3_000)]
    idle_timeout_ms: u64,
    /// Tasks per client, before the kill, across it and after it (0: none).
    #[arg(long, default_value_t = 4)]
    tasks: usize,
    /// How long each task sleeps, in milliseconds; the tasks running across
    /// the kill sleep five times as long.
    #[arg(long, default_value_t = 300)]
    task_ms: u64,
    /// Keep the work directory (configuration and logs) after the run.
    #[arg(long)]
    keep_logs: bool,
    /// A Python with the official SDK (`tests/interop/requirements.txt`): runs
    /// `tests/interop/fleet_client.py` through the balancer before the clients
    /// start (its exit status is checked like the rest).
    #[arg(long, value_name = "PYTHON")]
    python: Option<PathBuf>,
    /// Join the nodes to a real redis-server (the fleet's bus) and show
    /// listeners across nodes, Redis killed and back, first.
    #[arg(long)]
    redis: bool,
}

/// What the clients saw, summed over all of them.
#[derive(Default)]
struct Tally {
    sessions: AtomicU64,
    requests: AtomicU64,
    streams: AtomicU64,
    sse_replies: AtomicU64,
    deleted: AtomicU64,
    left_idle: AtomicU64,
    initialize_retries: AtomicU64,
    /// Tasks created, by the node their id names.
    tasks_created: Mutex<BTreeMap<u8, u64>>,
    /// Tasks polled to `completed`.
    tasks_completed: AtomicU64,
    /// `tasks/get` requests sent.
    task_polls: AtomicU64,
    /// A live node's task answered "Task not found": the request reached
    /// another node.
    tasks_misrouted: AtomicU64,
    /// The killed node's tasks answered "Task not found" (by a survivor):
    /// each one lost with its node, counted once.
    tasks_lost: AtomicU64,
    /// `tasks/get` requests lost in flight (502, closed), sent again.
    task_poll_retries: AtomicU64,
    /// Baskets made, by the node their id names, and the ids.
    baskets_created: Mutex<BTreeMap<u8, u64>>,
    baskets: Mutex<Vec<String>>,
    /// `basket_add` calls answered by the basket (its new size).
    basket_adds: AtomicU64,
    /// `confirm` retries whose state opened (`confirmed ship`), of those
    /// sent.
    confirmed: AtomicU64,
    confirms: AtomicU64,
    /// Answers that should not have happened, with what was being done.
    unexpected: Mutex<Vec<String>>,
}

impl Tally {
    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    fn unexpected(&self, what: String) {
        self.unexpected.lock().unwrap().push(what);
    }
}

const BOUND: Duration = Duration::from_secs(20);

/// What the clients do with tasks.
#[derive(Clone, Copy)]
struct TaskPlan {
    /// Tasks per client in each phase.
    per_client: usize,
    /// How long each sleeps.
    ms: u64,
}

/// Creates `count` tasks, each a `sleep` of `ms`, through the balancer;
/// tallies them by node.
async fn create_tasks(
    client: &Client,
    count: usize,
    ms: u64,
    what: &str,
    tally: &Tally,
) -> Vec<Task> {
    let mut tasks = Vec::new();
    for i in 0..count {
        match client
            .try_create_task(i as u64 + 1, "sleep", json!({ "ms": ms }))
            .await
        {
            Ok(task) => {
                *tally
                    .tasks_created
                    .lock()
                    .unwrap()
                    .entry(task.node().unwrap_or(255))
                    .or_default() += 1;
                tasks.push(task);
            }
            Err(error) => tally.unexpected(format!("{what}, creating task {i}: {error}")),
        }
    }
    tasks
}

/// Polls `task` through the balancer until it ends. `dead`: the node that
/// was killed, if it has been: its tasks answer "Task not found", once.
async fn poll_task(client: &Client, task: &Task, dead: Option<u8>, what: &str, tally: &Tally) {
    let until = tokio::time::Instant::now() + BOUND;
    let mut id = 100;
    loop {
        id += 1;
        Tally::add(&tally.task_polls, 1);
        match client.try_task_get(id, task).await {
            Ok(state) => match state["status"].as_str() {
                Some("completed") => {
                    if result_text(&state["result"]).is_some_and(|t| t.starts_with("slept")) {
                        Tally::add(&tally.tasks_completed, 1);
                    } else {
                        tally.unexpected(format!("{what}: {task:?} completed with {state}"));
                    }
                    return;
                }
                Some("working") => {}
                _ => {
                    tally.unexpected(format!("{what}: {task:?} is {}", state["status"]));
                    return;
                }
            },
            Err(error) if error.is_task_not_found() => {
                if task.node().is_some() && task.node() == dead {
                    Tally::add(&tally.tasks_lost, 1);
                } else {
                    Tally::add(&tally.tasks_misrouted, 1);
                    tally.unexpected(format!(
                        "{what}: {task:?} of a live node answered \"Task not found\" (misrouted)"
                    ));
                }
                return;
            }
            // Sent to a node as it died: its outcome is unknown, and a
            // `tasks/get` changes nothing, so it is sent again.
            Err(error) if error.is_lost_in_flight() => Tally::add(&tally.task_poll_retries, 1),
            Err(error) => {
                tally.unexpected(format!("{what}: tasks/get of {task:?}: {error}"));
                return;
            }
        }
        if tokio::time::Instant::now() >= until {
            tally.unexpected(format!("{what}: {task:?} still working after {BOUND:?}"));
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A basket made through the balancer (round-robin), `items` items added
/// to it (each call naming it in `Mcp-Param-Basket`, so routed to its
/// node: any other node answers "no basket"), then `confirm`, its
/// input-required retry sent through the balancer too (round-robin: any
/// node opens it, as they share the key file).
async fn basket_round(client: &Client, items: usize, what: &str, tally: &Tally) {
    let made = match calls::tool_result(client, 1, "basket_create", json!({})).await {
        Ok(made) => made,
        Err(error) => return tally.unexpected(format!("{what}, basket_create: {error}")),
    };
    let Some(basket) = made["structuredContent"]["basket"].as_str() else {
        return tally.unexpected(format!("{what}, basket_create answered {made}"));
    };
    let node = Session::new(basket.to_string()).node().unwrap_or(255);
    *tally
        .baskets_created
        .lock()
        .unwrap()
        .entry(node)
        .or_default() += 1;
    tally.baskets.lock().unwrap().push(basket.to_string());
    for i in 0..items {
        let item = json!({ "basket": basket, "item": format!("item {i}") });
        match calls::tool_result(client, 2 + i as u64, "basket_add", item).await {
            Ok(added) if result_text(&added) == Some(format!("{} items", i + 1).as_str()) => {
                Tally::add(&tally.basket_adds, 1)
            }
            other => {
                return tally.unexpected(format!(
                    "{what}, basket_add {i} to a basket of node {node}: {other:?}"
                ))
            }
        }
    }
    Tally::add(&tally.confirms, 1);
    let state =
        match calls::confirm_asked(client, 900, calls::confirm_arguments("ship", false)).await {
            Ok(state) => state,
            Err(error) => return tally.unexpected(format!("{what}, confirm: {error}")),
        };
    match calls::confirm_retry(client, 901, calls::confirm_arguments("ship", false), &state).await {
        Ok(retry) if result_text(&retry.json()["result"]) == Some("confirmed ship") => {
            Tally::add(&tally.confirmed, 1)
        }
        Ok(retry) => tally.unexpected(format!("{what}, confirm's retry: {}", retry.text())),
        Err(error) => tally.unexpected(format!("{what}, confirm's retry: {error}")),
    }
}

/// Runs `tests/interop/fleet_client.py URL` with `python`, its output shown once
/// it has ended: whether it succeeded.
async fn python_client(python: PathBuf, url: String) -> Result<bool, String> {
    let script = fleet::process::repo_root().join("tests/interop/fleet_client.py");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&python)
            .arg(&script)
            .arg(&url)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))
    })
    .await
    .map_err(|e| e.to_string())??;
    println!("tests/interop/fleet_client.py (the Python SDK's Client) through the balancer:");
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        println!("  {line}");
    }
    if !output.status.success() {
        for line in String::from_utf8_lossy(&output.stderr).lines().take(20) {
            println!("  {line}");
        }
    }
    Ok(output.status.success())
}

/// Polls every task until it ends.
async fn poll_tasks(client: &Client, tasks: &[Task], dead: Option<u8>, what: &str, tally: &Tally) {
    for task in tasks {
        poll_task(client, task, dead, what, tally).await;
    }
}

/// One short session, its kind chosen by `round`.
async fn short_session(client: &Client, round: usize, tally: &Tally) -> Result<(), Error> {
    let (session, retries) = client.open_retrying(20).await?;
    Tally::add(&tally.sessions, 1);
    Tally::add(&tally.initialize_retries, u64::from(retries));
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    let tools = client.request_result(Some(&session), &list).await?;
    if tools["tools"].as_array().is_none_or(|t| t.is_empty()) {
        return Err(Error::Transport(format!("tools/list: {tools}")));
    }
    let text = format!("round {round}");
    let echoed = client
        .try_call(&session, 2, "echo", json!({ "text": text }))
        .await?;
    if result_text(&echoed) != Some(text.as_str()) {
        return Err(Error::Transport(format!("echo answered {echoed}")));
    }
    let mut requests = 4; // initialize, initialized, tools/list, echo
    match round % 4 {
        0 => {
            // A notification on the GET stream, through the balancer.
            let mut stream = client.try_open_stream(&session).await?;
            let said = client
                .try_call(&session, 3, "announce", json!({ "text": text }))
                .await?;
            let message = stream.next_within(BOUND).await?;
            let data = message.as_ref().and_then(|m| m.pointer("/params/data"));
            if result_text(&said) != Some("delivered") || data != Some(&json!(text)) {
                return Err(Error::Transport(format!(
                    "announce: {said}, stream: {message:?}"
                )));
            }
            requests += 2;
            Tally::add(&tally.streams, 1);
        }
        1 => {
            // A POST answered over SSE: its first event arrives before the
            // client releases the tool, so nothing buffered it.
            let mut reply = client
                .call_streaming(&session, 3, "hold", json!({}))
                .await?;
            let first = reply.next_within(BOUND).await?;
            if first.as_ref().and_then(|m| m.get("method")) != Some(&json!("notifications/message"))
            {
                return Err(Error::Transport(format!("hold's first event: {first:?}")));
            }
            client.try_call(&session, 4, "release", json!({})).await?;
            let done = tokio::time::timeout(BOUND, reply.response(&json!(3)))
                .await
                .map_err(|_| Error::Transport("hold never answered".into()))??;
            if result_text(&done["result"]) != Some("released") {
                return Err(Error::Transport(format!("hold answered {done}")));
            }
            requests += 2;
            Tally::add(&tally.sse_replies, 1);
        }
        _ => {}
    }
    if round % 4 == 2 {
        // Left to idle out on its node.
        Tally::add(&tally.left_idle, 1);
    } else {
        client.try_delete(&session).await?;
        requests += 1;
        Tally::add(&tally.deleted, 1);
    }
    Tally::add(&tally.requests, requests);
    Ok(())
}

/// A client's work in one phase: its tasks started, its short sessions,
/// its tasks polled to their end, then one call in its kept session (which
/// re-initializes if the session is gone). `dead`: the node killed before
/// this phase, if any.
async fn phase(
    client: Client,
    mut kept: Resilient,
    rounds: usize,
    plan: TaskPlan,
    dead: Option<u8>,
    phase: &str,
    tally: Arc<Tally>,
) -> Resilient {
    let tasks = create_tasks(&client, plan.per_client, plan.ms, phase, &tally).await;
    for round in 0..rounds {
        if let Err(error) = short_session(&client, round, &tally).await {
            tally.unexpected(format!("{phase}, short session {round}: {error}"));
        }
    }
    basket_round(&client, rounds, phase, &tally).await;
    poll_tasks(&client, &tasks, dead, phase, &tally).await;
    match kept.call("echo", json!({ "text": "still here" })).await {
        Ok(_) => Tally::add(&tally.requests, 1),
        Err(error) => tally.unexpected(format!("{phase}, kept session: {error}")),
    }
    kept
}

async fn scrape(
    nodes: &[Node],
    http: &Http,
    skip: Option<u8>,
) -> Result<Vec<Option<Metrics>>, String> {
    let mut all = Vec::new();
    for node in nodes {
        if Some(node.id) == skip {
            all.push(None);
        } else {
            all.push(Some(node.metrics(http).await?));
        }
    }
    Ok(all)
}

async fn run(args: Args) -> Result<bool, String> {
    let n = usize::from(args.nodes);
    let victim = (n - 1) as u8;
    let flags = [
        "--idle-timeout-ms".to_string(),
        args.idle_timeout_ms.to_string(),
        "--max-sessions".to_string(),
        "100000".to_string(),
    ];
    let mut bus = redis::start(args.redis)?;
    let mut fleet = match &bus {
        Some(redis) => Fleet::start_on_bus(args.balancer, n, &flags, redis)?,
        None => Fleet::start(args.balancer, n, &flags)?,
    };
    println!(
        "fleet: {n} nodes, {} on {}, {} clients x {} short sessions per phase",
        fleet.balancer().kind,
        fleet.balancer().url(),
        args.clients,
        args.rounds
    );
    let http = fleet::http();
    let tally = Arc::new(Tally::default());
    let bus_ok = match &mut bus {
        Some(redis) => redis::phase(&fleet, redis, &http).await?,
        None => true,
    };

    // The official Python SDK's client through the balancer, first, while
    // nothing else runs (the demo's kept sessions, opened next, would idle
    // out while it ran).
    let python_ok = match args.python.clone() {
        Some(python) => Some(python_client(python, fleet.balancer().url()).await?),
        None => None,
    };

    // Phase 1: every node up.
    let mut kept = Vec::new();
    for c in 0..args.clients {
        let client = fleet.balancer().client(&http, &format!("client-{c}"));
        match Resilient::start(client.clone()).await {
            Ok(session) => kept.push((client, session)),
            Err(error) => tally.unexpected(format!("client {c}: first session: {error}")),
        }
    }
    let plan = TaskPlan {
        per_client: args.tasks,
        ms: args.task_ms,
    };
    let kept = run_phase(kept, args.rounds, plan, None, "before the kill", &tally).await;

    // Tasks that run across the kill: every client starts some, five times
    // as long as the others, so those on the victim are still running
    // when it dies.
    let spanning = {
        let starts: Vec<_> = kept
            .iter()
            .map(|(client, _)| {
                let (client, tally) = (client.clone(), Arc::clone(&tally));
                let ms = args.task_ms * 5;
                tokio::spawn(async move {
                    let tasks =
                        create_tasks(&client, plan.per_client, ms, "across the kill", &tally).await;
                    (client, tasks)
                })
            })
            .collect();
        let mut all = Vec::new();
        for start in starts {
            all.push(start.await.map_err(|e| e.to_string())?);
        }
        all
    };
    let spanning_on_victim = spanning
        .iter()
        .flat_map(|(_, tasks)| tasks)
        .filter(|task| task.node() == Some(victim))
        .count() as u64;

    // The kill, with a tool call in flight on the victim.
    let before = scrape(fleet.nodes(), &http, None).await?;
    let on_victim: Vec<_> = kept
        .iter()
        .filter(|(_, k)| k.session().node() == Some(victim))
        .collect();
    let kept_on_victim = on_victim.len() as u64;
    let in_flight = on_victim.first().map(|(client, k)| {
        let (client, session) = (client.clone(), k.session().clone());
        tokio::spawn(async move {
            client
                .try_call(&session, 999, "sleep", json!({ "ms": 60_000 }))
                .await
        })
    });
    let victim_requests = before[usize::from(victim)]
        .as_ref()
        .map_or(0, |m| m.requests);
    if in_flight.is_some() {
        // Until the victim has the call.
        let until = tokio::time::Instant::now() + BOUND;
        while fleet.nodes()[usize::from(victim)]
            .metrics(&http)
            .await?
            .requests
            <= victim_requests
            && tokio::time::Instant::now() < until
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let victim_before = fleet.nodes()[usize::from(victim)].metrics(&http).await?;
    fleet.node_mut(victim).kill()?;
    println!(
        "killed node {victim} ({kept_on_victim} kept sessions, {} running tasks on it)",
        victim_before.tasks_running
    );
    let mut in_flight_status = None;
    if let Some(task) = in_flight {
        let result = task.await.map_err(|e| e.to_string())?;
        in_flight_status = Some(match &result {
            Err(error) => error.status().map_or(error.to_string(), |s| s.to_string()),
            Ok(_) => "answered".to_string(),
        });
        if !result.as_ref().is_err_and(Error::is_lost_in_flight) {
            tally.unexpected(format!(
                "the call in flight at the kill: {result:?}, not 502 or a closed connection"
            ));
        }
    }

    // An id naming no node of the fleet: any node answers 404.
    let stranger = Session::new(format!("{:02x}{}", n.min(255), "0".repeat(46)));
    let probe = fleet.balancer().client(&http, "probe");
    match probe
        .try_call(&stranger, 1, "echo", json!({ "text": "?" }))
        .await
    {
        Err(Error::SessionGone) => {}
        other => tally.unexpected(format!("an id naming no node: {other:?}, not 404")),
    }

    // A basket of the killed node, if it made one: "no basket", from a
    // survivor.
    let victim_basket = tally
        .baskets
        .lock()
        .unwrap()
        .iter()
        .find(|b| Session::new(b.to_string()).node() == Some(victim))
        .cloned();
    let mut victim_basket_gone = None;
    if let Some(basket) = &victim_basket {
        let shown = calls::tool_result(&probe, 2, "basket_show", json!({ "basket": basket })).await;
        let gone = shown.as_ref().is_ok_and(|r| {
            r["isError"] == true && result_text(r).is_some_and(|t| t.starts_with("no basket"))
        });
        if !gone {
            tally.unexpected(format!(
                "a basket of the killed node: {shown:?}, not \"no basket\""
            ));
        }
        victim_basket_gone = Some(gone);
    }

    // The tasks that ran across the kill, polled while phase 2 runs: the
    // victim's are gone ("Task not found" from a survivor), the others
    // complete.
    let polls: Vec<_> = spanning
        .into_iter()
        .map(|(client, tasks)| {
            let tally = Arc::clone(&tally);
            tokio::spawn(async move {
                poll_tasks(&client, &tasks, Some(victim), "across the kill", &tally).await
            })
        })
        .collect();

    // Phase 2: the victim is gone.
    let kept = run_phase(
        kept,
        args.rounds,
        plan,
        Some(victim),
        "after the kill",
        &tally,
    )
    .await;
    for poll in polls {
        poll.await.map_err(|e| e.to_string())?;
    }
    let mut reinits_from_victim = 0u64;
    let mut reinits_to = BTreeMap::<u8, u64>::new();
    let mut reinits_other = 0u64;
    for (_, k) in &kept {
        for r in &k.reinitialized {
            if r.from == Some(victim) {
                reinits_from_victim += 1;
                *reinits_to.entry(r.to.unwrap_or(255)).or_default() += 1;
                if r.to == Some(victim) {
                    tally.unexpected("a new session on the killed node".to_string());
                }
            } else {
                reinits_other += 1;
            }
        }
    }
    for (_, k) in kept {
        if let Err(error) = k.delete().await {
            tally.unexpected(format!("deleting a kept session: {error}"));
        }
    }

    // Sessions left idle expire on their nodes.
    let until =
        tokio::time::Instant::now() + Duration::from_millis(args.idle_timeout_ms * 4) + BOUND;
    let after = loop {
        let now = scrape(fleet.nodes(), &http, Some(victim)).await?;
        let live: u64 = now.iter().flatten().map(|m| m.live + m.tasks_running).sum();
        if live == 0 || tokio::time::Instant::now() >= until {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // The verdict, per node.
    let alive = |owner: u8| usize::from(owner) < n && owner != victim;
    println!();
    println!(
        "{:>4}  {:<7} {:>8} {:>9} {:>10} {:>13} {:>5}",
        "node", "state", "sessions", "requests", "wrong-node", "killed's 404s", "live"
    );
    let mut misrouted = 0u64;
    let mut leaked = 0u64;
    let mut victim_404s = 0u64;
    for (i, node) in fleet.nodes().iter().enumerate() {
        let id = node.id;
        let pre = before[i]
            .as_ref()
            .expect("every node scraped before the kill");
        // Before the kill, no node may see another fleet node's id.
        let wrong_before = pre.foreign_from(|o| usize::from(o) < n && o != id);
        let row = if id == victim {
            misrouted += wrong_before;
            (
                "killed",
                victim_before.created,
                victim_before.requests,
                wrong_before,
                "-".to_string(),
                "-".to_string(),
            )
        } else {
            let post = after[i].as_ref().expect("survivors scraped");
            // After it, only the victim's ids, answered 404.
            let wrong = wrong_before + post.foreign_from(|o| alive(o) && o != id)
                - pre.foreign_from(|o| alive(o) && o != id);
            let gone = post.foreign.get(&victim).copied().unwrap_or(0)
                - pre.foreign.get(&victim).copied().unwrap_or(0);
            misrouted += wrong;
            victim_404s += gone;
            // Live is created minus ended: both say the same.
            leaked += post.live + (post.created - post.live - post.terminated_total());
            (
                "alive",
                post.created,
                post.requests,
                wrong,
                gone.to_string(),
                post.live.to_string(),
            )
        };
        println!(
            "{:>4}  {:<7} {:>8} {:>9} {:>10} {:>13} {:>5}",
            id, row.0, row.1, row.2, row.3, row.4, row.5
        );
    }
    println!();
    println!(
        "{:>4}  {:<7} {:>8} {:>9} {:>10} {:>19} {:>7}",
        "node", "state", "tasks", "completed", "wrong-node", "killed's not-found", "running"
    );
    let mut tasks_misrouted = 0u64;
    let mut victim_not_found = 0u64;
    let mut tasks_running = 0u64;
    let mut nodes_completed = 0u64;
    let mut creators_differ = Vec::new();
    let created_by = tally.tasks_created.lock().unwrap().clone();
    for (i, node) in fleet.nodes().iter().enumerate() {
        let id = node.id;
        let pre = before[i]
            .as_ref()
            .expect("every node scraped before the kill");
        let wrong_before = pre.foreign_tasks_from(|o| usize::from(o) < n && o != id);
        let (state, m, wrong, gone, running) = if id == victim {
            (
                "killed",
                &victim_before,
                wrong_before,
                "-".to_string(),
                "-".to_string(),
            )
        } else {
            let post = after[i].as_ref().expect("survivors scraped");
            let wrong = wrong_before + post.foreign_tasks_from(|o| alive(o) && o != id)
                - pre.foreign_tasks_from(|o| alive(o) && o != id);
            let owned = |m: &Metrics| m.foreign_tasks.get(&victim).copied().unwrap_or(0);
            let gone = owned(post) - owned(pre);
            victim_not_found += gone;
            tasks_running += post.tasks_running;
            (
                "alive",
                post,
                wrong,
                gone.to_string(),
                post.tasks_running.to_string(),
            )
        };
        tasks_misrouted += wrong;
        nodes_completed += m.tasks_ended("completed");
        let minted = created_by.get(&id).copied().unwrap_or(0);
        if m.tasks_created != minted {
            creators_differ.push(format!(
                "node {id} created {}, the clients got {minted} ids of it",
                m.tasks_created
            ));
        }
        println!(
            "{:>4}  {:<7} {:>8} {:>9} {:>10} {:>19} {:>7}",
            id,
            state,
            m.tasks_created,
            m.tasks_ended("completed"),
            wrong,
            gone,
            running
        );
    }
    println!();
    println!(
        "clients: {} short sessions ({} with a GET stream, {} with an SSE reply, {} deleted, {} left to idle out), {} requests, {} initialize retries",
        tally.sessions.load(Ordering::Relaxed),
        tally.streams.load(Ordering::Relaxed),
        tally.sse_replies.load(Ordering::Relaxed),
        tally.deleted.load(Ordering::Relaxed),
        tally.left_idle.load(Ordering::Relaxed),
        tally.requests.load(Ordering::Relaxed),
        tally.initialize_retries.load(Ordering::Relaxed),
    );
    println!(
        "the call in flight at the kill: {}",
        in_flight_status
            .as_deref()
            .unwrap_or("none (no kept session on the victim)")
    );
    println!(
        "kept sessions of node {victim}: {} got 404 and re-initialized on {:?} (node: sessions)",
        reinits_from_victim, reinits_to
    );
    if reinits_other > 0 {
        println!("kept sessions re-initialized for another reason (idle timeout): {reinits_other}");
    }
    let tasks_created: u64 = created_by.values().sum();
    let tasks_completed = tally.tasks_completed.load(Ordering::Relaxed);
    let tasks_lost = tally.tasks_lost.load(Ordering::Relaxed);
    let clients_misrouted = tally.tasks_misrouted.load(Ordering::Relaxed);
    println!(
        "tasks: {tasks_created} created {:?} (node: tasks), {tasks_completed} completed, {tasks_lost} lost with node {victim} (of its {spanning_on_victim} running at the kill), {} misrouted; {} tasks/get ({} sent again after a loss in flight)",
        created_by,
        clients_misrouted,
        tally.task_polls.load(Ordering::Relaxed),
        tally.task_poll_retries.load(Ordering::Relaxed),
    );
    let mut ok = true;
    let mut check = |good: bool, what: String| {
        println!("{} {what}", if good { "ok  " } else { "FAIL" });
        ok &= good;
    };
    check(
        misrouted == 0,
        format!("requests that reached the wrong node: {misrouted}"),
    );
    check(
        tasks_misrouted == 0 && clients_misrouted == 0,
        format!(
            "task requests that reached the wrong node: {tasks_misrouted} (the nodes' count), {clients_misrouted} (a live node's task answered \"Task not found\")"
        ),
    );
    check(
        creators_differ.is_empty(),
        format!(
            "every task id names the node that created it{}",
            creators_differ
                .iter()
                .map(|d| format!("; {d}"))
                .collect::<String>()
        ),
    );
    check(
        leaked == 0,
        format!("sessions leaked on the survivors: {leaked}"),
    );
    check(
        args.tasks == 0 || spanning_on_victim > 0,
        format!("node {victim} held running tasks at the kill: {spanning_on_victim}"),
    );
    check(
        tasks_lost == spanning_on_victim,
        format!(
            "every task of node {victim} running at the kill answered \"Task not found\" from a survivor: {tasks_lost} of {spanning_on_victim}"
        ),
    );
    check(
        victim_not_found == tasks_lost,
        format!(
            "the survivors' count of node {victim}'s task ids ({victim_not_found}) is the clients' count of \"Task not found\" for them ({tasks_lost})"
        ),
    );
    check(
        tasks_completed == tasks_created - tasks_lost && nodes_completed == tasks_completed,
        format!(
            "every other task completed: {tasks_completed} of {} (the nodes count {nodes_completed})",
            tasks_created - tasks_lost
        ),
    );
    check(
        tasks_running == 0,
        format!("tasks running on the survivors at the end: {tasks_running}"),
    );
    check(
        reinits_from_victim == kept_on_victim,
        format!(
            "every kept session of node {victim} re-initialized elsewhere: {reinits_from_victim} of {kept_on_victim}"
        ),
    );
    check(
        victim_404s == reinits_from_victim,
        format!(
            "the survivors' count of node {victim}'s ids ({victim_404s}) is the clients' count of 404s for them ({reinits_from_victim})"
        ),
    );
    // Baskets: no node saw a basket of another live node (before the kill,
    // of any other node of the fleet).
    let mut baskets_misrouted = 0u64;
    let mut victim_baskets_seen = 0u64;
    for (i, node) in fleet.nodes().iter().enumerate() {
        let id = node.id;
        let pre = before[i].as_ref().expect("scraped before the kill");
        baskets_misrouted += pre.foreign_handles_from(|o| usize::from(o) < n && o != id);
        if let Some(post) = after[i].as_ref() {
            baskets_misrouted += post.foreign_handles_from(|o| alive(o) && o != id)
                - pre.foreign_handles_from(|o| alive(o) && o != id);
            victim_baskets_seen += post.foreign_handles.get(&victim).copied().unwrap_or(0)
                - pre.foreign_handles.get(&victim).copied().unwrap_or(0);
        }
    }
    // Counters only grow: the survivors' at the end, the victim's at its
    // death.
    let states_refused = after
        .iter()
        .flatten()
        .map(Metrics::states_rejected_total)
        .sum::<u64>()
        + victim_before.states_rejected_total();
    let baskets_created = tally.baskets_created.lock().unwrap().clone();
    println!(
        "baskets: {} made {:?} (node: baskets), {} basket_add calls answered by their basket, {} misrouted; confirm: {} of {} input-required retries opened where they landed",
        baskets_created.values().sum::<u64>(),
        baskets_created,
        tally.basket_adds.load(Ordering::Relaxed),
        baskets_misrouted,
        tally.confirmed.load(Ordering::Relaxed),
        tally.confirms.load(Ordering::Relaxed),
    );
    check(
        baskets_misrouted == 0,
        format!("basket calls that reached the wrong node: {baskets_misrouted}"),
    );
    check(
        tally.confirmed.load(Ordering::Relaxed) == tally.confirms.load(Ordering::Relaxed)
            && states_refused == 0,
        format!(
            "input-required retries opened on the node they reached (one key file): {} of {}, requestStates refused: {states_refused}",
            tally.confirmed.load(Ordering::Relaxed),
            tally.confirms.load(Ordering::Relaxed)
        ),
    );
    if let Some(gone) = victim_basket_gone {
        check(
            gone && victim_baskets_seen == 1,
            format!(
                "a basket of node {victim} answered \"no basket\" from a survivor (the survivors saw {victim_baskets_seen} call naming one)"
            ),
        );
    }
    if let Some(python_ok) = python_ok {
        check(
            python_ok,
            "the Python SDK's Client through the balancer (tests/interop/fleet_client.py)"
                .to_string(),
        );
    }
    check(
        bus_ok,
        "the fleet's bus: every check of the --redis phase held".into(),
    );
    let unexpected = tally.unexpected.lock().unwrap();
    check(
        unexpected.is_empty(),
        format!("unexpected answers: {}", unexpected.len()),
    );
    for line in unexpected.iter().take(10) {
        println!("     {line}");
    }
    if let Some(dir) = fleet.stop(args.keep_logs || !ok) {
        println!("logs: {}", dir.display());
    }
    Ok(ok)
}

async fn run_phase(
    kept: Vec<(Client, Resilient)>,
    rounds: usize,
    plan: TaskPlan,
    dead: Option<u8>,
    name: &'static str,
    tally: &Arc<Tally>,
) -> Vec<(Client, Resilient)> {
    let tasks: Vec<_> = kept
        .into_iter()
        .map(|(client, session)| {
            let tally = Arc::clone(tally);
            tokio::spawn(async move {
                let session = phase(client.clone(), session, rounds, plan, dead, name, tally).await;
                (client, session)
            })
        })
        .collect();
    let mut kept = Vec::new();
    for task in tasks {
        match task.await {
            Ok(pair) => kept.push(pair),
            Err(error) => tally.unexpected(format!("{name}: a client task failed: {error}")),
        }
    }
    kept
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("fleet: {error}");
            ExitCode::FAILURE
        }
    }
}

//! Three `mcp_server` nodes behind a real nginx and behind a real HAProxy,
//! configured by `deploy/render.sh`: new sessions spread over the nodes,
//! every follow-up reaches its owner, SSE passes through unbuffered, a
//! killed node's sessions get 404 (after at most the one request in flight
//! at the kill) and re-initialize on a survivor, a drained node gets no new
//! session, serves its own to their end and stops, and nothing leaks.
//! The same for tasks (2026-07-28, no session: the tasks extension's
//! requests name their task in `Mcp-Name`): new tasks spread over the
//! nodes, every `tasks/get` and `tasks/cancel` reaches the task's node
//! (draining or not), a killed node's tasks answer "Task not found" from a
//! survivor while the survivors' tasks complete. The same for handles
//! (`mcp_server`'s baskets): every `basket_add` naming a basket in its
//! `Mcp-Param-Basket` header (as the Python SDK mirrors the tool's
//! `x-mcp-header` argument) reaches the basket's node, and a killed node's
//! basket answers "no basket" from a survivor. An input-required retry (a
//! sealed `requestState`) opens on every node sharing the fleet's key file,
//! and follows the file as it is rotated and re-read on SIGHUP.
//!
//! Needs `nginx` and `haproxy` (Debian packages of the same names). Without
//! them the test is skipped with a loud message, except under CI (`CI` set),
//! where `.ci/run` installs them first and a missing one fails the test.
//! Everything listens on loopback ports picked at run time; every child
//! process (nodes, balancer, nginx's workers) is killed when the test ends,
//! however it ends.
#![cfg(feature = "http")]

// The same nodes, balancer and client as the demo (examples/fleet): the
// `fleet` and `mcp-test-client` crates.
use fleet::{calls, Fleet, Kind, Metrics};
use http::Method;
use mcp_test_client::{fetch_text, result_text, Client, Error, Http, Reply, Session, Task};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// A safety net for waits (a stream event, a node's exit), never the
/// thing tested.
const BOUND: Duration = Duration::from_secs(30);

/// Requests per session in `open_sessions` and `follow_up`: initialize,
/// notifications/initialized, two tool calls.
const REQUESTS_PER_SESSION: u64 = 4;

/// How a node is told to drain.
#[derive(Clone, Copy, Debug)]
enum DrainBy {
    /// `POST /drain` on its loopback admin endpoint.
    Admin,
    /// SIGUSR1.
    Signal,
}

/// The whole scenario's safety net: it takes a few seconds; a wait that
/// never ends (a balancer that holds a stream's headers, say) fails the
/// test instead of hanging it, and the nodes and balancer die with it.
const WHOLE: Duration = Duration::from_secs(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_routes_each_session_to_its_node() {
    if balancer_present(Kind::Nginx) {
        tokio::time::timeout(WHOLE, fleet(Kind::Nginx, DrainBy::Admin))
            .await
            .expect("the scenario ended within its safety bound");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_routes_each_session_to_its_node() {
    if balancer_present(Kind::Haproxy) {
        tokio::time::timeout(WHOLE, fleet(Kind::Haproxy, DrainBy::Signal))
            .await
            .expect("the scenario ended within its safety bound");
    }
}

/// `deploy/render.sh`'s output, for fleets of 1, 3 and 17 nodes (17: ids
/// `00` to `10`), routing by no handle parameter, by one, and by two,
/// passes the balancer's own check (`nginx -t`, `haproxy -c`), on top of
/// the scenarios above, which run it.
#[test]
fn rendered_configurations_pass_each_balancers_own_check() {
    for kind in [Kind::Nginx, Kind::Haproxy] {
        let Some(program) = balancer_present(kind).then(|| kind.locate().unwrap()) else {
            continue;
        };
        for (n, params) in [(1u16, ""), (3, "Basket"), (17, "Basket, Shop-Id")] {
            let dir = fleet::WorkDir::new("render-check").expect("a work dir");
            let addrs = (0..n).map(|i| format!("127.0.0.1:{}", 20_000 + i));
            let output = std::process::Command::new("bash")
                .env("MCP_ROUTE_PARAMS", params)
                .arg(fleet::process::repo_root().join("deploy/render.sh"))
                .args([kind.name(), "18080"])
                .args(addrs)
                .output()
                .expect("bash runs render.sh");
            assert!(
                output.status.success(),
                "render.sh {kind} with {n} nodes, params {params:?}: {output:?}"
            );
            let config = dir.path().join("balancer.conf");
            std::fs::write(&config, &output.stdout).expect("the config written");
            let mut check = std::process::Command::new(&program);
            match kind {
                Kind::Nginx => check
                    .arg("-t")
                    .arg("-p")
                    .arg(dir.path())
                    .arg("-c")
                    .arg(&config),
                Kind::Haproxy => check.arg("-c").arg("-f").arg(&config),
            };
            let checked = check.output().expect("the balancer runs");
            assert!(
                checked.status.success(),
                "{kind} rejects its configuration for {n} nodes: {}",
                String::from_utf8_lossy(&checked.stderr)
            );
        }
    }
}

/// Whether `kind` is installed; panics under CI if not.
fn balancer_present(kind: Kind) -> bool {
    match kind.locate() {
        Ok(_) => true,
        Err(message) if std::env::var_os("CI").is_some() => {
            panic!("{message} (.ci/run installs it before the tests)")
        }
        Err(message) => {
            eprintln!(
                "\n\
                 ################################################################\n\
                 ## SKIPPED: the {kind} fleet test. {message}\n\
                 ################################################################\n"
            );
            false
        }
    }
}

/// Starts `n` nodes behind `kind` for one test. The fleet keeps its work
/// directory (configuration, logs) if the test panics, and says where.
fn start(kind: Kind, n: u8) -> Fleet {
    // No session idles out during the test: every end is the test's.
    // No SSE keep-alive comments either: nothing but the event itself
    // can push an event through a balancer that buffers (nginx with
    // proxy_buffering on holds a GET stream's event until more data
    // comes), so buffering makes the test wait for an event that never
    // comes, and fail.
    let flags = [
        "--idle-timeout-ms",
        "600000",
        "--drain-deadline-ms",
        "120000",
        "--keep-alive-ms",
        "0",
    ]
    .map(String::from);
    Fleet::start(kind, usize::from(n), &flags).expect("the fleet starts")
}

/// Node `id`'s metrics.
async fn metrics(fleet: &Fleet, http: &Http, id: u8) -> Metrics {
    fleet.nodes()[usize::from(id)]
        .metrics(http)
        .await
        .expect("metrics")
}

/// Opens `count` sessions through the balancer, each with one tool call.
async fn open_sessions(client: &Client, count: usize) -> Vec<Session> {
    let mut sessions = Vec::new();
    for _ in 0..count {
        let session = client.try_open().await.expect("initialize");
        echo(client, &session).await;
        sessions.push(session);
    }
    sessions
}

async fn echo(client: &Client, session: &Session) {
    let result = client
        .try_call(session, 7, "echo", json!({ "text": "ping" }))
        .await
        .unwrap_or_else(|e| panic!("echo in {session:?}: {e}"));
    assert_eq!(result_text(&result), Some("ping"));
}

/// `future`'s output, or a panic naming `what` if it has not come within
/// [`BOUND`] (a safety net: each of these comes at once when all is well).
async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {BOUND:?}"))
}

/// Creates `count` tasks through the balancer, each a `sleep` of `ms`.
async fn create_tasks(client: &Client, count: usize, ms: u64) -> Vec<Task> {
    let mut tasks = Vec::new();
    for i in 0..count {
        let task = client
            .try_create_task(i as u64, "sleep", json!({ "ms": ms }))
            .await
            .unwrap_or_else(|e| panic!("creating a task: {e}"));
        tasks.push(task);
    }
    tasks
}

/// Sends a quick 2026-07-28 call with no id through the balancer
/// (round-robin): the node that got it, which must be `expected` if given.
async fn modern_echo_lands_on(
    fleet: &Fleet,
    http: &Http,
    client: &Client,
    id: u64,
    expected: Option<u8>,
) -> u8 {
    let count = |all: &[Metrics]| all.iter().map(|m| m.requests).collect::<Vec<_>>();
    let mut before = Vec::new();
    for node in 0..fleet.nodes().len() {
        before.push(metrics(fleet, http, node as u8).await);
    }
    let result = client
        .try_modern_call(60 + id, "echo", json!({ "text": "which node?" }))
        .await
        .unwrap_or_else(|e| panic!("a 2026-07-28 echo: {e}"));
    assert_eq!(result_text(&result), Some("which node?"));
    let mut after = Vec::new();
    for node in 0..fleet.nodes().len() {
        after.push(metrics(fleet, http, node as u8).await);
    }
    let (before, after) = (count(&before), count(&after));
    let landed: Vec<u8> = (0..before.len())
        .filter(|&n| after[n] != before[n])
        .map(|n| n as u8)
        .collect();
    assert_eq!(
        landed.len(),
        1,
        "one request, one node: {before:?} -> {after:?}"
    );
    if let Some(expected) = expected {
        assert_eq!(landed[0], expected, "round-robin goes round in one order");
    }
    landed[0]
}

/// Polls `task` through the balancer while it is working: its state then.
async fn task_end(client: &Client, task: &Task) -> serde_json::Value {
    within("the task's end", async {
        loop {
            let state = client
                .try_task_get(20, task)
                .await
                .unwrap_or_else(|e| panic!("tasks/get of {task:?}: {e}"));
            if state["status"] != "working" {
                return state;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// Polls `task` to its end, which must be a completed `sleep` of `ms`.
async fn completes(client: &Client, task: &Task, ms: u64) {
    let state = task_end(client, task).await;
    assert_eq!(state["status"], "completed", "{task:?}: {state}");
    let slept = format!("slept {ms} ms");
    assert_eq!(
        result_text(&state["result"]),
        Some(slept.as_str()),
        "{state}"
    );
}

/// `tasks/get` of a task its node no longer holds, or never did.
async fn not_found(client: &Client, task: &Task) {
    match client.try_task_get(21, task).await {
        Err(error) if error.is_task_not_found() => {}
        other => panic!("{task:?}: {other:?}, not \"Task not found\""),
    }
}

/// [`calls::tool_result`], which must answer.
async fn tool_result(client: &Client, id: u64, tool: &str, arguments: Value) -> Value {
    calls::tool_result(client, id, tool, arguments)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// Makes baskets through the balancer (round-robin) until each of `nodes`
/// holds one: node -> basket id.
async fn baskets_on(client: &Client, nodes: u8) -> BTreeMap<u8, String> {
    let mut baskets = BTreeMap::new();
    for i in 0..4 * u64::from(nodes) {
        let made = tool_result(client, 80 + i, "basket_create", json!({})).await;
        let id = made["structuredContent"]["basket"]
            .as_str()
            .unwrap_or_else(|| panic!("basket_create: {made}"))
            .to_string();
        let node = Session::new(id.clone()).node().expect("a hex id");
        baskets.entry(node).or_insert(id);
        if baskets.len() == usize::from(nodes) {
            return baskets;
        }
    }
    panic!("round-robin put no basket on some node: {baskets:?}");
}

/// A `confirm` retry of `state` (accepting), sent with `client`.
async fn confirm_retry(client: &Client, id: u64, state: &str) -> Reply {
    calls::confirm_retry(client, id, calls::confirm_arguments("ship", false), state)
        .await
        .expect("an answer")
}

/// Rewrites the fleet's key file, sends SIGHUP to `node`, and waits until
/// it has logged the reload.
async fn reload_keys(fleet: &Fleet, node: u8, keys: &str) {
    fleet::write_key_file(&fleet.key_file(), keys).expect("the key file written");
    let node = &fleet.nodes()[usize::from(node)];
    let reloads = |log: &str| log.matches("request-state keys reloaded").count();
    let before = reloads(&node.log());
    node.reload().expect("SIGHUP");
    within("the key file re-read", async {
        while reloads(&node.log()) == before {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

fn tasks_by_node(tasks: &[Task]) -> BTreeMap<u8, Vec<Task>> {
    let mut map = BTreeMap::<u8, Vec<Task>>::new();
    for task in tasks {
        map.entry(task.node().expect("hex id"))
            .or_default()
            .push(task.clone());
    }
    map
}

fn by_node(sessions: &[Session]) -> BTreeMap<u8, Vec<Session>> {
    let mut map = BTreeMap::<u8, Vec<Session>>::new();
    for session in sessions {
        map.entry(session.node().expect("hex id"))
            .or_default()
            .push(session.clone());
    }
    map
}

async fn fleet(kind: Kind, drain_by: DrainBy) {
    const NODES: u8 = 3;
    const KILLED: u8 = 1;
    const DRAINED: u8 = 2;
    let mut fleet = start(kind, NODES);
    let http = fleet::http();
    let client = fleet.balancer().client(&http, "fleet-test");

    // --- New sessions spread over the nodes; each id names its creator.
    let sessions = open_sessions(&client, 30).await;
    let mut owned = by_node(&sessions);
    for id in 0..NODES {
        let mine = owned.get(&id).map_or(0, Vec::len);
        let metrics = metrics(&fleet, &http, id).await;
        assert_eq!(metrics.node_id, Some(u64::from(id)), "sessionreg_node_id");
        assert_eq!(
            metrics.created, mine as u64,
            "node {id} created the ids with its prefix"
        );
        assert!(
            mine >= 5,
            "round-robin gives each of 3 nodes about 10 of 30 new sessions; node {id} got {mine}: {:?}",
            owned.iter().map(|(n, s)| (n, s.len())).collect::<Vec<_>>()
        );
    }

    // --- Every follow-up reaches its owner: each node counted exactly its
    // own sessions' requests, and no id of another node.
    for session in &sessions {
        echo(&client, session).await;
    }
    for id in 0..NODES {
        let metrics = metrics(&fleet, &http, id).await;
        let mine = owned[&id].len() as u64;
        assert_eq!(
            metrics.requests,
            REQUESTS_PER_SESSION * mine,
            "node {id}: requests"
        );
        assert_eq!(
            metrics.foreign_from(|_| true),
            0,
            "node {id}: another node's ids"
        );
    }

    // --- SSE through the balancer, on a session of each node: a
    // notification on the GET stream, and a POST reply whose first event
    // arrives while the tool still waits for the client (so nothing
    // buffered it).
    for (&id, mine) in &owned {
        let session = &mine[0];
        let mut stream = within("GET stream headers", client.try_open_stream(session))
            .await
            .expect("GET stream");
        let said = client
            .try_call(
                session,
                8,
                "announce",
                json!({ "text": format!("to node {id}") }),
            )
            .await
            .expect("announce");
        assert_eq!(result_text(&said), Some("delivered"));
        let message = stream
            .next_within(BOUND)
            .await
            .expect("an event")
            .expect("open");
        assert_eq!(message["params"]["data"], json!(format!("to node {id}")));
        drop(stream);

        let mut reply = within(
            "hold's SSE headers",
            client.call_streaming(session, 9, "hold", json!({})),
        )
        .await
        .expect("hold answers over SSE");
        let first = reply
            .next_within(BOUND)
            .await
            .expect("an event")
            .expect("open");
        assert_eq!(first["method"], "notifications/message", "{first}");
        client
            .try_call(session, 10, "release", json!({}))
            .await
            .expect("release");
        let done = within("hold's response", reply.response(&json!(9)))
            .await
            .expect("a response");
        assert_eq!(result_text(&done["result"]), Some("released"));
    }

    // --- Tasks, from a 2026-07-28 client (no session): the `tools/call`
    // that creates one names no node and goes round-robin; each
    // `tasks/get` names its task in Mcp-Name and reaches the task's node.
    let tasks = create_tasks(&client, 12, 50).await;
    let tasks_owned = tasks_by_node(&tasks);
    for id in 0..NODES {
        let mine = tasks_owned.get(&id).map_or(0, Vec::len);
        let metrics = metrics(&fleet, &http, id).await;
        assert_eq!(
            metrics.tasks_created, mine as u64,
            "node {id} created the task ids with its prefix"
        );
        assert!(
            mine >= 2,
            "round-robin gives each of 3 nodes about 4 of 12 new tasks; node {id} got {mine}"
        );
    }
    for task in &tasks {
        completes(&client, task, 50).await;
    }
    for id in 0..NODES {
        let metrics = metrics(&fleet, &http, id).await;
        assert_eq!(
            metrics.tasks_ended("completed"),
            tasks_owned[&id].len() as u64,
            "node {id}: its tasks completed"
        );
        assert_eq!(
            metrics.foreign_tasks_from(|_| true),
            0,
            "node {id}: another node's task ids"
        );
    }
    // A task id naming no node of the fleet: any node answers "Task not
    // found".
    not_found(&client, &Task::new(format!("ff{}", "0".repeat(46)))).await;
    // --- Baskets (handles, SEP-2567), from a 2026-07-28 client: each
    // basket_create goes round-robin and mints the id on its node; every
    // call naming the basket carries it in Mcp-Param-Basket (the tools'
    // x-mcp-header), which the balancer routes by. 100 basket_add calls
    // per basket through the balancer all reach it; no node sees another
    // live node's basket.
    let baskets = baskets_on(&client, NODES).await;
    // (One basket after the other: calls that took turns over the baskets
    // in node order would follow the round-robin, and prove nothing.)
    for (node, basket) in &baskets {
        for round in 0..100u64 {
            let item = format!("item {round} of {node}");
            let added = tool_result(
                &client,
                1_000 + round,
                "basket_add",
                json!({ "basket": basket, "item": item }),
            )
            .await;
            assert_eq!(
                result_text(&added),
                Some(format!("{} items", round + 1).as_str()),
                "basket_add {round} to node {node}'s basket: {added}"
            );
        }
    }
    for (node, basket) in &baskets {
        let shown = tool_result(&client, 90, "basket_show", json!({ "basket": basket })).await;
        let items = result_text(&shown).expect("text").split(", ").count();
        assert_eq!(items, 100, "node {node}'s basket");
        let metrics = metrics(&fleet, &http, *node).await;
        assert_eq!(
            metrics.foreign_handles_from(|_| true),
            0,
            "node {node}: calls naming another node's basket"
        );
    }
    // The header is what the balancer reads, and the node checks it
    // against the body: a call without it is refused (the SDK then lists
    // the tools and sends it again, with the header).
    let bare = json!({ "jsonrpc": "2.0", "id": 91, "method": "tools/call", "params": {
        "name": "basket_show", "arguments": { "basket": baskets[&0] },
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientInfo": { "name": "fleet-test", "version": "1" },
                   "io.modelcontextprotocol/clientCapabilities": {} } } });
    let refused = client
        .try_send(client.modern_request(
            bare.to_string(),
            &[("mcp-method", "tools/call"), ("mcp-name", "basket_show")],
        ))
        .await
        .expect("an answer");
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.json()["error"]["code"], -32020, "HeaderMismatch");

    // --- An input-required answer's state, sealed by whichever node got
    // the first round, opens on every node: they share the key file.
    let state = calls::confirm_asked(&client, 95, calls::confirm_arguments("ship", false))
        .await
        .expect("confirm asks for input");
    let direct: Vec<Client> = fleet
        .nodes()
        .iter()
        .map(|node| Client::with_http(http.clone(), &node.url()))
        .collect();
    for (node, to_node) in direct.iter().enumerate() {
        let retry = confirm_retry(to_node, 96, &state).await;
        assert_eq!(
            result_text(&retry.json()["result"]),
            Some("confirmed ship"),
            "the retry on node {node}: {}",
            retry.text()
        );
    }
    // And through the balancer, the way a client sends it (no routing key:
    // any node).
    let retry = confirm_retry(&client, 97, &state).await;
    assert_eq!(result_text(&retry.json()["result"]), Some("confirmed ship"));
    // The file rotated to a new key alone and re-read by node 0 only: the
    // state (sealed with key 1) no longer opens there, and still opens on
    // node 2 (refused states are counted by cause). Then key 1 kept as the
    // previous key: it opens on node 0 again, while key 2 seals.
    let old_key = std::fs::read_to_string(fleet.key_file()).expect("the key file");
    let new_key = format!("2={}\n", fleet::process::random_key().expect("a key"));
    reload_keys(&fleet, 0, &new_key).await;
    let refused = confirm_retry(&direct[0], 98, &state).await;
    assert!(
        refused.json()["error"].is_object(),
        "a state of a dropped key: {}",
        refused.text()
    );
    assert_eq!(
        metrics(&fleet, &http, 0)
            .await
            .states_rejected
            .get("unknown_key"),
        Some(&1)
    );
    let on_two = confirm_retry(&direct[2], 98, &state).await;
    assert_eq!(
        result_text(&on_two.json()["result"]),
        Some("confirmed ship")
    );
    reload_keys(&fleet, 0, &format!("{new_key}{old_key}")).await;
    let again = confirm_retry(&direct[0], 99, &state).await;
    assert_eq!(result_text(&again.json()["result"]), Some("confirmed ship"));
    for id in 0..NODES {
        assert_eq!(
            metrics(&fleet, &http, id).await.states_rejected_total(),
            u64::from(id == 0),
            "node {id}: refused states"
        );
    }

    // (Where the bus work comes in: `confirm` with `once: true`
    // (`calls::confirm_arguments("ship", true)`) seals a single-use state,
    // which today opens only on the node that sealed it (elsewhere:
    // refused, `replayed`) until the record of used states is shared; its
    // test goes here, against `direct`. Listen streams across
    // nodes go beside the baskets above: a listener on one node, a
    // `basket_add` through the balancer to another.)

    // Tasks running across the kill below.
    let spanning = tasks_by_node(&create_tasks(&client, 6, 1_000).await);
    assert!(
        spanning.contains_key(&KILLED),
        "tasks on the node to kill: {spanning:?}"
    );

    // --- Kill a node with a GET stream open and a tool call in flight on
    // it (and the tasks above running on it).
    let victims = owned.remove(&KILLED).expect("sessions on the victim");
    // The next 2026-07-28 request without an id (round-robin) goes to the
    // node to kill: the order of the round-robin, from one quick call on
    // each node, then as many as it takes to come round to the victim.
    let mut order = Vec::new();
    for i in 0..NODES {
        order.push(modern_echo_lands_on(&fleet, &http, &client, u64::from(i), None).await);
    }
    let victim_next = order
        .iter()
        .position(|&id| id == KILLED)
        .unwrap_or_else(|| panic!("round-robin skips node {KILLED}: {order:?}"));
    for &id in &order[..victim_next] {
        modern_echo_lands_on(&fleet, &http, &client, 3, Some(id)).await;
    }
    let before_kill: Vec<Metrics> = {
        let mut all = Vec::new();
        for id in 0..NODES {
            all.push(metrics(&fleet, &http, id).await);
        }
        all
    };
    // (victims[0] had a stream above: the node may not have seen its end yet.)
    let mut stream = within("GET stream headers", client.try_open_stream(&victims[2]))
        .await
        .expect("GET stream");
    let in_flight = {
        let (client, session) = (client.clone(), victims[1].clone());
        tokio::spawn(async move {
            client
                .try_call(&session, 11, "sleep", json!({ "ms": 60_000 }))
                .await
        })
    };
    // And a 2026-07-28 call (no id: round-robin, so the victim's turn, as
    // above), in flight at the kill: a minute long, so it is still running
    // when its node dies, whatever the machine's load.
    let modern_in_flight = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .try_modern_call(40, "sleep", json!({ "ms": 60_000 }))
                .await
        })
    };
    // The stream and both calls have reached the victim.
    let until = tokio::time::Instant::now() + BOUND;
    while metrics(&fleet, &http, KILLED).await.requests
        < before_kill[usize::from(KILLED)].requests + 3
    {
        assert!(
            tokio::time::Instant::now() < until,
            "the stream, the session's call and the 2026-07-28 call (the victim's turn) reached the node"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    fleet.node_mut(KILLED).kill().expect("kill");
    let lost = in_flight.await.expect("task");
    assert!(
        lost.as_ref().is_err_and(Error::is_lost_in_flight),
        "the call in flight at the kill: {lost:?} (502, or a closed connection)"
    );
    match stream.next_within(BOUND).await {
        Ok(None) | Err(_) => {} // ended, or cut
        Ok(Some(message)) => panic!("a message from a dead node: {message}"),
    }
    // The 2026-07-28 call comes back as lost too (502, or a closed
    // connection): not sent on to a survivor, which would run its tool a
    // second time (and answer a minute later).
    let lost = within(
        "the 2026-07-28 call in flight at the kill (an answer after a minute: sent on to a survivor)",
        modern_in_flight,
    )
    .await
    .expect("task");
    assert!(
        lost.as_ref().is_err_and(Error::is_lost_in_flight),
        "the 2026-07-28 call in flight at the kill: {lost:?} (502, or a closed connection)"
    );
    for id in (0..NODES).filter(|&id| id != KILLED) {
        assert_eq!(
            metrics(&fleet, &http, id).await.requests,
            before_kill[usize::from(id)].requests,
            "node {id}: a request sent on from the killed node"
        );
    }
    // Every other request of its sessions: 404 from a survivor, then the
    // client starts a new session there.
    for session in &victims {
        match client
            .try_call(session, 12, "echo", json!({ "text": "?" }))
            .await
        {
            Err(Error::SessionGone) => {}
            other => panic!("a session of the killed node: {other:?}, not 404"),
        }
    }
    match client.try_delete(&victims[0]).await {
        Err(Error::SessionGone) => {}
        other => panic!("DELETE of a session of the killed node: {other:?}, not 404"),
    }
    for _ in &victims {
        let session = client.try_open().await.expect("re-initialize");
        assert_ne!(
            session.node(),
            Some(KILLED),
            "a new session on the dead node"
        );
        echo(&client, &session).await;
        let node = session.node().expect("hex id");
        owned.entry(node).or_default().push(session);
    }
    let mut seen_by_survivors = 0;
    for id in (0..NODES).filter(|&id| id != KILLED) {
        let now = metrics(&fleet, &http, id).await;
        let foreign = |m: &Metrics| m.foreign.get(&KILLED).copied().unwrap_or(0);
        seen_by_survivors += foreign(&now) - foreign(&before_kill[usize::from(id)]);
        assert_eq!(
            now.foreign_from(|o| o != KILLED),
            0,
            "node {id}: ids of a live node other than itself"
        );
    }
    assert_eq!(
        seen_by_survivors,
        victims.len() as u64 + 1,
        "each request with the dead node's ids (calls and a DELETE) went to exactly one survivor"
    );

    // --- The killed node's basket died with it: "no basket", from a
    // survivor (one call, routed to the dead owner's backups). The others
    // still hold their items.
    let gone = tool_result(
        &client,
        92,
        "basket_show",
        json!({ "basket": baskets[&KILLED] }),
    )
    .await;
    assert_eq!(gone["isError"], true, "{gone}");
    assert!(
        result_text(&gone).is_some_and(|t| t.starts_with("no basket")),
        "{gone}"
    );
    let mut baskets_seen_by_survivors = 0;
    for id in (0..NODES).filter(|&id| id != KILLED) {
        let shown = tool_result(
            &client,
            93,
            "basket_show",
            json!({ "basket": baskets[&id] }),
        )
        .await;
        assert_eq!(result_text(&shown).expect("text").split(", ").count(), 100);
        let now = metrics(&fleet, &http, id).await;
        baskets_seen_by_survivors += now.foreign_handles.get(&KILLED).copied().unwrap_or(0);
        assert_eq!(
            now.foreign_handles_from(|o| o < NODES && o != KILLED && o != id),
            0,
            "node {id}: baskets of a live node other than itself"
        );
    }
    assert_eq!(
        baskets_seen_by_survivors, 1,
        "the call naming the dead node's basket went to exactly one survivor"
    );

    // --- The killed node's tasks died with it: "Task not found", from a
    // survivor. The survivors' tasks go on and complete; new tasks go to
    // the survivors only, and a `tasks/cancel` reaches its task's node.
    for task in &spanning[&KILLED] {
        not_found(&client, task).await;
    }
    for task in spanning
        .iter()
        .filter(|(&id, _)| id != KILLED)
        .flat_map(|(_, tasks)| tasks)
    {
        completes(&client, task, 1_000).await;
    }
    let after_kill = create_tasks(&client, 4, 50).await;
    let long = create_tasks(&client, 2, 60_000).await;
    for task in after_kill.iter().chain(&long) {
        assert_ne!(task.node(), Some(KILLED), "a new task on the dead node");
    }
    for task in &after_kill {
        completes(&client, task, 50).await;
    }
    for (i, task) in long.iter().enumerate() {
        client
            .try_modern(
                30 + i as u64,
                "tasks/cancel",
                Some(task.id()),
                json!({ "taskId": task.id() }),
            )
            .await
            .unwrap_or_else(|e| panic!("tasks/cancel of {task:?}: {e}"));
        assert_eq!(task_end(&client, task).await["status"], "cancelled");
    }
    let mut tasks_seen_by_survivors = 0;
    for id in (0..NODES).filter(|&id| id != KILLED) {
        let now = metrics(&fleet, &http, id).await;
        let foreign = |m: &Metrics| m.foreign_tasks.get(&KILLED).copied().unwrap_or(0);
        tasks_seen_by_survivors += foreign(&now) - foreign(&before_kill[usize::from(id)]);
        assert_eq!(
            now.foreign_tasks_from(|o| o < NODES && o != KILLED),
            0,
            "node {id}: task ids of a live node other than itself"
        );
    }
    assert_eq!(
        tasks_seen_by_survivors,
        spanning[&KILLED].len() as u64,
        "each tasks/get of the dead node's tasks went to exactly one survivor"
    );

    // A task of the node about to be drained, running as the drain starts
    // (round-robin alternates between the two live nodes).
    let mut on_drained = None;
    let mut on_survivor = Vec::new();
    for _ in 0..6 {
        let task = create_tasks(&client, 1, 500).await.remove(0);
        if task.node() == Some(DRAINED) {
            on_drained = Some(task);
            break;
        }
        on_survivor.push(task);
    }
    let on_drained = on_drained.expect("a task on the node to drain");

    // --- Drain a node for a rolling restart.
    let drained = owned
        .remove(&DRAINED)
        .expect("sessions on the drained node");
    let node = &fleet.nodes()[usize::from(DRAINED)];
    match drain_by {
        DrainBy::Admin => node.drain(&http).await.expect("POST /drain"),
        DrainBy::Signal => node.drain_by_signal().expect("SIGUSR1"),
    }
    let ready = format!("http://{}/health/ready", node.addr);
    let live = format!("http://{}/health/live", node.addr);
    let until = tokio::time::Instant::now() + BOUND;
    while fetch_text(&http, Method::GET, &ready)
        .await
        .expect("ready")
        .0
        != 503
    {
        assert!(tokio::time::Instant::now() < until, "readiness turned 503");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        fetch_text(&http, Method::GET, &live).await.expect("live").0,
        200
    );
    let created_at_drain = metrics(&fleet, &http, DRAINED).await.created;
    // Its task is still its own: polled to its end there, draining or not.
    completes(&client, &on_drained, 500).await;
    for task in &on_survivor {
        completes(&client, task, 500).await;
    }
    assert_eq!(
        metrics(&fleet, &http, 0)
            .await
            .foreign_tasks_from(|o| o < NODES && o != KILLED),
        0,
        "node 0: the draining node's task ids"
    );
    // No new session goes to it (nor to the dead one).
    let during_drain = open_sessions(&client, 12).await;
    for session in &during_drain {
        assert_eq!(
            session.node(),
            Some(0),
            "a new session while 1 is dead and 2 drains"
        );
    }
    assert_eq!(
        metrics(&fleet, &http, DRAINED).await.created,
        created_at_drain,
        "the draining node created nothing"
    );
    // Its own sessions are served to their end, then it stops.
    for session in &drained {
        echo(&client, session).await;
    }
    for session in &drained {
        client
            .try_delete(session)
            .await
            .expect("DELETE on the draining node");
    }
    let node = fleet.node_mut(DRAINED);
    let status = node.wait_exit(BOUND).await.expect("the drained node stops");
    assert!(status.success(), "the drained node exited with {status}");
    assert_eq!(
        node.output(),
        vec!["stopped sessions_ended=0".to_string()],
        "its sessions all ended before it stopped"
    );
    match client
        .try_call(&drained[0], 13, "echo", json!({ "text": "?" }))
        .await
    {
        Err(Error::SessionGone) => {}
        other => panic!("a session of the stopped node: {other:?}, not 404"),
    }

    // --- An id naming no node of the fleet: any node answers 404.
    let stranger = Session::new(format!("ff{}", "0".repeat(46)));
    match client
        .try_call(&stranger, 14, "echo", json!({ "text": "?" }))
        .await
    {
        Err(Error::SessionGone) => {}
        other => panic!("an id naming no node: {other:?}, not 404"),
    }

    // --- Nothing leaked on the survivor.
    let survivor = owned.remove(&0).expect("sessions on node 0");
    for session in survivor.iter().chain(&during_drain) {
        client.try_delete(session).await.expect("DELETE");
    }
    let last = metrics(&fleet, &http, 0).await;
    assert_eq!(last.live, 0, "live sessions left on node 0");
    assert_eq!(last.tasks_running, 0, "running tasks left on node 0");
    assert_eq!(
        last.created,
        last.terminated_total(),
        "node 0: every session ended"
    );
    assert_eq!(last.terminated.get("deleted"), Some(&last.created));
}

/// A node whose reader took its first line and went away (a supervisor, a
/// bench) still stops cleanly on SIGTERM: its last stdout line meets a
/// closed pipe, which must not turn a clean stop into a panic (exit 101).
#[test]
fn a_node_whose_stdout_reader_left_stops_cleanly() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let binary = fleet::process::server_binary().expect("mcp_server is built");
    let mut command = Command::new(binary);
    command
        .args(["--addr", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut node = fleet::process::Guard::spawn(command, "node").expect("mcp_server starts");
    let mut first = String::new();
    {
        let mut stdout = BufReader::new(node.take_stdout().expect("stdout is piped"));
        stdout.read_line(&mut first).expect("a first line");
        // The reader leaves: the pipe's read end is closed here.
    }
    assert!(first.starts_with("listening on http://"), "{first:?}");
    node.signal(libc::SIGTERM).expect("SIGTERM is sent");
    let until = std::time::Instant::now() + BOUND;
    let status = loop {
        if let Some(status) = node.try_wait().expect("try_wait") {
            break status;
        }
        assert!(std::time::Instant::now() < until, "the node did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{status:?}");
}

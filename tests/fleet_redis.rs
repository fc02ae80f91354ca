//! Three `mcp_server` nodes joined to a real `redis-server` (`--redis-url`)
//! behind a real nginx and behind a real HAProxy, as operators run them:
//!
//! * listeners of the official Python SDK 2.3 (`Client(url)` through the
//!   balancer, `client.listen`: tests/fleet_redis_listen.py) spread over the
//!   nodes hear a basket updated through the balancer on another node;
//! * the nodes share their sealing keys (the fleet's key file): an
//!   input-required single-use retry opens on another node once, and its
//!   replay on a third is refused;
//! * Redis killed midway: every listener's loop ends gracefully (the
//!   server's close, no `SubscriptionLost`), new listens get 503 with
//!   `Retry-After`, tools are still served, a single-use retry gets 503;
//! * Redis restarted: listens work again and hear the other nodes;
//! * the bus keys re-read on SIGHUP: a node alone with a new key is not
//!   heard by the others (its frames dropped, counted), and is once they
//!   hold it too;
//! * a principal's `--rate-limit` holds for the fleet: its calls through
//!   the balancer, spread over the nodes, are allowed its burst in all
//!   (each node alone would allow it), 429 beyond; another principal is
//!   not touched; Redis killed, each node keeps its share (never none,
//!   never all), and Redis back, the fleet decides again;
//! * and a node given `--redis-url` without `--bus-key-file` does not
//!   start (its frames would be anybody's).
//!
//! Needs `nginx`, `haproxy` (`.ci/balancers`), `redis-server` (`.ci/redis`)
//! and Python 3 with `venv` (the SDK is installed into `tests/interop/.venv` from
//! `tests/interop/requirements.txt`, as `tests/interop/run.sh` does, if it is not
//! there). Without them the tests are skipped with a loud message, except
//! under CI (`CI` set), where a missing one fails them. Everything listens
//! on loopback ports picked at run time; every child process is killed when
//! the test ends, however it ends.
#![cfg(feature = "http")]

use fleet::{Fleet, Kind, RedisServer};
use http::{Method, StatusCode};
use mcp_test_client::{fetch_text, result_text, samples, with_meta, Client, Http, SseStream};
use serde_json::json;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

/// A safety net for waits (an event, a state change), never the thing
/// tested.
const BOUND: Duration = Duration::from_secs(30);

/// The whole scenario's safety net.
const WHOLE: Duration = Duration::from_secs(240);

const NODES: u8 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_fleet_on_redis() {
    if let Some(python) = present(Kind::Nginx) {
        tokio::time::timeout(WHOLE, scenario(Kind::Nginx, python))
            .await
            .expect("the scenario ended within its safety bound");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_fleet_on_redis() {
    if let Some(python) = present(Kind::Haproxy) {
        tokio::time::timeout(WHOLE, scenario(Kind::Haproxy, python))
            .await
            .expect("the scenario ended within its safety bound");
    }
}

/// The bus does not start without the fleet's keys: `mcp_server
/// --redis-url` alone exits 2 saying it needs `--bus-key-file`, before it
/// reaches Redis (none listens here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_fleet_holds_a_principals_rate() {
    if present(Kind::Nginx).is_some() {
        tokio::time::timeout(WHOLE, rates(Kind::Nginx))
            .await
            .expect("the scenario ended within its safety bound");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn haproxy_fleet_holds_a_principals_rate() {
    if present(Kind::Haproxy).is_some() {
        tokio::time::timeout(WHOLE, rates(Kind::Haproxy))
            .await
            .expect("the scenario ended within its safety bound");
    }
}

#[test]
fn a_node_on_redis_without_a_bus_key_does_not_start() {
    let binary = fleet::process::server_binary().expect("mcp_server builds");
    let mut child = std::process::Command::new(binary)
        .args([
            "--addr",
            "127.0.0.1:0",
            "--redis-url",
            "redis://127.0.0.1:1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mcp_server runs");
    // A safety bound: a node that started would serve until killed.
    let until = std::time::Instant::now() + BOUND;
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mcp_server started on Redis without a bus key");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("its output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--bus-key-file"), "{stderr}");
    assert!(output.stdout.is_empty(), "it never listened");
}

/// The balancer, redis-server and the Python SDK, if all are there (the
/// SDK's venv made if it is not); panics under CI if one is missing.
fn present(kind: Kind) -> Option<PathBuf> {
    let missing = kind
        .locate()
        .err()
        .or_else(|| RedisServer::locate().err())
        .or_else(|| python_sdk().as_ref().err().cloned());
    match missing {
        None => python_sdk().clone().ok(),
        Some(message) if std::env::var_os("CI").is_some() => {
            panic!("{message} (.ci/run installs it before the tests)")
        }
        Some(message) => {
            eprintln!(
                "\n\
                 ################################################################\n\
                 ## SKIPPED: the {kind} fleet-on-Redis test. {message}\n\
                 ################################################################\n"
            );
            None
        }
    }
}

/// The Python of `tests/interop/.venv` with the SDK of `tests/interop/requirements.txt`,
/// made (once per test run) as `tests/interop/run.sh` makes it, if missing.
fn python_sdk() -> &'static Result<PathBuf, String> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let interop = fleet::process::repo_root().join("tests/interop");
        let venv = interop.join(".venv");
        let python = venv.join("bin/python");
        let has_sdk = |python: &PathBuf| {
            std::process::Command::new(python)
                .args(["-c", "import mcp.client.subscriptions"])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if has_sdk(&python) {
            return Ok(python);
        }
        let run = |command: &mut std::process::Command, what: &str| -> Result<(), String> {
            let output = command
                .output()
                .map_err(|e| format!("{what}: cannot run: {e}"))?;
            if output.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{what} failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                ))
            }
        };
        if !python.is_file() {
            run(
                std::process::Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv),
                "python3 -m venv tests/interop/.venv",
            )?;
        }
        run(
            std::process::Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "-r",
                ])
                .arg(interop.join("requirements.txt"))
                .stdin(Stdio::null()),
            "pip install -r tests/interop/requirements.txt",
        )?;
        if has_sdk(&python) {
            Ok(python)
        } else {
            Err("tests/interop/.venv has no MCP Python SDK after pip install".into())
        }
    })
}

/// Python listeners (tests/fleet_redis_listen.py): the process and its
/// lines.
struct Listeners {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Listeners {
    /// `n` listeners of `uri` through `url`, started one after the other;
    /// returns once all are acknowledged.
    async fn start(python: &PathBuf, url: &str, uri: &str, n: usize) -> Listeners {
        let script = fleet::process::repo_root().join("tests/fleet_redis_listen.py");
        let mut child = Command::new(python)
            .arg(script)
            .args([url, uri, &n.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("python starts");
        let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let mut listeners = Listeners { child, lines };
        for i in 0..n {
            assert_eq!(listeners.line().await, format!("acked {i}"));
        }
        assert_eq!(listeners.line().await, "ready");
        listeners
    }

    /// Its next line.
    async fn line(&mut self) -> String {
        let line = tokio::time::timeout(BOUND, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("the Python listeners said nothing within {BOUND:?}"))
            .expect("its stdout reads")
            .expect("a line, not the end");
        assert!(!line.starts_with("FAIL"), "the Python listeners: {line}");
        line
    }

    /// The next `n` lines, in any order (the listeners run concurrently).
    async fn lines(&mut self, n: usize) -> Vec<String> {
        let mut lines = Vec::new();
        for _ in 0..n {
            lines.push(self.line().await);
        }
        lines.sort();
        lines
    }

    /// Waits for its exit: it must succeed.
    async fn finished(mut self) {
        let status = tokio::time::timeout(BOUND, self.child.wait())
            .await
            .expect("the Python listeners exit")
            .expect("wait");
        assert!(status.success(), "the Python listeners exited {status}");
    }
}

/// A node's samples.
async fn samples_of(fleet: &Fleet, http: &Http, id: u8) -> std::collections::HashMap<String, f64> {
    let url = format!("http://{}/metrics", fleet.nodes()[usize::from(id)].addr);
    let (status, text) = fetch_text(http, Method::GET, &url).await.expect("metrics");
    assert!(status.is_success(), "node {id}: /metrics {status}");
    samples(&text)
}

async fn metric(fleet: &Fleet, http: &Http, id: u8, name: &str) -> f64 {
    samples_of(fleet, http, id)
        .await
        .get(name)
        .copied()
        .unwrap_or(0.0)
}

/// Waits until every node's `sessionreg_bus_up` is `up`.
async fn buses(fleet: &Fleet, http: &Http, up: bool) {
    let want = if up { 1.0 } else { 0.0 };
    let until = tokio::time::Instant::now() + BOUND;
    loop {
        let mut all = true;
        for id in 0..NODES {
            all &= metric(fleet, http, id, "sessionreg_bus_up").await == want;
        }
        if all {
            return;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "every node's sessionreg_bus_up at {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `basket_add` through the balancer, the basket mirrored into
/// `Mcp-Param-Basket` (as the SDK sends it), which the balancer routes to
/// the basket's node by: it must reach the basket the first time.
async fn basket_add(client: &Client, basket: &str, item: &str) {
    let added = fleet::calls::tool_result(
        client,
        100,
        "basket_add",
        json!({ "basket": basket, "item": item }),
    )
    .await
    .expect("basket_add answers");
    assert_ne!(
        added["isError"], true,
        "basket_add reached the basket: {added}"
    );
}

/// A raw `subscriptions/listen` through `client`: its status and headers.
async fn listen_status(client: &Client, uri: &str) -> (StatusCode, http::HeaderMap) {
    let body = with_meta(json!({
        "jsonrpc": "2.0", "id": "raw", "method": "subscriptions/listen",
        "params": { "notifications": { "resourceSubscriptions": [uri] } },
    }));
    let request =
        client.modern_request(body.to_string(), &[("mcp-method", "subscriptions/listen")]);
    let response = client.send_raw(request).await;
    let (status, headers) = (response.status(), response.headers().clone());
    if status == StatusCode::OK {
        let mut stream = SseStream::new(response.into_body());
        let ack = stream
            .next_within(BOUND)
            .await
            .expect("reads")
            .expect("an ack");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    }
    (status, headers)
}

/// `confirm` (a tool that asks for input, single use with `once`), as a
/// 2026-07-28 client that can answer a form elicitation calls it: the
/// first round, or the retry with `state`.
async fn confirm(client: &Client, state: Option<&str>) -> mcp_test_client::Reply {
    let mut body = with_meta(json!({
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": { "name": "confirm", "arguments": { "action": "empty the basket", "once": true } },
    }));
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "elicitation": { "form": {} } });
    if let Some(state) = state {
        body["params"]["requestState"] = json!(state);
        body["params"]["inputResponses"] =
            json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
    }
    client
        .post_modern(
            &body,
            &[("mcp-method", "tools/call"), ("mcp-name", "confirm")],
        )
        .await
}

/// Whether the nodes serve `confirm`.
async fn serves_confirm(client: &Client) -> bool {
    let tools = client
        .try_modern(90, "tools/list", None, json!({}))
        .await
        .expect("tools/list");
    tools["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "confirm"))
}

async fn scenario(kind: Kind, python: PathBuf) {
    let mut redis = RedisServer::start().expect("redis-server starts");
    // No SSE keep-alive comments: nothing but an event may push an event
    // through a balancer that buffers (see tests/fleet.rs).
    let flags = ["--idle-timeout-ms", "600000", "--keep-alive-ms", "0"].map(String::from);
    let fleet =
        Fleet::start_on_bus(kind, usize::from(NODES), &flags, &redis).expect("the fleet starts");
    let http = fleet::http();
    let client = fleet.balancer().client(&http, "fleet-redis-test");
    let direct: Vec<Client> = fleet
        .nodes()
        .iter()
        .map(|node| Client::with_http(http.clone(), &node.url()))
        .collect();
    buses(&fleet, &http, true).await;

    // --- A basket, made through the balancer on one node.
    let made = client
        .try_modern_call(1, "basket_create", json!({}))
        .await
        .expect("basket_create");
    let basket = made["structuredContent"]["basket"]
        .as_str()
        .expect("a basket id")
        .to_string();
    let uri = format!("basket://{basket}");
    let mut owner = None;
    for id in 0..NODES {
        if metric(&fleet, &http, id, "sessionreg_handles_live").await == 1.0 {
            owner = Some(id);
        }
    }
    let owner = owner.expect("one node holds the basket");

    // --- Python listeners through the balancer, spread by its round-robin.
    let mut listeners = Listeners::start(&python, &fleet.balancer().url(), &uri, 3).await;
    let mut on = Vec::new();
    for id in 0..NODES {
        on.push(metric(&fleet, &http, id, "sessionreg_listeners_live").await);
    }
    assert_eq!(on.iter().sum::<f64>(), 3.0, "three listen streams: {on:?}");
    assert!(
        (0..NODES).any(|id| id != owner && on[usize::from(id)] > 0.0),
        "a listener on a node other than the basket's ({owner}): {on:?}"
    );
    let received_before: Vec<f64> = {
        let mut all = Vec::new();
        for id in 0..NODES {
            all.push(metric(&fleet, &http, id, "sessionreg_bus_received_total").await);
        }
        all
    };
    basket_add(&client, &basket, "apples").await;
    let heard = listeners.lines(3).await;
    assert_eq!(
        heard,
        (0..3)
            .map(|i| format!("heard {i} {uri}"))
            .collect::<Vec<_>>(),
        "every listener, on every node, heard the update once"
    );
    assert!(metric(&fleet, &http, owner, "sessionreg_bus_published_total").await >= 1.0);
    for id in (0..NODES).filter(|&id| id != owner) {
        assert!(
            metric(&fleet, &http, id, "sessionreg_bus_received_total").await
                > received_before[usize::from(id)],
            "node {id} received the basket's update through Redis"
        );
    }

    // --- A single-use retry on another node, once.
    assert!(
        serves_confirm(&client).await,
        "mcp_server serves `confirm` (single use with `once`)"
    );
    let asked = confirm(&direct[0], None).await;
    assert_eq!(asked.status, StatusCode::OK, "{:?}", asked.body);
    let state = asked.json()["result"]["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_string();
    let opened = confirm(&direct[1], Some(&state)).await;
    assert_eq!(opened.status, StatusCode::OK, "{:?}", opened.body);
    assert_eq!(
        result_text(&opened.json()["result"]),
        Some("confirmed empty the basket")
    );
    let replayed = confirm(&direct[2], Some(&state)).await;
    assert_eq!(
        replayed.status,
        StatusCode::BAD_REQUEST,
        "{:?}",
        replayed.body
    );
    let replays = "sessionreg_request_state_rejected_total{cause=\"replayed\"}";
    assert_eq!(metric(&fleet, &http, 2, replays).await, 1.0);

    // --- Redis killed midway.
    let published = "sessionreg_bus_published_total";
    let published_before = metric(&fleet, &http, owner, published).await;
    redis.kill().expect("redis-server killed");
    let ended = listeners.lines(3).await;
    assert_eq!(
        ended,
        (0..3).map(|i| format!("ended {i}")).collect::<Vec<_>>(),
        "every listener's loop ended by the server's graceful close"
    );
    assert_eq!(listeners.line().await, "done");
    listeners.finished().await;
    buses(&fleet, &http, false).await;
    let mut unavailable = 0.0;
    for id in 0..NODES {
        unavailable += metric(
            &fleet,
            &http,
            id,
            "sessionreg_listeners_ended_total{reason=\"unavailable\"}",
        )
        .await;
    }
    assert_eq!(unavailable, 3.0, "each listen stream ended as unavailable");
    for _ in 0..NODES {
        let (status, headers) = listen_status(&client, &uri).await;
        assert_eq!(
            status,
            StatusCode::SERVICE_UNAVAILABLE,
            "a listen while Redis is away"
        );
        assert!(
            headers.contains_key("retry-after"),
            "503 says when to retry"
        );
    }
    let echoed = client
        .try_modern_call(2, "echo", json!({ "text": "still serving" }))
        .await
        .expect("tools are served without Redis");
    assert_eq!(result_text(&echoed), Some("still serving"));
    // A tool that publishes is served too: its publication waits in the
    // node's queue (bounded) for the bus.
    basket_add(&client, &basket, "pears").await;
    {
        let asked = confirm(&direct[0], None).await;
        let state = asked.json()["result"]["requestState"]
            .as_str()
            .expect("sealing needs no Redis")
            .to_string();
        let refused = confirm(&direct[1], Some(&state)).await;
        assert_eq!(
            refused.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{:?}",
            refused.body
        );
        assert!(refused.headers.contains_key("retry-after"));
        let cause = "sessionreg_request_state_rejected_total{cause=\"unavailable\"}";
        assert_eq!(metric(&fleet, &http, 1, cause).await, 1.0);
    }

    // --- Redis back: listens work again and hear the other nodes.
    redis.restart().expect("redis-server restarts");
    buses(&fleet, &http, true).await;
    // The publication made while Redis was away goes out first.
    let until = tokio::time::Instant::now() + BOUND;
    while metric(&fleet, &http, owner, published).await < published_before + 1.0 {
        assert!(
            tokio::time::Instant::now() < until,
            "the queued publication went out"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut again = Listeners::start(&python, &fleet.balancer().url(), &uri, 2).await;
    basket_add(&client, &basket, "plums").await;
    assert_eq!(
        again.lines(2).await,
        (0..2)
            .map(|i| format!("heard {i} {uri}"))
            .collect::<Vec<_>>()
    );
    for id in 0..NODES {
        assert_eq!(
            metric(&fleet, &http, id, "sessionreg_bus_reconnects_total").await,
            1.0,
            "node {id} reconnected once"
        );
    }
    drop(again);

    // --- The bus keys, re-read on SIGHUP: the basket's node alone given a
    // new key seals its frames with it, and the others, which do not hold
    // it, drop them (counted); every node given both (the new one sealing),
    // the others hear the basket's node again.
    let old = std::fs::read_to_string(fleet.bus_key_file()).expect("the bus key file");
    let new = format!("2={}\n", fleet::process::random_key().expect("a key"));
    let others: Vec<u8> = (0..NODES).filter(|&id| id != owner).collect();
    reload_bus_keys(&fleet, &[owner], &new).await;
    basket_add(&client, &basket, "figs").await;
    let unknown = "sessionreg_bus_frames_rejected_total{cause=\"unknown_key\"}";
    for &id in &others {
        reaches(&fleet, &http, id, unknown, 1.0).await;
    }
    reload_bus_keys(&fleet, &[0, 1, 2], &format!("{new}{old}")).await;
    let received = "sessionreg_bus_received_total";
    let mut before = Vec::new();
    for &id in &others {
        before.push(metric(&fleet, &http, id, received).await);
    }
    basket_add(&client, &basket, "kiwis").await;
    for (&id, before) in others.iter().zip(before) {
        reaches(&fleet, &http, id, received, before + 1.0).await;
    }
    for id in 0..NODES {
        let forged = "sessionreg_bus_frames_rejected_total{cause=\"unauthenticated\"}";
        assert_eq!(metric(&fleet, &http, id, forged).await, 0.0);
    }
}

/// Rewrites the fleet's bus key file, sends SIGHUP to `nodes`, and waits
/// until each has logged the reload.
async fn reload_bus_keys(fleet: &Fleet, nodes: &[u8], keys: &str) {
    fleet::write_key_file(&fleet.bus_key_file(), keys).expect("the bus key file written");
    let reloads = |log: &str| log.matches("bus keys reloaded").count();
    for &id in nodes {
        let node = &fleet.nodes()[usize::from(id)];
        let before = reloads(&node.log());
        node.reload().expect("SIGHUP");
        let until = tokio::time::Instant::now() + BOUND;
        while reloads(&node.log()) == before {
            assert!(
                tokio::time::Instant::now() < until,
                "node {id} re-read its bus keys"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Waits until node `id`'s `name` is at least `at_least`.
async fn reaches(fleet: &Fleet, http: &Http, id: u8, name: &str, at_least: f64) {
    let until = tokio::time::Instant::now() + BOUND;
    while metric(fleet, http, id, name).await < at_least {
        assert!(
            tokio::time::Instant::now() < until,
            "node {id}: {name} reached {at_least}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Three nodes on Redis behind `kind`, each principal limited to 12 a
/// minute (nothing refills during the scenario).
async fn rates(kind: Kind) {
    let mut redis = RedisServer::start().expect("redis-server starts");
    let flags = [
        "--bearer-token",
        "ada=token-ada",
        "--bearer-token",
        "eve=token-eve",
        "--rate-limit",
        "12/m",
    ]
    .map(String::from);
    let fleet =
        Fleet::start_on_bus(kind, usize::from(NODES), &flags, &redis).expect("the fleet starts");
    let http = fleet::http();
    let through = |who: &str| {
        Client::with_http(http.clone(), &fleet.balancer().url())
            .with_header("authorization", &format!("Bearer token-{who}"))
    };
    buses(&fleet, &http, true).await;
    for id in 0..NODES {
        reaches(&fleet, &http, id, "sessionreg_bus_nodes", f64::from(NODES)).await;
    }

    // --- The fleet allows the limit in all, however the calls spread.
    let (allowed, refused_on) = echoes(&fleet, &http, &through("ada"), 36).await;
    assert_eq!(allowed, 12, "the fleet's limit, not each node's");
    assert!(
        refused_on >= 2,
        "refused on {refused_on} nodes: the calls spread"
    );
    let refused = echo(&through("ada")).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        refused.headers["ratelimit-policy"],
        "\"principal\";q=12;w=60"
    );
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(
        echoes(&fleet, &http, &through("eve"), 3).await.0,
        3,
        "eve is not touched"
    );

    // --- Redis away: each node keeps its share (12 / 3 = 4), never none,
    // never all; said once and counted.
    redis.kill().expect("redis-server killed");
    buses(&fleet, &http, false).await;
    let (allowed, _) = echoes(&fleet, &http, &through("ada"), 36).await;
    assert!(
        (4..=12).contains(&allowed),
        "{allowed} allowed: a share per node that was asked"
    );
    let mut fell_back = 0.0;
    for id in 0..NODES {
        let fallbacks = metric(&fleet, &http, id, "sessionreg_rate_limit_fallbacks_total").await;
        assert!(fallbacks <= 1.0, "node {id}: {fallbacks}");
        fell_back += fallbacks;
    }
    assert!(fell_back >= 1.0);

    // --- Redis back (empty): the fleet decides again.
    redis.restart().expect("redis-server back");
    buses(&fleet, &http, true).await;
    let (allowed, _) = echoes(&fleet, &http, &through("ada"), 36).await;
    assert_eq!(allowed, 12, "the fleet's limit again");
    for id in 0..NODES {
        assert_eq!(
            metric(&fleet, &http, id, "sessionreg_rate_limit_fleet").await,
            1.0
        );
    }
}

/// A 2026-07-28 `echo` through `client`.
async fn echo(client: &Client) -> mcp_test_client::Reply {
    let body = with_meta(json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                 "params": { "name": "echo", "arguments": { "text": "hi" } } }));
    client
        .post_modern(&body, &[("mcp-method", "tools/call"), ("mcp-name", "echo")])
        .await
}

/// `n` echoes through `client`: how many were allowed (the others must be
/// 429), and on how many nodes some were refused (each node's
/// `sessionreg_rate_limited_total` read before and after).
async fn echoes(fleet: &Fleet, http: &Http, client: &Client, n: usize) -> (usize, usize) {
    let name = "sessionreg_rate_limited_total{limit=\"principal\"}";
    let mut before = Vec::new();
    for id in 0..NODES {
        before.push(metric(fleet, http, id, name).await);
    }
    let mut allowed = 0;
    for _ in 0..n {
        let reply = echo(client).await;
        match reply.status {
            StatusCode::OK => allowed += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            status => panic!("{status}: {:?}", reply.body),
        }
    }
    let mut refused_on = 0;
    for id in 0..NODES {
        if metric(fleet, http, id, name).await > before[usize::from(id)] {
            refused_on += 1;
        }
    }
    (allowed, refused_on)
}

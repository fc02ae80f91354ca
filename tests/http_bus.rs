//! The fleet's bus on a real `redis-server` (feature `redis`), with three
//! nodes in one process (three managers, each with its own publisher and
//! bus, served on loopback sockets) and their clients over real sockets:
//! a publication reaches the matching listeners of every node once, its
//! audience deciding on every node; a single-use `requestState` opens on
//! any node once; Redis killed midway ends every listen stream gracefully,
//! refuses new listens and single-use retries with 503 (counted) while
//! tools are served on; Redis back (empty, as one without persistence comes
//! back), listens work again, and no state sealed before it lost its keys
//! opens (one of them was used), while one sealed after opens once; Redis
//! flushed, or restarted from a snapshot older than a state's use, that
//! state is refused at once, by the step that would record it. Frames are
//! sealed under the fleet's bus keys: one forged by another client of the
//! Redis, sealed under other keys, or recorded and published again reaches
//! no listener and is counted; keys rotate node by node. A principal's rate
//! limit holds for the fleet (two nodes on one Redis allow it its burst in
//! all), and while Redis is away each node keeps its share, never none and
//! never all.
//!
//! Needs `redis-server` (Debian's package; `.ci/redis` installs it).
//! Without it the tests are skipped with a loud message, except under CI
//! (`CI` set), where a missing one fails them.
#![cfg(feature = "redis")]

mod http_support;

use fleet::RedisServer;
use http::StatusCode;
use http_support::{serve_manager, with_meta, Answer, Client};
use mcp_test_client::{eventually, SseStream};
use serde_json::{json, Value};
use sessionreg::http::jsonrpc::{self, Message, RpcError};
use sessionreg::http::modern::{InputRequests, RequestStateKeys, StateRejection};
use sessionreg::http::{
    App, Audience, BearerTokens, BusKeys, Context, HandlerError, Principal, Publisher, Rate,
    RedisBus, Reply, SessionManager,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

/// `echo`, and `confirm {n}`: asks for a confirmation with a single-use
/// state `"asked n"`, and says what its state was on the retry.
#[derive(Default)]
struct Tools {
    opened: AtomicUsize,
}

impl App for Tools {
    type Session = ();

    fn open(&self, _: &jsonrpc::Request, _: &http::request::Parts) -> Result<(), RpcError> {
        Ok(())
    }

    async fn handle(&self, ctx: Context<()>, message: Message) -> Result<Reply, HandlerError> {
        let Message::Request(request) = message else {
            return Ok(Reply::Accepted);
        };
        let params = request.params_value().unwrap_or(Value::Null);
        let text =
            |text: String| Reply::Result(json!({ "content": [{ "type": "text", "text": text }] }));
        let Some(modern) = ctx.modern() else {
            return Ok(Reply::Error(RpcError::invalid_params("2026-07-28 only")));
        };
        Ok(match params["name"].as_str() {
            Some("echo") => text(params["arguments"]["text"].as_str().unwrap_or("").into()),
            Some("confirm") => match (modern.request_state(), modern.input_response("ok")) {
                (Some(state), Some(_)) => {
                    self.opened.fetch_add(1, Ordering::SeqCst);
                    text(format!("opened {}", String::from_utf8_lossy(state)))
                }
                _ => {
                    let n = &params["arguments"]["n"];
                    let asked = InputRequests::new()
                        .elicit("ok", "Sure?", json!({ "type": "object", "properties": {} }))
                        .request_state(format!("asked {n}").into_bytes())
                        .single_use();
                    match modern.input_required(asked) {
                        Ok(asked) => Reply::InputRequired(asked),
                        Err(error) => Reply::Error(error),
                    }
                }
            },
            _ => Reply::Error(RpcError::method_not_found("no such tool")),
        })
    }
}

/// One node: its manager, publisher and bus, served on loopback.
struct Node {
    url: String,
    manager: SessionManager<Tools>,
    publisher: Publisher,
    bus: RedisBus,
}

impl Node {
    /// A node on `redis`, sealing states with `keys` and frames with
    /// `bus_keys` (both shared by the fleet), whose requests carry the
    /// principal of their bearer token (`ada`, `eve`). Its link is checked
    /// every `heartbeat` (a connection that closes is noticed at once,
    /// whatever it is).
    async fn start(
        redis: &RedisServer,
        keys: &RequestStateKeys,
        bus_keys: BusKeys,
        heartbeat: Duration,
    ) -> Node {
        Node::limited(redis, keys, bus_keys, heartbeat, None).await
    }

    /// [`Node::start`], each principal limited to `rate` (if any).
    async fn limited(
        redis: &RedisServer,
        keys: &RequestStateKeys,
        bus_keys: BusKeys,
        heartbeat: Duration,
        rate: Option<Rate>,
    ) -> Node {
        let publisher = Publisher::new();
        let bus = RedisBus::builder(redis.url())
            .keys(bus_keys)
            // Quick to notice and to come back: the test waits for both.
            .backoff(Duration::from_millis(20), Duration::from_millis(200))
            .heartbeat(heartbeat)
            .start(&publisher)
            .expect("the bus starts");
        let tokens = BearerTokens::new(
            [("ada", "token-ada"), ("eve", "token-eve")]
                .map(|(n, t)| (n.to_string(), t.to_string())),
        )
        .unwrap();
        let manager = SessionManager::builder(Tools::default())
            .authenticator(tokens)
            .request_state_keys(keys.clone())
            .bus(bus.clone())
            .rate_limit(rate)
            .build()
            .expect("the manager builds");
        let url = serve_manager(&manager).await;
        Node {
            url,
            manager,
            publisher,
            bus,
        }
    }

    fn client(&self, who: &str) -> Client {
        Client::with_bearer(&self.url, &format!("token-{who}"))
    }

    /// The node's metrics, by sample name (labels included).
    fn metrics(&self) -> HashMap<String, f64> {
        self.manager
            .metrics()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.rsplit_once(' '))
            .filter_map(|(name, value)| Some((name.to_string(), value.parse().ok()?)))
            .collect()
    }

    fn metric(&self, name: &str) -> f64 {
        self.metrics().get(name).copied().unwrap_or(0.0)
    }

    fn rejected(&self, cause: StateRejection) -> u64 {
        self.manager.http_stats().request_states_rejected(cause)
    }
}

/// Whether `redis-server` is installed; panics under CI if not.
fn redis_present() -> bool {
    match RedisServer::locate() {
        Ok(_) => true,
        Err(message) if std::env::var_os("CI").is_some() => {
            panic!("{message} (.ci/run installs it before the tests)")
        }
        Err(message) => {
            eprintln!(
                "\n\
                 ################################################################\n\
                 ## SKIPPED: the fleet bus test. {message}\n\
                 ################################################################\n"
            );
            false
        }
    }
}

/// Redis and three nodes on it, their buses up.
async fn fleet() -> (RedisServer, Vec<Node>) {
    fleet_with(Duration::from_millis(200)).await
}

/// [`fleet`], each node's link checked every `heartbeat`.
async fn fleet_with(heartbeat: Duration) -> (RedisServer, Vec<Node>) {
    let redis = RedisServer::start().expect("redis-server starts");
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(Node::start(&redis, &state_keys(), fleet_keys(), heartbeat).await);
    }
    all_up(&nodes, true).await;
    (redis, nodes)
}

/// The fleet's `requestState` keys.
fn state_keys() -> RequestStateKeys {
    RequestStateKeys::new(1, [7; 32])
}

/// The fleet's bus keys.
fn fleet_keys() -> BusKeys {
    BusKeys::new(1, [9; 32])
}

/// The count of frames a node dropped for `cause`.
fn rejected_frames(node: &Node, cause: &str) -> f64 {
    node.metric(&format!(
        "sessionreg_bus_frames_rejected_total{{cause=\"{cause}\"}}"
    ))
}

/// The fleet's channel (the default namespace's).
const CHANNEL: &str = "sessionreg:publications";

/// Another client of the same Redis, as any program with its address (and
/// password, if it has one) can be: not a node, holding no key.
fn outsider(redis: &RedisServer) -> redis::Connection {
    redis::Client::open(redis.url())
        .and_then(|client| client.get_connection())
        .expect("a plain Redis client connects")
}

/// `command` on `connection`, its answer as text (`OK`, a count, a bulk).
fn run(connection: &mut redis::Connection, command: &mut redis::Cmd) -> redis::Value {
    command.query(connection).expect("Redis answers")
}

/// Waits until every node's bus is `up` (or down).
async fn all_up(nodes: &[Node], up: bool) {
    assert!(
        eventually(|| nodes.iter().all(|n| n.bus.is_up() == up)).await,
        "every bus {}",
        if up { "up" } else { "down" }
    );
}

/// Opens a listen stream for `uris`: its status, the stream when 200 (its
/// acknowledgement read), the response's headers.
async fn listen(
    client: &Client,
    id: &str,
    uris: &[&str],
) -> (StatusCode, Option<SseStream>, http::HeaderMap) {
    let body = with_meta(json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "subscriptions/listen",
        "params": { "notifications": { "resourceSubscriptions": uris } },
    }));
    let request =
        client.modern_request(body.to_string(), &[("mcp-method", "subscriptions/listen")]);
    let response = client.send_raw(request).await;
    let status = response.status();
    let headers = response.headers().clone();
    if status != StatusCode::OK {
        return (status, None, headers);
    }
    let mut stream = SseStream::new(response.into_body());
    let ack = next(&mut stream).await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    (status, Some(stream), headers)
}

/// The next message of a stream (a safety bound against one that never
/// delivers, not a measure).
async fn next(stream: &mut SseStream) -> Option<Value> {
    stream
        .next_within(Duration::from_secs(10))
        .await
        .expect("the stream reads")
}

/// The next message is the update of `uri`, stamped with `id`.
async fn hears(stream: &mut SseStream, id: &str, uri: &str) {
    let message = next(stream).await.expect("an update, not the end");
    assert_eq!(
        message["method"], "notifications/resources/updated",
        "{message}"
    );
    assert_eq!(message["params"]["uri"], uri, "{message}");
    assert_eq!(message["params"]["_meta"][SUBSCRIPTION], id);
}

/// A 2026-07-28 `tools/call`, with `retry` merged into its params.
async fn call(client: &Client, tool: &str, arguments: Value, retry: Value) -> Answer {
    let mut body = with_meta(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                     "params": { "name": tool, "arguments": arguments } }));
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({ "elicitation": {} });
    if let Value::Object(retry) = retry {
        for (key, value) in retry {
            body["params"][key] = value;
        }
    }
    client
        .post_modern(&body, &[("mcp-method", "tools/call"), ("mcp-name", tool)])
        .await
}

/// `confirm {n}`'s first round: its sealed single-use state.
async fn ask(client: &Client, n: u64) -> String {
    let answer = call(client, "confirm", json!({ "n": n }), json!(null)).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let result = &answer.json()["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    result["requestState"]
        .as_str()
        .expect("a state")
        .to_string()
}

/// `confirm {n}`'s retry with `state`.
async fn retry(client: &Client, n: u64, state: &str) -> Answer {
    let retry = json!({ "inputResponses": { "ok": { "action": "accept", "content": {} } },
                        "requestState": state });
    call(client, "confirm", json!({ "n": n }), retry).await
}

fn assert_opened(answer: &Answer, n: u64) {
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    let result = &answer.json()["result"];
    assert_eq!(
        result["content"][0]["text"],
        format!("opened asked {n}"),
        "{result}"
    );
}

fn assert_invalid(answer: &Answer) {
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{:?}", answer.body);
    assert_eq!(answer.json()["error"]["message"], "Invalid requestState");
}

/// A 503 with `Retry-After`.
fn assert_unavailable(status: StatusCode, headers: &http::HeaderMap, what: &str) {
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{what}");
    assert!(
        headers.contains_key("retry-after"),
        "{what}: no Retry-After"
    );
}

/// A publication made on one node reaches the matching listeners of every
/// node exactly once (its own node's at once, the others' through Redis),
/// and only those its audience admits, on every node: the audience travels
/// with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publication_reaches_every_nodes_listeners_once_and_only_its_audience() {
    if !redis_present() {
        return;
    }
    let (_redis, nodes) = fleet().await;
    let (private, public) = ("basket://00ab", "basket://00ef");
    // Ada listens on every node; Eve on the third.
    let mut ada = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let id = format!("ada-{i}");
        let (status, stream, _) = listen(&node.client("ada"), &id, &[private, public]).await;
        assert_eq!(status, StatusCode::OK);
        ada.push(stream.unwrap());
    }
    let (_, eve, _) = listen(&nodes[2].client("eve"), "eve-2", &[private, public]).await;
    let mut eve = eve.unwrap();
    // Ada's basket changes on node 0: only Ada may hear of it. Then a
    // public resource changes there, which everyone may hear: the next
    // thing each stream says after the first.
    nodes[0]
        .publisher
        .resource_updated(private, Audience::principal(Principal::new("ada")));
    nodes[0]
        .publisher
        .resource_updated(public, Audience::Everyone);
    for (i, stream) in ada.iter_mut().enumerate() {
        let id = format!("ada-{i}");
        hears(stream, &id, private).await;
        // Not its own echo a second time: the public one comes next.
        hears(stream, &id, public).await;
    }
    // Eve hears the public one only (the first would have come first).
    hears(&mut eve, "eve-2", public).await;
    // From another node: a kind nobody listens to, then the public one.
    nodes[1].publisher.tools_changed();
    nodes[1]
        .publisher
        .resource_updated(public, Audience::Everyone);
    for (i, stream) in ada.iter_mut().enumerate() {
        hears(stream, &format!("ada-{i}"), public).await;
    }
    hears(&mut eve, "eve-2", public).await;
    // Each publication counted once where it was made, and once as
    // received on each of the two other nodes; none dropped.
    let (published, received) = (
        "sessionreg_bus_published_total",
        "sessionreg_bus_received_total",
    );
    assert!(
        eventually(|| nodes[0].metric(published) == 2.0 && nodes[1].metric(published) == 2.0).await
    );
    assert_eq!(nodes[0].metric(received), 2.0);
    assert_eq!(nodes[1].metric(received), 2.0);
    assert_eq!(nodes[2].metric(received), 4.0);
    for node in &nodes {
        assert_eq!(node.metric("sessionreg_bus_up"), 1.0);
        assert_eq!(node.metric("sessionreg_bus_dropped_total"), 0.0);
        assert_eq!(node.metric("sessionreg_bus_reconnects_total"), 0.0);
    }
}

/// An input-required single-use state sealed on one node opens on another,
/// once; its replay on a third is refused (`replayed`), and so is one on
/// the node that sealed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_use_state_opens_on_any_node_once() {
    if !redis_present() {
        return;
    }
    let (_redis, nodes) = fleet().await;
    let state = ask(&nodes[0].client("ada"), 1).await;
    assert_eq!(
        nodes[0].manager.http_stats().request_states_unused,
        0,
        "sealed for the fleet's record: nothing kept on the node"
    );
    assert_opened(&retry(&nodes[1].client("ada"), 1, &state).await, 1);
    assert_invalid(&retry(&nodes[2].client("ada"), 1, &state).await);
    assert_invalid(&retry(&nodes[0].client("ada"), 1, &state).await);
    assert_eq!(nodes[2].rejected(StateRejection::Replayed), 1);
    assert_eq!(nodes[0].rejected(StateRejection::Replayed), 1);
    let opened: usize = nodes
        .iter()
        .map(|n| n.manager.app().opened.load(Ordering::SeqCst))
        .sum();
    assert_eq!(opened, 1, "the application saw the state once");
    // Ten retries of one state at once, spread over the nodes: one opens.
    let state = ask(&nodes[1].client("ada"), 2).await;
    let mut racing = Vec::new();
    for i in 0..10 {
        let client = nodes[i % 3].client("ada");
        let state = state.clone();
        racing.push(tokio::spawn(async move { retry(&client, 2, &state).await }));
    }
    let mut ok = 0;
    for race in racing {
        let answer = race.await.unwrap();
        match answer.status {
            StatusCode::OK => ok += 1,
            _ => assert_invalid(&answer),
        }
    }
    assert_eq!(ok, 1, "of ten racing retries of one state, one opened");
}

/// Redis killed midway: every node ends its listen streams gracefully
/// (each with the listen request's result: the client re-listens and
/// refetches), answers new listens and single-use retries 503 with
/// `Retry-After` (the retry counted as `unavailable`), and serves its tools
/// on. Redis back, empty: listens work again and hear other nodes; a state
/// sealed before Redis lost its keys is refused (`expired`), the one used
/// then and the one refused while it was away alike, since the new Redis
/// cannot tell them apart; one sealed now opens once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_away_and_back() {
    if !redis_present() {
        return;
    }
    let (mut redis, nodes) = fleet().await;
    let uri = "basket://00cd";
    let (_, stream, _) = listen(&nodes[1].client("ada"), "before", &[uri]).await;
    let mut before = stream.unwrap();
    let used = ask(&nodes[0].client("ada"), 3).await;
    assert_opened(&retry(&nodes[2].client("ada"), 3, &used).await, 3);
    let waiting = ask(&nodes[0].client("ada"), 4).await;

    redis.kill().expect("redis-server killed");
    // The listener gets the listen request's result, then the stream ends.
    let end = next(&mut before).await.expect("the graceful close");
    assert_eq!(end["id"], "before", "{end}");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(next(&mut before).await, None);
    all_up(&nodes, false).await;
    assert_eq!(
        nodes[1].metric("sessionreg_listeners_ended_total{reason=\"unavailable\"}"),
        1.0
    );
    for node in &nodes {
        assert_eq!(node.metric("sessionreg_bus_up"), 0.0);
        let (status, _, headers) = listen(&node.client("ada"), "during", &[uri]).await;
        assert_unavailable(status, &headers, "a listen while Redis is away");
        let echo = call(
            &node.client("ada"),
            "echo",
            json!({ "text": "still here" }),
            json!(null),
        )
        .await;
        assert_eq!(
            echo.status,
            StatusCode::OK,
            "tools are served without Redis"
        );
        assert_eq!(echo.json()["result"]["content"][0]["text"], "still here");
    }
    let refused = retry(&nodes[1].client("ada"), 4, &waiting).await;
    assert_unavailable(refused.status, &refused.headers, "a single-use retry");
    assert_eq!(nodes[1].rejected(StateRejection::Unavailable), 1);

    redis.restart().expect("redis-server back");
    all_up(&nodes, true).await;
    // Listens work again, and hear the other nodes.
    let (status, stream, _) = listen(&nodes[1].client("ada"), "after", &[uri]).await;
    assert_eq!(status, StatusCode::OK);
    let mut after = stream.unwrap();
    nodes[0].publisher.resource_updated(uri, Audience::Everyone);
    hears(&mut after, "after", uri).await;
    // Sealed before Redis lost its keys: whether it was used, the new Redis
    // cannot tell; neither opens (the waiting one was never used, but the
    // used one must not open again).
    assert_invalid(&retry(&nodes[1].client("ada"), 3, &used).await);
    assert_invalid(&retry(&nodes[1].client("ada"), 4, &waiting).await);
    assert_eq!(nodes[1].rejected(StateRejection::Expired), 2);
    // A state sealed now opens once.
    let fresh = ask(&nodes[2].client("ada"), 5).await;
    assert_opened(&retry(&nodes[0].client("ada"), 5, &fresh).await, 5);
    assert_invalid(&retry(&nodes[1].client("ada"), 5, &fresh).await);
    for node in &nodes {
        assert_eq!(node.metric("sessionreg_bus_reconnects_total"), 1.0);
        assert_eq!(node.metric("sessionreg_bus_up"), 1.0);
        assert_eq!(node.metric("sessionreg_bus_record_resets_total"), 1.0);
    }
}

/// A `FLUSHALL` takes the record of used states with it: a state used
/// before is refused at once (`expired`), by the same step that would have
/// recorded it, however long until the next heartbeat (here: one an hour);
/// the node that saw it takes the record's new epoch, and a state sealed
/// then opens once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_refuses_a_used_state_at_once() {
    if !redis_present() {
        return;
    }
    let (redis, nodes) = fleet_with(Duration::from_secs(3600)).await;
    let used = ask(&nodes[0].client("ada"), 1).await;
    assert_opened(&retry(&nodes[1].client("ada"), 1, &used).await, 1);
    let flushed = run(&mut outsider(&redis), &mut redis::cmd("FLUSHALL"));
    assert_eq!(flushed, redis::Value::Okay);
    // At once: no heartbeat has run since.
    assert_invalid(&retry(&nodes[2].client("ada"), 1, &used).await);
    assert_eq!(nodes[2].rejected(StateRejection::Expired), 1);
    let opened: usize = nodes
        .iter()
        .map(|n| n.manager.app().opened.load(Ordering::SeqCst))
        .sum();
    assert_eq!(opened, 1, "the application saw the state once");
    // The node that refused it took the record's new epoch (said once).
    let resets = "sessionreg_bus_record_resets_total";
    assert!(eventually(|| nodes[2].metric(resets) == 1.0).await);
    let fresh = ask(&nodes[2].client("ada"), 2).await;
    assert_opened(&retry(&nodes[0].client("ada"), 2, &fresh).await, 2);
    assert_invalid(&retry(&nodes[1].client("ada"), 2, &fresh).await);
    assert_eq!(nodes[1].rejected(StateRejection::Replayed), 1);
}

/// Redis restarted from a snapshot taken before a state was used (`SAVE`,
/// the state used, `kill -9`, started again on the same directory): the
/// snapshot brings the record's epoch back but not the used state's key.
/// The epoch follows the instance (its `run_id`), so the state is refused
/// (`expired`), and each node says once that the record changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_from_a_snapshot_refuses_a_state_used_after_it() {
    if !redis_present() {
        return;
    }
    let (mut redis, nodes) = fleet().await;
    let used = ask(&nodes[0].client("ada"), 1).await;
    let saved = run(&mut outsider(&redis), &mut redis::cmd("SAVE"));
    assert_eq!(saved, redis::Value::Okay);
    assert_opened(&retry(&nodes[1].client("ada"), 1, &used).await, 1);
    redis.kill().expect("redis-server killed");
    all_up(&nodes, false).await;
    redis
        .restart()
        .expect("redis-server back, from its snapshot");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("sessionreg:*")
        .query(&mut outsider(&redis))
        .expect("KEYS");
    assert!(
        !keys.is_empty() && keys.iter().all(|k| !k.starts_with("sessionreg:used:")),
        "the snapshot holds the record's epoch, not the used state: {keys:?}"
    );
    all_up(&nodes, true).await;
    assert_invalid(&retry(&nodes[2].client("ada"), 1, &used).await);
    assert_eq!(nodes[2].rejected(StateRejection::Expired), 1);
    let opened: usize = nodes
        .iter()
        .map(|n| n.manager.app().opened.load(Ordering::SeqCst))
        .sum();
    assert_eq!(opened, 1, "the application saw the state once");
    for node in &nodes {
        assert_eq!(node.metric("sessionreg_bus_record_resets_total"), 1.0);
    }
}

/// A `resources/updated` frame forged by another client of the same Redis
/// (it can `PUBLISH` on the channel: the frame's old, unsealed shape,
/// naming Ada as its audience), or sealed by a bus of its own under
/// another key (of the fleet's key id, or of another), reaches no listener
/// on any node, and each node counts it by cause; the fleet's own
/// publication after them is heard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_update_reaches_no_listener_and_is_counted() {
    if !redis_present() {
        return;
    }
    let (redis, nodes) = fleet().await;
    let (forged, real) = ("basket://00ab", "basket://00ef");
    let (_, stream, _) = listen(&nodes[1].client("ada"), "ada", &[forged, real]).await;
    let mut ada = stream.unwrap();
    let frame = json!({
        "origin": "0123456789abcdef",
        "publication": {
            "change": { "kind": "resource_updated", "uri": forged },
            "audience": { "audience": "principals", "principals": ["ada"] },
        },
    });
    let receivers = run(
        &mut outsider(&redis),
        redis::cmd("PUBLISH").arg(CHANNEL).arg(frame.to_string()),
    );
    assert_eq!(receivers, redis::Value::Int(3), "every node subscribed");
    // Buses of their own on the same Redis, under keys not the fleet's.
    for (strangers, cause) in [
        (BusKeys::new(1, [6; 32]), "unauthenticated"),
        (BusKeys::new(42, [9; 32]), "unknown_key"),
    ] {
        let mallory = Node::start(&redis, &state_keys(), strangers, Duration::from_secs(1)).await;
        all_up(std::slice::from_ref(&mallory), true).await;
        mallory
            .publisher
            .resource_updated(forged, Audience::principal(Principal::new("ada")));
        assert!(
            eventually(|| nodes.iter().all(|n| rejected_frames(n, cause) == 1.0)).await,
            "every node dropped mallory's frame ({cause})"
        );
    }
    for node in &nodes {
        assert_eq!(rejected_frames(node, "malformed"), 1.0);
    }
    nodes[0]
        .publisher
        .resource_updated(real, Audience::Everyone);
    // The forged ones would have come first.
    hears(&mut ada, "ada", real).await;
    assert_eq!(nodes[1].metric("sessionreg_bus_received_total"), 1.0);
}

/// A forged "lost" frame (which tells every node to end its listen
/// streams) ends none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_lost_frame_ends_no_stream() {
    if !redis_present() {
        return;
    }
    let (redis, nodes) = fleet().await;
    let uri = "basket://00ab";
    let (_, stream, _) = listen(&nodes[1].client("ada"), "ada", &[uri]).await;
    let mut ada = stream.unwrap();
    let frame = json!({ "origin": "0123456789abcdef", "lost": true });
    run(
        &mut outsider(&redis),
        redis::cmd("PUBLISH").arg(CHANNEL).arg(frame.to_string()),
    );
    nodes[0].publisher.resource_updated(uri, Audience::Everyone);
    // Not the listen request's result: the stream goes on.
    hears(&mut ada, "ada", uri).await;
    for node in &nodes {
        assert_eq!(
            node.metric("sessionreg_listeners_ended_total{reason=\"unavailable\"}"),
            0.0
        );
    }
    let malformed = "sessionreg_bus_frames_rejected_total{cause=\"malformed\"}";
    assert!(eventually(|| nodes.iter().all(|n| n.metric(malformed) == 1.0)).await);
}

/// A frame of the fleet's, recorded by another client of the same Redis
/// and published again: the nodes that heard it hear it once
/// (`replayed`, counted); the next real one is heard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_frame_is_heard_once() {
    if !redis_present() {
        return;
    }
    let (redis, nodes) = fleet().await;
    let (first, second) = ("basket://00ab", "basket://00ef");
    let (_, stream, _) = listen(&nodes[1].client("ada"), "ada", &[first, second]).await;
    let mut ada = stream.unwrap();
    let mut recorder = outsider(&redis);
    let mut pubsub = recorder.as_pubsub();
    pubsub.subscribe(CHANNEL).expect("SUBSCRIBE");
    nodes[0]
        .publisher
        .resource_updated(first, Audience::Everyone);
    hears(&mut ada, "ada", first).await;
    pubsub
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let recorded: Vec<u8> = pubsub
        .get_message()
        .expect("the frame, recorded")
        .get_payload()
        .expect("bytes");
    drop(pubsub);
    // Opaque on the wire: neither the URI nor the audience shows.
    let text = String::from_utf8_lossy(&recorded);
    assert!(
        !text.contains("basket") && !text.contains("everyone"),
        "{text}"
    );
    run(
        &mut outsider(&redis),
        redis::cmd("PUBLISH").arg(CHANNEL).arg(recorded),
    );
    nodes[0]
        .publisher
        .resource_updated(second, Audience::Everyone);
    // Not the first one again.
    hears(&mut ada, "ada", second).await;
    let replayed = "sessionreg_bus_frames_rejected_total{cause=\"replayed\"}";
    assert!(
        eventually(|| nodes[1].metric(replayed) == 1.0 && nodes[2].metric(replayed) == 1.0).await
    );
    assert_eq!(nodes[1].metric("sessionreg_bus_received_total"), 2.0);
}

/// A rotation of the bus keys, node by node: node A seals with the new
/// key (and still opens the old), node B with the old (and opens the new):
/// each hears the other. Node C, holding the old key only, does not hear
/// A (`unknown_key`, counted) but hears B; given the new key at run time,
/// it hears A's next publication.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_keeps_the_nodes_hearing_each_other() {
    if !redis_present() {
        return;
    }
    let redis = RedisServer::start().expect("redis-server starts");
    let (old, new) = ([1; 32], [2; 32]);
    let both_new_first = || BusKeys::new(1, old).rotated(2, new, 2);
    let both_old_first = BusKeys::new(2, new).rotated(1, old, 2);
    let heartbeat = Duration::from_millis(200);
    let a = Node::start(&redis, &state_keys(), both_new_first(), heartbeat).await;
    let b = Node::start(&redis, &state_keys(), both_old_first, heartbeat).await;
    let c = Node::start(&redis, &state_keys(), BusKeys::new(1, old), heartbeat).await;
    let nodes = [a, b, c];
    all_up(&nodes, true).await;
    let uris = ["basket://0001", "basket://0002", "basket://0003"];
    let mut streams = Vec::new();
    for (node, id) in nodes.iter().zip(["a", "b", "c"]) {
        let (_, stream, _) = listen(&node.client("ada"), id, &uris).await;
        streams.push(stream.unwrap());
    }
    let [a, b, c] = &nodes;
    a.publisher.resource_updated(uris[0], Audience::Everyone);
    hears(&mut streams[0], "a", uris[0]).await;
    hears(&mut streams[1], "b", uris[0]).await;
    assert!(eventually(|| rejected_frames(c, "unknown_key") == 1.0).await);
    b.publisher.resource_updated(uris[1], Audience::Everyone);
    for (stream, id) in streams.iter_mut().zip(["a", "b", "c"]) {
        // For C, the first it hears: A's never came.
        hears(stream, id, uris[1]).await;
    }
    c.bus.set_keys(both_new_first());
    a.publisher.resource_updated(uris[2], Audience::Everyone);
    for (stream, id) in streams.iter_mut().zip(["a", "b", "c"]) {
        hears(stream, id, uris[2]).await;
    }
    assert_eq!(rejected_frames(c, "unknown_key"), 1.0);
    for node in &nodes {
        assert_eq!(rejected_frames(node, "unauthenticated"), 0.0);
    }
}

/// Two nodes on one Redis, each principal limited to 10 a minute (nothing
/// refills during the test): the principal's calls, alternating between
/// the nodes, are allowed 10 times in all (each node alone would allow
/// 10), refused 429 beyond with the limit's headers; another principal is
/// not touched, also once Redis forgot the script (`SCRIPT FLUSH`); both
/// nodes count the fleet's two nodes, and neither fell back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_hold_a_principals_combined_limit() {
    if !redis_present() {
        return;
    }
    let (redis, nodes) = limited_pair().await;
    let allowed = echoes(&nodes, "ada", 30).await;
    assert_eq!(allowed, 10, "the fleet allows the limit, not a node each");
    let refused = call(
        &nodes[1].client("ada"),
        "echo",
        json!({ "text": "x" }),
        json!(null),
    )
    .await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        refused.headers["ratelimit-policy"],
        "\"principal\";q=10;w=60"
    );
    let retry_after: u64 = refused.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    assert_eq!(refused.json()["id"], 3, "{:?}", refused.body);
    // Another principal is not touched, even after Redis forgot the
    // script the nodes call by name (they send it again).
    run(&mut outsider(&redis), redis::cmd("SCRIPT").arg("FLUSH"));
    assert_eq!(echoes(&nodes, "eve", 4).await, 4);
    let limited: f64 = nodes
        .iter()
        .map(|n| n.metric("sessionreg_rate_limited_total{limit=\"principal\"}"))
        .sum();
    assert_eq!(limited, 21.0);
    for node in &nodes {
        assert_eq!(node.metric("sessionreg_rate_limit_fleet"), 1.0);
        assert_eq!(node.metric("sessionreg_rate_limit_fallbacks_total"), 0.0);
    }
}

/// Redis killed: each node keeps its share of the limit (10 a minute among
/// 2 nodes: 5 each, so 10 in all, never 0 and never 20), says so once and
/// counts it; Redis back (empty), the fleet decides again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_away_each_node_keeps_its_share_and_back_the_fleet_decides() {
    if !redis_present() {
        return;
    }
    let (mut redis, nodes) = limited_pair().await;
    assert_eq!(echoes(&nodes, "ada", 2).await, 2);
    redis.kill().expect("redis-server killed");
    all_up(&nodes, false).await;
    let allowed = echoes(&nodes, "ada", 30).await;
    assert_eq!(allowed, 10, "5 on each node: its share of 10 among 2");
    for node in &nodes {
        assert_eq!(node.metric("sessionreg_rate_limit_fleet"), 0.0);
        assert_eq!(node.metric("sessionreg_rate_limit_fallbacks_total"), 1.0);
    }
    redis.restart().expect("redis-server back");
    all_up(&nodes, true).await;
    // An empty Redis: the fleet's cells start afresh.
    assert_eq!(echoes(&nodes, "ada", 30).await, 10);
    for node in &nodes {
        assert_eq!(node.metric("sessionreg_rate_limit_fleet"), 1.0);
        assert_eq!(node.metric("sessionreg_rate_limit_fallbacks_total"), 1.0);
    }
}

/// Redis and two nodes on it, each principal limited to 10 a minute, their
/// buses up and each counting both nodes.
async fn limited_pair() -> (RedisServer, Vec<Node>) {
    let redis = RedisServer::start().expect("redis-server starts");
    let mut nodes = Vec::new();
    for _ in 0..2 {
        let rate = Some(Rate::per_minute(10));
        let heartbeat = Duration::from_millis(100);
        nodes.push(Node::limited(&redis, &state_keys(), fleet_keys(), heartbeat, rate).await);
    }
    all_up(&nodes, true).await;
    assert!(
        eventually(|| nodes.iter().all(|n| n.bus.nodes() == 2)).await,
        "each node counts both"
    );
    (redis, nodes)
}

/// `n` echoes of `who`, alternating between the nodes: how many were
/// allowed (the others must be 429).
async fn echoes(nodes: &[Node], who: &str, n: usize) -> usize {
    let mut allowed = 0;
    for i in 0..n {
        let answer = call(
            &nodes[i % nodes.len()].client(who),
            "echo",
            json!({ "text": "x" }),
            json!(null),
        )
        .await;
        match answer.status {
            StatusCode::OK => allowed += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            status => panic!("{status}: {:?}", answer.body),
        }
    }
    allowed
}

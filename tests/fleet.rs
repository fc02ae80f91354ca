//! Three `mcp_server` nodes behind a real nginx and behind a real HAProxy,
//! configured by `deploy/render.sh`: new sessions spread over the nodes,
//! every follow-up reaches its owner, SSE passes through unbuffered, a
//! killed node's sessions get 404 (after at most the one request in flight
//! at the kill) and re-initialize on a survivor, a drained node gets no new
//! session, serves its own to their end and stops, and nothing leaks.
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
use fleet::{Fleet, Kind, Metrics};
use http::Method;
use mcp_test_client::{fetch_text, result_text, Client, Error, Http, Session};
use serde_json::json;
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

    // --- Kill a node with a GET stream open and a tool call in flight on it.
    let victims = owned.remove(&KILLED).expect("sessions on the victim");
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
    let until = tokio::time::Instant::now() + BOUND;
    while metrics(&fleet, &http, KILLED).await.requests < before_kill[1].requests + 2 {
        assert!(
            tokio::time::Instant::now() < until,
            "the call reached the node"
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
    assert_eq!(
        last.created,
        last.terminated_total(),
        "node 0: every session ended"
    );
    assert_eq!(last.terminated.get("deleted"), Some(&last.created));
}

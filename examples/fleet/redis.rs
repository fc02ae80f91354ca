//! `--redis`: the fleet joined to a real `redis-server` (the fleet's bus;
//! the `fleet` crate starts it on a loopback port of its own), shown first:
//!
//! 1. a basket made through the balancer, listen streams opened through it
//!    (2026-07-28 `subscriptions/listen`, spread over the nodes by its
//!    round-robin), and updates of the basket through the balancer: every
//!    listener, on every node, hears each update once;
//! 2. Redis killed: every listen stream ends gracefully (the listen
//!    request's result), new listens get 503 with `Retry-After`, tools are
//!    served on;
//! 3. Redis back: a listen works again and hears the next update.
//!
//! Prints one `ok`/`FAIL` line per check and each node's bus counters.

use fleet::{Fleet, RedisServer};
use http::{Method, StatusCode};
use mcp_test_client::{fetch_text, result_text, samples, with_meta, Client, Http, SseStream};
use serde_json::json;
use std::time::Duration;

/// A safety net for every wait.
const BOUND: Duration = Duration::from_secs(20);

/// Listen streams opened through the balancer.
const LISTENERS: usize = 6;

/// Basket updates each listener must hear.
const UPDATES: usize = 10;

/// Starts redis-server if `wanted`.
pub fn start(wanted: bool) -> Result<Option<RedisServer>, String> {
    wanted.then(RedisServer::start).transpose()
}

/// A node's metric.
async fn metric(http: &Http, addr: std::net::SocketAddr, name: &str) -> Result<f64, String> {
    let (_, text) = fetch_text(http, Method::GET, &format!("http://{addr}/metrics"))
        .await
        .map_err(|e| format!("{addr}/metrics: {e}"))?;
    Ok(samples(&text).get(name).copied().unwrap_or(0.0))
}

/// Waits until every node's bus is up (or down).
async fn buses(fleet: &Fleet, http: &Http, up: bool) -> Result<bool, String> {
    let want = if up { 1.0 } else { 0.0 };
    let until = tokio::time::Instant::now() + BOUND;
    while tokio::time::Instant::now() < until {
        let mut all = true;
        for node in fleet.nodes() {
            all &= metric(http, node.addr, "sessionreg_bus_up").await? == want;
        }
        if all {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(false)
}

/// A listen stream of `uri` through `client`: the stream (its
/// acknowledgement read), or the refusal's status and whether it said when
/// to retry.
async fn listen(
    client: &Client,
    uri: &str,
) -> Result<Result<SseStream, (StatusCode, bool)>, String> {
    let body = with_meta(json!({
        "jsonrpc": "2.0", "id": "fleet", "method": "subscriptions/listen",
        "params": { "notifications": { "resourceSubscriptions": [uri] } },
    }));
    let request =
        client.modern_request(body.to_string(), &[("mcp-method", "subscriptions/listen")]);
    let response = client
        .try_send_raw(request)
        .await
        .map_err(|e| format!("listen: {e}"))?;
    let status = response.status();
    if status != StatusCode::OK {
        return Ok(Err((
            status,
            response.headers().contains_key("retry-after"),
        )));
    }
    let mut stream = SseStream::new(response.into_body());
    match stream.next_within(BOUND).await {
        Ok(Some(ack)) if ack["method"] == "notifications/subscriptions/acknowledged" => {
            Ok(Ok(stream))
        }
        other => Err(format!("listen: no acknowledgement: {other:?}")),
    }
}

/// `basket_add` through the balancer, the basket in `Mcp-Param-Basket`
/// (the balancer routes it to the basket's node by it).
async fn basket_add(client: &Client, basket: &str, item: &str) -> Result<(), String> {
    let added = fleet::calls::tool_result(
        client,
        500,
        "basket_add",
        json!({ "basket": basket, "item": item }),
    )
    .await
    .map_err(|e| format!("basket_add: {e}"))?;
    if added["isError"] == true {
        return Err(format!("basket_add did not reach the basket: {added}"));
    }
    Ok(())
}

/// The bus phase; whether every check held.
pub async fn phase(fleet: &Fleet, redis: &mut RedisServer, http: &Http) -> Result<bool, String> {
    let mut ok = true;
    let mut check = |good: bool, what: String| {
        println!("{} {what}", if good { "ok  " } else { "FAIL" });
        ok &= good;
    };
    println!("bus: redis-server on {}", redis.url());
    check(
        buses(fleet, http, true).await?,
        "bus: every node's bus up".into(),
    );
    let client = fleet.balancer().client(http, "bus");
    let made = client
        .try_modern_call(1, "basket_create", json!({}))
        .await
        .map_err(|e| format!("basket_create: {e}"))?;
    let basket = made["structuredContent"]["basket"]
        .as_str()
        .ok_or("basket_create gave no id")?
        .to_string();
    let uri = format!("basket://{basket}");
    let mut streams = Vec::new();
    for _ in 0..LISTENERS {
        streams.push(
            listen(&client, &uri)
                .await?
                .map_err(|(s, _)| format!("listen: {s}"))?,
        );
    }
    let mut spread = Vec::new();
    for node in fleet.nodes() {
        spread.push(metric(http, node.addr, "sessionreg_listeners_live").await? as u64);
    }
    println!("bus: {LISTENERS} listen streams through the balancer, per node {spread:?}");
    let mut heard = 0;
    for n in 0..UPDATES {
        basket_add(&client, &basket, &format!("item {n}")).await?;
        for stream in &mut streams {
            match stream.next_within(BOUND).await {
                Ok(Some(m))
                    if m["method"] == "notifications/resources/updated"
                        && m["params"]["uri"] == uri =>
                {
                    heard += 1
                }
                other => println!("     a listener got {other:?}"),
            }
        }
    }
    check(
        heard == LISTENERS * UPDATES,
        format!(
            "bus: every listener heard every update once, whichever node it is on: {heard} of {}",
            LISTENERS * UPDATES
        ),
    );

    redis.kill()?;
    let mut graceful = 0;
    for stream in &mut streams {
        if let Ok(Some(end)) = stream.next_within(BOUND).await {
            if end["result"]["resultType"] == "complete"
                && matches!(stream.next_within(BOUND).await, Ok(None))
            {
                graceful += 1;
            }
        }
    }
    check(
        graceful == LISTENERS,
        format!("bus: Redis killed: listen streams ended gracefully: {graceful} of {LISTENERS}"),
    );
    check(
        buses(fleet, http, false).await?,
        "bus: every node's bus down".into(),
    );
    let mut refused = 0;
    for _ in fleet.nodes() {
        if let Err((StatusCode::SERVICE_UNAVAILABLE, true)) = listen(&client, &uri).await? {
            refused += 1;
        }
    }
    check(
        refused == fleet.nodes().len(),
        format!(
            "bus: new listens answered 503 with Retry-After: {refused} of {}",
            fleet.nodes().len()
        ),
    );
    let echoed = client
        .try_modern_call(2, "echo", json!({ "text": "still serving" }))
        .await
        .map_err(|e| format!("echo: {e}"))?;
    check(
        result_text(&echoed) == Some("still serving"),
        "bus: tools served while Redis is away".into(),
    );

    redis.restart()?;
    check(
        buses(fleet, http, true).await?,
        "bus: Redis back, every node's bus up again".into(),
    );
    let mut again = listen(&client, &uri)
        .await?
        .map_err(|(s, _)| format!("listen after Redis came back: {s}"))?;
    basket_add(&client, &basket, "after").await?;
    let after = again.next_within(BOUND).await;
    check(
        matches!(&after, Ok(Some(m)) if m["params"]["uri"] == uri),
        "bus: a listen after Redis came back hears the next update".into(),
    );
    for node in fleet.nodes() {
        let mut counts = Vec::new();
        for name in ["published", "received", "dropped", "reconnects"] {
            counts.push(format!(
                "{name} {}",
                metric(http, node.addr, &format!("sessionreg_bus_{name}_total")).await?
            ));
        }
        println!("bus: node {}: {}", node.id, counts.join(", "));
    }
    Ok(ok)
}

//! What the fleet's bus (feature `redis`) costs, on loopback:
//!
//! ```text
//! cargo run --release --features redis --example bus_latency
//! cargo run --release --features redis --example bus_latency -- --rounds 5000
//! ```
//!
//! Starts a `redis-server` of its own on a loopback port (Debian's package:
//! `apt-get install redis-server`; the `fleet` crate's `RedisServer`) and
//! two nodes in this process, A and B, each a `SessionManager` with its own
//! publisher and bus, served on loopback sockets. Then:
//!
//! 1. **Delivery.** One listen stream (`subscriptions/listen`, over HTTP
//!    from a client in this process) on B, and one on A. Each round
//!    publishes a `notifications/resources/updated` on A's publisher and
//!    times it until the listener reads it from its SSE stream: on A (the
//!    same node: no bus on the way) and on B (across the bus: A's queue,
//!    Redis `PUBLISH`, B's subscription, B's delivery). One publication in
//!    flight at a time. Prints p50, p90, p99 and the maximum of both; the
//!    difference is what the bus adds to delivery.
//! 2. **The publishing call.** What a `tools/call` that publishes pays for
//!    the bus is the publisher's hand-over (one `try_send` of an `Arc` into
//!    the bus's bounded queue; the serialization and the `PUBLISH` happen
//!    on the bus's task): times `Publisher::resource_updated` on a
//!    publisher with no bus and on one with a bus (link up), neither with a
//!    listener, in batches the bus's queue can hold, and prints the mean
//!    per call. Every other step of a `tools/call` is the same with or
//!    without a bus.
//!
//! Wall-clock figures: on a machine busy with other work they are noise;
//! say how loaded it was when you quote them.

use clap::Parser;
use fleet::RedisServer;
use http::StatusCode;
use mcp_test_client::{with_meta, Client, SseStream};
use serde_json::json;
use sessionreg::http::jsonrpc::{self, Message, RpcError};
use sessionreg::http::{
    self as mcp, App, Audience, BusKeys, Context, HandlerError, Publisher, RedisBus, Reply,
    SessionManager,
};
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Publications timed per listener.
    #[arg(long, default_value_t = 2000)]
    rounds: usize,
    /// Publications timed per publisher in part 2.
    #[arg(long, default_value_t = 200_000)]
    publishes: usize,
}

/// An application with nothing but the listen streams the layer serves.
struct Quiet;

impl App for Quiet {
    type Session = ();

    fn open(&self, _: &jsonrpc::Request, _: &http::request::Parts) -> Result<(), RpcError> {
        Ok(())
    }

    async fn handle(&self, _: Context<()>, _: Message) -> Result<Reply, HandlerError> {
        Ok(Reply::Error(RpcError::method_not_found("no tools here")))
    }
}

/// A safety bound for each wait, not a measure.
const BOUND: Duration = Duration::from_secs(10);

const URI: &str = "basket://00ab";

/// A node: its publisher, its bus, served on loopback; its URL.
async fn node(
    redis: &RedisServer,
) -> Result<(Publisher, RedisBus, String, SessionManager<Quiet>), String> {
    let publisher = Publisher::new();
    let bus = RedisBus::builder(redis.url())
        // The two nodes' shared key: every frame is sealed (what the
        // measure includes).
        .keys(BusKeys::new(1, [9; 32]))
        .start(&publisher)
        .map_err(|e| format!("bus: {e}"))?;
    let manager = SessionManager::builder(Quiet)
        .bus(bus.clone())
        .build()
        .map_err(|e| format!("manager: {e}"))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let url = format!(
        "http://{}/mcp",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    tokio::spawn(mcp::serve(
        listener,
        manager.clone(),
        manager.clone(),
        std::future::pending::<()>(),
        Duration::from_secs(1),
    ));
    Ok((publisher, bus, url, manager))
}

/// A listen stream of [`URI`] on the node at `url`, acknowledged.
async fn listen(url: &str) -> Result<SseStream, String> {
    let client = Client::new(url);
    let body = with_meta(json!({
        "jsonrpc": "2.0", "id": "bench", "method": "subscriptions/listen",
        "params": { "notifications": { "resourceSubscriptions": [URI] } },
    }));
    let request =
        client.modern_request(body.to_string(), &[("mcp-method", "subscriptions/listen")]);
    let response = client
        .try_send_raw(request)
        .await
        .map_err(|e| format!("listen: {e}"))?;
    if response.status() != StatusCode::OK {
        return Err(format!("listen: {}", response.status()));
    }
    let mut stream = SseStream::new(response.into_body());
    match stream.next_within(BOUND).await {
        Ok(Some(ack)) if ack["method"] == "notifications/subscriptions/acknowledged" => Ok(stream),
        other => Err(format!("listen: no acknowledgement: {other:?}")),
    }
}

/// Publishes on `publisher` and times each until `stream` reads it.
async fn deliveries(
    publisher: &Publisher,
    stream: &mut SseStream,
    rounds: usize,
) -> Result<Vec<Duration>, String> {
    let mut times = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        publisher.resource_updated(URI, Audience::Everyone);
        match stream.next_within(BOUND).await {
            Ok(Some(m)) if m["method"] == "notifications/resources/updated" => {
                times.push(start.elapsed())
            }
            other => return Err(format!("expected an update, got {other:?}")),
        }
    }
    times.sort();
    Ok(times)
}

fn percentiles(name: &str, times: &[Duration]) {
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<28} n={:<6} p50 {:>8.1} us  p90 {:>8.1} us  p99 {:>8.1} us  max {:>8.1} us",
        times.len(),
        at(0.50).as_secs_f64() * 1e6,
        at(0.90).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        at(1.0).as_secs_f64() * 1e6,
    );
}

/// The mean time of `publisher.resource_updated`, over `n` calls in
/// batches of `batch`, waiting between batches until `drained` says the
/// bus's queue is empty again.
async fn publish_cost(
    publisher: &Publisher,
    n: usize,
    batch: usize,
    drained: impl Fn() -> bool,
) -> Duration {
    let mut spent = Duration::ZERO;
    let mut done = 0;
    while done < n {
        let this = batch.min(n - done);
        let start = Instant::now();
        for _ in 0..this {
            publisher.resource_updated(URI, Audience::Everyone);
        }
        spent += start.elapsed();
        done += this;
        let until = Instant::now() + BOUND;
        while !drained() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    spent / n as u32
}

async fn run(args: Args) -> Result<(), String> {
    let redis = RedisServer::start()?;
    println!("redis-server on {}", redis.url());
    let (a, a_bus, a_url, a_manager) = node(&redis).await?;
    let (_b, b_bus, b_url, _b_manager) = node(&redis).await?;
    let until = Instant::now() + BOUND;
    while !(a_bus.is_up() && b_bus.is_up()) {
        if Instant::now() > until {
            return Err("the buses did not come up".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // One listener at a time, each warmed up (connections, allocations)
    // before it is timed.
    let mut on_a = listen(&a_url).await?;
    deliveries(&a, &mut on_a, 100).await?;
    let same = deliveries(&a, &mut on_a, args.rounds).await?;
    drop(on_a);
    let mut on_b = listen(&b_url).await?;
    deliveries(&a, &mut on_b, 100).await?;
    let across = deliveries(&a, &mut on_b, args.rounds).await?;
    drop(on_b);
    println!("delivery, from a publish on node A to the listener's read of it (one in flight):");
    percentiles("  same node (A -> A)", &same);
    percentiles("  across the bus (A -> B)", &across);

    let plain = Publisher::new();
    let without = publish_cost(&plain, args.publishes, 1024, || true).await;
    // The bus's queue is empty once what the bus handed to Redis (or
    // dropped) has caught up with what A published.
    let drained = || {
        let text = a_manager.metrics();
        let sample = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse::<u64>().ok())
                .unwrap_or(0)
        };
        sample("sessionreg_bus_published_total") + sample("sessionreg_bus_dropped_total")
            >= sample("sessionreg_publications_total")
    };
    let with = publish_cost(&a, args.publishes, 1024, drained).await;
    println!(
        "Publisher::resource_updated, no listener, mean of {} calls:",
        args.publishes
    );
    println!("  without a bus               {:>8} ns", without.as_nanos());
    println!("  with a bus (link up)        {:>8} ns", with.as_nanos());
    drop(redis);
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if let Err(why) = run(Args::parse()).await {
        eprintln!("bus_latency: {why}");
        std::process::exit(1);
    }
}

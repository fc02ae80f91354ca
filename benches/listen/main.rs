//! `subscriptions/listen` over real loopback sockets: what an idle listener
//! costs a server, and how long one `notifications/resources/updated`
//! takes to reach every listener, for sessionreg's `examples/mcp_server`
//! beside the Python SDK 2.3 and TypeScript SDK v2 servers
//! (`benches/peers/*_listen_server.*`) and hyper alone holding SSE streams
//! (e2e-rmcp's `stream_floor`, the floor), by the same client.
//!
//! ```text
//! cargo bench --bench listen -- --rss 5000 --h2 5000 --fanout 10000 --rounds 3 \
//!   --sessionreg "mcp_server=target/release/examples/mcp_server --max-connections 20000" \
//!   --peer "python_sdk=benches/peers/.venv/bin/python benches/peers/python_listen_server.py --max-listeners 20000" \
//!   --peer "typescript_sdk=benches/peers/node_modules/.bin/node benches/peers/ts_listen_server.mjs --max-listeners 20000" \
//!   --floor "hyper_alone=target/release/stream_floor"
//! ```
//!
//! Every measurement starts each server afresh (`--addr 127.0.0.1:0` after
//! its own arguments), one after the other, the order rotating from round
//! to round (`--rounds`):
//!
//! * `--rss N`: N listeners, each on an HTTP/1.1 connection of its own.
//!   VmRSS is read from `/proc/<pid>/status` once the server is up and
//!   what the listeners will listen to is made (then 1 s), and again
//!   `--settle-s` (2) seconds after the last acknowledgement; the difference
//!   ÷ the listeners held. As `benches/stream_floor.py` measures a held
//!   `GET` stream. `--listen-to tools`: they listen to
//!   `toolsListChanged` (a kind) instead of one resource URI.
//! * `--h2 N`: the same with the N listeners multiplexed on HTTP/2
//!   (cleartext, prior knowledge: hyper's client `http2::handshake`, which
//!   our `serve` accepts by its preface and hyper alone through hyper-util's
//!   auto builder),
//!   `--h2-streams` (100, the layer's default concurrent streams per
//!   connection) per connection. Only for the servers that speak h2c: uvicorn
//!   (h11) and `node:http` do not.
//! * `--fanout N`: N listeners, each on a connection of its own, then
//!   `--publications` (5) times, 0.5 s apart: one `tools/call` on a
//!   connection of its own makes the server publish one
//!   `notifications/resources/updated` (mcp_server: `basket_add` of the
//!   basket whose `basket://` URI they listen to; the peers: `publish` of
//!   `bench://listen`), and the harness waits until every listener held
//!   has read it. Each arrival is counted from the moment the call was
//!   sent: first, p50, p99 and the last (the total); beside them, when the
//!   call's answer arrived (the server answers once its publish returned)
//!   and the server's CPU time over the publications ÷ frames delivered.
//!
//! The listeners are tokio tasks of this process (`--client-threads`
//! workers, 2), at most `--opening` (128) listens in flight while they
//! open. Every acknowledgement is checked (the listen request's id as its
//! subscription id) and every listener's first update too (method, URI,
//! its own subscription id), after the timed part; a server that refuses
//! listens (a cap) is reported with how many it held and its refusal.
//! `--json PATH` writes the medians for `benches/report.py`.

mod listeners;
mod options;
mod server;
mod wire;

use listeners::{wait_until, Listeners, Shared};
use options::{Kind, Options, Spec};
use serde_json::json;
use server::Server;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use wire::{Caller, Topic};

/// One measurement of memory per listener.
#[derive(Clone)]
struct Memory {
    held: usize,
    before: u64,
    after: u64,
    connections: usize,
    refusal: Option<String>,
}

impl Memory {
    fn per_listener(&self) -> f64 {
        (self.after as f64 - self.before as f64) / self.held.max(1) as f64
    }
}

/// One publication's fan-out, in µs after the call was sent.
#[derive(Clone)]
struct Publication {
    answered: f64,
    first: f64,
    p50: f64,
    p99: f64,
    last: f64,
    missing: usize,
}

/// One fan-out run: several publications to the same listeners.
#[derive(Clone)]
struct Fanout {
    held: usize,
    refusal: Option<String>,
    publications: Vec<Publication>,
    cpu_per_frame_us: f64,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at] as f64 / 1_000.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| !v.is_nan());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn first_refusal(shared: &Shared) -> Option<String> {
    shared.refusals.lock().unwrap().first().cloned()
}

/// Opens the listeners and waits for every one to be answered; `false` if
/// the time ran out first.
async fn open_all(shared: &Shared, n: usize, o: &Options, name: &str) -> bool {
    let started = Instant::now();
    let done = wait_until(Duration::from_secs(o.timeout_s), || shared.settled() >= n).await;
    eprintln!(
        "  {name}: {} acknowledged, {} refused of {n} in {:.1} s",
        shared.open(),
        shared.refused.load(std::sync::atomic::Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    done
}

async fn memory(spec: &Spec, n: usize, h2: Option<usize>, o: &Options) -> Memory {
    let mut server = Server::spawn(spec);
    let mut caller = Caller::connect(server.addr).await;
    let topic = Topic::make(spec.kind, &mut caller).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = server.rss();
    let shared = Shared::new(spec.kind, &topic.uri, o.listen_to_tools, n, 0);
    let (listeners, connections) = match h2 {
        None => (Listeners::h1(server.addr, n, o.opening, &shared), n),
        Some(streams) => (
            Listeners::h2(server.addr, n, streams, o.opening, &shared),
            n.div_ceil(streams),
        ),
    };
    open_all(&shared, n, o, &spec.name).await;
    tokio::time::sleep(Duration::from_secs(o.settle_s)).await;
    let after = server.rss();
    let held = shared.open();
    assert!(server.alive(), "FAILED: {} exited", server.name);
    drop(listeners);
    drop(caller);
    server.stop();
    Memory {
        held,
        before,
        after,
        connections: connections.min(held.max(1)),
        refusal: first_refusal(&shared),
    }
}

async fn fanout(spec: &Spec, n: usize, o: &Options) -> Fanout {
    let mut server = Server::spawn(spec);
    let mut caller = Caller::connect(server.addr).await;
    let topic = Topic::make(spec.kind, &mut caller).await;
    let shared = Shared::new(spec.kind, &topic.uri, false, n, o.publications);
    let listeners = Listeners::h1(server.addr, n, o.opening, &shared);
    open_all(&shared, n, o, &spec.name).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let held = shared.open();
    let cpu_before = server.cpu();
    let mut publications = Vec::new();
    for p in 0..o.publications {
        let (sent, answered) = topic.publish(&mut caller).await;
        let all = wait_until(Duration::from_secs(o.timeout_s), || {
            shared.arrived(p) >= held
        })
        .await;
        let mut arrivals = shared.arrivals_after(p, sent);
        arrivals.sort_unstable();
        let publication = Publication {
            answered: answered.duration_since(sent).as_nanos() as f64 / 1_000.0,
            first: percentile(&arrivals, 0.0),
            p50: percentile(&arrivals, 0.5),
            p99: percentile(&arrivals, 0.99),
            last: percentile(&arrivals, 1.0),
            missing: held.saturating_sub(arrivals.len()),
        };
        eprintln!(
            "  {}: publication {p}: {} of {held} in {:.1} ms{}",
            spec.name,
            arrivals.len(),
            publication.last / 1_000.0,
            if all { "" } else { " (timed out)" }
        );
        publications.push(publication);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let cpu = server.cpu() - cpu_before;
    let delivered: usize = (0..o.publications).map(|p| shared.arrived(p)).sum();
    match shared.check_updates() {
        Ok(checked) => eprintln!("  {}: {checked} first updates checked", spec.name),
        Err(e) => panic!("FAILED: {}: {e}", spec.name),
    }
    assert!(server.alive(), "FAILED: {} exited", server.name);
    drop(listeners);
    drop(caller);
    server.stop();
    Fanout {
        held,
        refusal: first_refusal(&shared),
        publications,
        cpu_per_frame_us: cpu * 1e6 / delivered.max(1) as f64,
    }
}

/// The servers in round `r`'s order (rotating).
fn rotated(servers: &[Spec], r: usize) -> Vec<Spec> {
    let mut order = servers.to_vec();
    let len = order.len();
    order.rotate_left(r % len);
    order
}

fn kib(bytes: f64) -> String {
    format!("{:.1}", bytes / 1024.0)
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

fn ms(us: f64) -> String {
    if us.is_nan() {
        "—".into()
    } else {
        format!("{:.1}", us / 1_000.0)
    }
}

fn print_memory(
    title: &str,
    names: &[String],
    runs: &BTreeMap<String, Vec<Memory>>,
    floor: Option<&str>,
) -> serde_json::Value {
    println!("{title}\n");
    println!("| server | listeners held | connections | RSS before → after (MiB) | RSS per listener (KiB), per round | median | ÷ hyper alone |");
    println!("|---|---:|---:|---:|---|---:|---:|");
    let median_of = |name: &str| median(runs[name].iter().map(Memory::per_listener).collect());
    let floor_per = floor.filter(|f| runs.contains_key(*f)).map(median_of);
    let mut out = serde_json::Map::new();
    for name in names {
        let Some(rounds) = runs.get(name) else {
            continue;
        };
        let per = median_of(name);
        let last = rounds.last().expect("a round");
        let ratio = match floor_per {
            Some(f) if Some(name.as_str()) != floor => format!("{:.2}×", per / f),
            _ => String::new(),
        };
        let each: Vec<String> = rounds.iter().map(|m| kib(m.per_listener())).collect();
        println!(
            "| {name} | {} | {} | {} → {} | {} | **{}** | {ratio} |",
            last.held,
            last.connections,
            mib(last.before),
            mib(last.after),
            each.join(", "),
            kib(per)
        );
        out.insert(
            name.clone(),
            json!({ "per_listener_bytes": per, "held": last.held }),
        );
    }
    for name in names {
        if let Some(refusal) = runs.get(name).and_then(|r| r.last()?.refusal.clone()) {
            println!("\n{name} refused listens: {refusal}");
        }
    }
    println!();
    serde_json::Value::Object(out)
}

fn print_fanout(
    n: usize,
    o: &Options,
    names: &[String],
    runs: &BTreeMap<String, Vec<Fanout>>,
) -> serde_json::Value {
    println!(
        "One notifications/resources/updated to {n} listeners, each on its own HTTP/1.1 connection: \
         ms after the publishing tools/call was sent, median of {} publications × {} rounds\n",
        o.publications, o.rounds
    );
    println!("| server | listeners held (of {n}) | call answered | first frame | p50 | p99 | last frame (all delivered) | frames missing | server CPU per frame (µs) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut out = serde_json::Map::new();
    for name in names {
        let Some(rounds) = runs.get(name) else {
            continue;
        };
        let all: Vec<&Publication> = rounds.iter().flat_map(|f| &f.publications).collect();
        let med = |f: fn(&Publication) -> f64| median(all.iter().map(|p| f(p)).collect());
        let held = rounds.iter().map(|f| f.held).min().unwrap_or(0);
        let missing: usize = all.iter().map(|p| p.missing).sum();
        let cpu = median(rounds.iter().map(|f| f.cpu_per_frame_us).collect());
        println!(
            "| {name} | {held} | {} | {} | {} | {} | **{}** | {missing} | {cpu:.1} |",
            ms(med(|p| p.answered)),
            ms(med(|p| p.first)),
            ms(med(|p| p.p50)),
            ms(med(|p| p.p99)),
            ms(med(|p| p.last)),
        );
        out.insert(
            name.clone(),
            json!({ "held": held, "p50_us": med(|p| p.p50), "last_us": med(|p| p.last),
                    "answered_us": med(|p| p.answered), "missing": missing, "cpu_per_frame_us": cpu }),
        );
    }
    for name in names {
        if let Some(refusal) = runs.get(name).and_then(|r| r.last()?.refusal.clone()) {
            println!("\n{name} refused listens: {refusal}");
        }
    }
    println!();
    serde_json::Value::Object(out)
}

fn main() {
    let o = Options::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.client_threads)
        .enable_all()
        .build()
        .expect("a runtime");
    let names: Vec<String> = o.servers.iter().map(|s| s.name.clone()).collect();
    let floor = o
        .servers
        .iter()
        .find(|s| s.kind == Kind::Floor)
        .map(|s| s.name.clone());
    let mut json = serde_json::Map::new();
    runtime.block_on(async {
        if o.rss > 0 {
            let mut runs: BTreeMap<String, Vec<Memory>> = BTreeMap::new();
            for r in 0..o.rounds {
                eprintln!("--- rss, round {}", r + 1);
                for spec in rotated(&o.servers, r) {
                    let m = memory(&spec, o.rss, None, &o).await;
                    runs.entry(spec.name.clone()).or_default().push(m);
                }
            }
            let title = format!(
                "RSS per idle listener, {} listeners each on its own HTTP/1.1 connection, {} rounds",
                o.rss, o.rounds
            );
            json.insert("rss_h1".into(), print_memory(&title, &names, &runs, floor.as_deref()));
        }
        if o.h2 > 0 {
            let servers: Vec<Spec> = o.servers.iter().filter(|s| s.speaks_h2c()).cloned().collect();
            let mut runs: BTreeMap<String, Vec<Memory>> = BTreeMap::new();
            for r in 0..o.rounds {
                eprintln!("--- rss on HTTP/2, round {}", r + 1);
                for spec in rotated(&servers, r) {
                    let m = memory(&spec, o.h2, Some(o.h2_streams), &o).await;
                    runs.entry(spec.name.clone()).or_default().push(m);
                }
            }
            let title = format!(
                "RSS per idle listener, {} listeners multiplexed on HTTP/2 (h2c), {} per connection, {} rounds",
                o.h2, o.h2_streams, o.rounds
            );
            json.insert("rss_h2".into(), print_memory(&title, &names, &runs, floor.as_deref()));
            let without: Vec<&str> = o
                .servers
                .iter()
                .filter(|s| !s.speaks_h2c())
                .map(|s| s.name.as_str())
                .collect();
            if !without.is_empty() {
                println!("Not on HTTP/2: {} (no h2c: uvicorn serves HTTP/1.1 with h11, node:http HTTP/1.1).\n", without.join(", "));
            }
        }
        if o.fanout > 0 {
            let servers: Vec<Spec> = o.servers.iter().filter(|s| s.kind != Kind::Floor).cloned().collect();
            let mut runs: BTreeMap<String, Vec<Fanout>> = BTreeMap::new();
            for r in 0..o.rounds {
                eprintln!("--- fan-out, round {}", r + 1);
                for spec in rotated(&servers, r) {
                    let f = fanout(&spec, o.fanout, &o).await;
                    runs.entry(spec.name.clone()).or_default().push(f);
                }
            }
            json.insert("fanout".into(), print_fanout(o.fanout, &o, &names, &runs));
            json.insert("fanout_n".into(), json!(o.fanout));
        }
    });
    if let Some(path) = &o.json {
        std::fs::write(path, serde_json::Value::Object(json).to_string()).expect("write --json");
    }
}

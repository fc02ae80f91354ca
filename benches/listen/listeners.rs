//! The listeners: N listen streams, each a tokio task of the harness that
//! opens its stream (on a connection of its own, or multiplexed on a shared
//! HTTP/2 connection), checks the acknowledgement, then reads every frame
//! and records when each `notifications/resources/updated` arrived.
//!
//! An arrival is stamped when the body frame that completes the event is
//! read, before anything is parsed; each listener keeps its first update's
//! bytes, checked after the timed part (its method, its URI, its own
//! subscription id), so that checking costs the timing nothing.

use crate::options::Kind;
use crate::wire::{self, Target, SUBSCRIPTION};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

const UPDATED: &[u8] = b"notifications/resources/updated";
const ACKNOWLEDGED: &[u8] = b"notifications/subscriptions/acknowledged";

/// What every listener task shares with the harness.
pub struct Shared {
    kind: Kind,
    uri: String,
    /// Listen to `toolsListChanged` instead of `uri` (memory runs only).
    tools: bool,
    /// The instant arrivals are counted from.
    base: Instant,
    /// Per publication, per listener: its arrival, ns after `base`, plus
    /// one (0: not arrived).
    arrivals: Vec<Box<[AtomicU64]>>,
    arrived: Vec<AtomicUsize>,
    /// Each listener's first update, checked after the timing.
    first: Box<[OnceLock<Bytes>]>,
    pub acknowledged: AtomicUsize,
    /// Listens answered otherwise than with a stream (a cap, a refusal).
    pub refused: AtomicUsize,
    /// Streams that ended, or connections that failed, after opening.
    pub ended: AtomicUsize,
    /// The first few refusals, as the server worded them.
    pub refusals: Mutex<Vec<String>>,
}

impl Shared {
    pub fn new(
        kind: Kind,
        uri: &str,
        tools: bool,
        listeners: usize,
        publications: usize,
    ) -> Arc<Shared> {
        let slots = || (0..listeners).map(|_| AtomicU64::new(0)).collect();
        Arc::new(Shared {
            kind,
            uri: uri.to_string(),
            tools,
            base: Instant::now(),
            arrivals: (0..publications).map(|_| slots()).collect(),
            arrived: (0..publications).map(|_| AtomicUsize::new(0)).collect(),
            first: (0..listeners).map(|_| OnceLock::new()).collect(),
            acknowledged: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
            ended: AtomicUsize::new(0),
            refusals: Mutex::new(Vec::new()),
        })
    }

    /// What each listener asks for: one URI's updates, or a kind.
    fn filter(&self) -> Option<&str> {
        (!self.tools).then_some(self.uri.as_str())
    }

    /// Listeners whose stream is open and acknowledged now.
    pub fn open(&self) -> usize {
        self.acknowledged
            .load(Ordering::Relaxed)
            .saturating_sub(self.ended.load(Ordering::Relaxed))
    }

    /// Listens answered, one way or the other (or failed).
    pub fn settled(&self) -> usize {
        self.acknowledged.load(Ordering::Relaxed) + self.refused.load(Ordering::Relaxed)
    }

    pub fn arrived(&self, publication: usize) -> usize {
        self.arrived[publication].load(Ordering::Relaxed)
    }

    /// The arrivals of a publication, each after `since`, in ns (those that
    /// arrived).
    pub fn arrivals_after(&self, publication: usize, since: Instant) -> Vec<u64> {
        let since = since.duration_since(self.base).as_nanos() as u64;
        self.arrivals[publication]
            .iter()
            .filter_map(|a| match a.load(Ordering::Relaxed) {
                0 => None,
                at => Some((at - 1).saturating_sub(since)),
            })
            .collect()
    }

    fn refuse(&self, what: String) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let mut refusals = self.refusals.lock().unwrap();
        if refusals.len() < 3 {
            refusals.push(what);
        }
    }

    /// Checks every first update a listener kept: its method, its URI and
    /// its own subscription id. The number checked, or the first wrong one.
    pub fn check_updates(&self) -> Result<usize, String> {
        let mut checked = 0;
        for (i, frame) in self.first.iter().enumerate() {
            let Some(frame) = frame.get() else { continue };
            let message =
                data(frame).ok_or_else(|| format!("listener {i}: no JSON in {frame:?}"))?;
            let params = &message["params"];
            if message["method"] != "notifications/resources/updated"
                || params["uri"] != self.uri.as_str()
                || params["_meta"][SUBSCRIPTION] != i as u64
            {
                return Err(format!("listener {i} got {message}"));
            }
            checked += 1;
        }
        Ok(checked)
    }
}

/// The JSON of an SSE event's `data:` line.
fn data(event: &[u8]) -> Option<Value> {
    String::from_utf8_lossy(event)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str(d.trim()).ok())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The listener tasks; dropping them closes every stream.
pub struct Listeners {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Listeners {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Listeners {
    /// Opens `n` listeners on HTTP/1.1, each on a connection of its own,
    /// at most `opening` listens in flight at once.
    pub fn h1(addr: SocketAddr, n: usize, opening: usize, shared: &Arc<Shared>) -> Listeners {
        let gate = Arc::new(Semaphore::new(opening));
        let tasks = (0..n)
            .map(|i| {
                let (gate, shared) = (Arc::clone(&gate), Arc::clone(shared));
                tokio::spawn(async move {
                    let permit = gate.acquire_owned().await.expect("the gate stays open");
                    match open_h1(addr, i, &shared).await {
                        Ok(response) => consume(i, response, &shared, permit).await,
                        Err(e) => shared.refuse(format!("listener {i}: {e}")),
                    }
                })
            })
            .collect();
        Listeners { tasks }
    }

    /// Opens `n` listeners multiplexed on HTTP/2 (cleartext, prior
    /// knowledge) connections of `streams` listeners each.
    pub fn h2(
        addr: SocketAddr,
        n: usize,
        streams: usize,
        opening: usize,
        shared: &Arc<Shared>,
    ) -> Listeners {
        let gate = Arc::new(Semaphore::new(opening));
        let mut tasks = Vec::new();
        for first in (0..n).step_by(streams) {
            let (gate, shared) = (Arc::clone(&gate), Arc::clone(shared));
            let last = (first + streams).min(n);
            tasks.push(tokio::spawn(async move {
                let sender = match connect_h2(addr).await {
                    Ok(sender) => sender,
                    Err(e) => {
                        for i in first..last {
                            shared.refuse(format!("listener {i}: {e}"));
                        }
                        return;
                    }
                };
                let streams: Vec<JoinHandle<()>> = (first..last)
                    .map(|i| {
                        let (gate, shared, mut sender) =
                            (Arc::clone(&gate), Arc::clone(&shared), sender.clone());
                        tokio::spawn(async move {
                            let permit = gate.acquire_owned().await.expect("the gate stays open");
                            let request = wire::listen(
                                shared.kind,
                                addr,
                                Target::H2,
                                i as u64,
                                shared.filter(),
                            );
                            let response = match sender.ready().await {
                                Ok(()) => sender.send_request(request).await,
                                Err(e) => Err(e),
                            };
                            match response {
                                Ok(response) => consume(i, response, &shared, permit).await,
                                Err(e) => shared.refuse(format!("listener {i}: {e}")),
                            }
                        })
                    })
                    .collect();
                // Held until this task is aborted: aborting it aborts them.
                let _guard = AbortAll(streams);
                std::future::pending::<()>().await;
            }));
        }
        Listeners { tasks }
    }
}

struct AbortAll(Vec<JoinHandle<()>>);

impl Drop for AbortAll {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

async fn open_h1(
    addr: SocketAddr,
    i: usize,
    shared: &Shared,
) -> Result<http::Response<Incoming>, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(conn);
    let request = wire::listen(shared.kind, addr, Target::H1, i as u64, shared.filter());
    sender
        .send_request(request)
        .await
        .map_err(|e| format!("listen: {e}"))
}

async fn connect_h2(
    addr: SocketAddr,
) -> Result<http2::SendRequest<http_body_util::Full<Bytes>>, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .map_err(|e| format!("h2 handshake: {e}"))?;
    tokio::spawn(conn);
    Ok(sender)
}

/// Reads one listen stream to its end: the acknowledgement (checked; then
/// the opening permit is given back), then every event, each update's
/// arrival recorded.
async fn consume(
    i: usize,
    response: http::Response<Incoming>,
    shared: &Shared,
    permit: OwnedSemaphorePermit,
) {
    let stream = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let status = response.status();
    let mut body = response.into_body();
    if status != 200 || !stream {
        let text = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        shared.refuse(format!(
            "{status} {}",
            String::from_utf8_lossy(&text).trim()
        ));
        return;
    }
    let mut permit = Some(permit);
    let mut buffer: Vec<u8> = Vec::with_capacity(512);
    let mut updates = 0;
    while let Some(frame) = body.frame().await {
        let now = Instant::now();
        let Ok(frame) = frame else { break };
        let Ok(bytes) = frame.into_data() else {
            continue;
        };
        buffer.extend(bytes.iter().filter(|b| **b != b'\r'));
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buffer.drain(..end + 2).collect();
            if permit.is_some() {
                if shared.kind != Kind::Floor && !acknowledges(&event, i) {
                    shared.refuse(format!(
                        "listener {i}: first event {}",
                        String::from_utf8_lossy(&event)
                    ));
                    return;
                }
                permit = None;
                shared.acknowledged.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if !contains(&event, UPDATED) {
                continue; // a keep-alive comment
            }
            if updates == 0 {
                let _ = shared.first[i].set(Bytes::from(event));
            }
            if let Some(slot) = shared.arrivals.get(updates) {
                let at = now.duration_since(shared.base).as_nanos() as u64;
                slot[i].store(at + 1, Ordering::Relaxed);
                shared.arrived[updates].fetch_add(1, Ordering::Relaxed);
            }
            updates += 1;
        }
    }
    if permit.is_some() {
        shared.refuse(format!(
            "listener {i}: the stream ended before its acknowledgement"
        ));
    } else {
        shared.ended.fetch_add(1, Ordering::Relaxed);
    }
}

/// Whether `event` is listener `i`'s acknowledgement.
fn acknowledges(event: &[u8], i: usize) -> bool {
    contains(event, ACKNOWLEDGED)
        && data(event).is_some_and(|m| m["params"]["_meta"][SUBSCRIPTION] == i as u64)
}

/// Waits until `done` holds or `timeout` passes; whether it held.
pub async fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    true
}

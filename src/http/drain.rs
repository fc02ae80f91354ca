//! Draining a node for a rolling restart, and the two health answers a load
//! balancer checks.
//!
//! A node in a fleet (see `deploy/` and the README's "Run a fleet") owns
//! the sessions whose ids carry its node id; a balancer routes each of them
//! to it by the id's first two hex digits. To restart a node without ending
//! its sessions needlessly, it is first *drained*:
//!
//! * [`SessionManager::start_drain`] (or [`SessionManager::drain`], which
//!   also waits) makes every new `initialize` a 503 with `Retry-After`,
//!   before the application's [`open`](super::App::open) runs: nothing is
//!   created, so a balancer may safely send that `initialize` to another
//!   node (nginx `proxy_next_upstream http_503 non_idempotent`, HAProxy
//!   `retry-on 503`).
//! * Every other request is served as before: the node's sessions go on
//!   until their clients `DELETE` them or they idle out.
//! * [`SessionManager::readiness`] answers 503 from then on, so a balancer
//!   with active checks takes the node out of the round-robin of new
//!   sessions; [`SessionManager::liveness`] still answers 200, so the same
//!   balancer keeps routing the node's own ids to it.
//! * [`SessionManager::drain`] returns when the last session has ended or a
//!   deadline has passed; the server then shuts down as usual
//!   ([`serve`](super::serve)'s signal), ending what is left with
//!   [`Reason::Shutdown`](crate::Reason::Shutdown).
//!
//! An `initialize` that raced the start of the drain (it passed the check
//! just before) creates its session: it is served and waited for like the
//! others. A drain is not undone; a node that should serve new sessions
//! again is restarted.

use super::app::App;
use super::body::{self, Body};
use super::SessionManager;
use http::header::{HeaderValue, CACHE_CONTROL};
use http::{Response, StatusCode};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often [`SessionManager::drain`] looks whether the last session has
/// ended: a drain lasts seconds to hours, so a tenth of a second is prompt
/// enough, and costs nothing on the request path (no notification hook in
/// every close).
const POLL: Duration = Duration::from_millis(100);

/// The drain switch of one manager (in its shared state).
#[derive(Debug, Default)]
pub(super) struct Drain {
    on: AtomicBool,
}

impl Drain {
    /// Whether new sessions are refused.
    pub(super) fn is_on(&self) -> bool {
        // Relaxed: a flag with nothing published under it; an initialize
        // that reads it a moment late is served (see the module doc).
        self.on.load(Ordering::Relaxed)
    }
}

/// What [`SessionManager::drain`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainReport {
    /// Sessions still live when the wait ended: 0 when they had all ended
    /// before the deadline.
    pub remaining: usize,
    /// How long the wait lasted.
    pub waited: Duration,
}

impl<A: App> SessionManager<A> {
    /// Starts draining: from now on `initialize` gets 503 with
    /// `Retry-After` and creates nothing, [`readiness`](Self::readiness)
    /// answers 503, and the sessions already live are served on. Returns
    /// whether this call started it (false if the node was already
    /// draining).
    ///
    /// ```
    /// use sessionreg::http::{App, Context, HandlerError, Reply, SessionManager};
    /// use sessionreg::http::jsonrpc::{Message, Request, RpcError};
    /// use http::request::Parts;
    ///
    /// struct Tools;
    /// impl App for Tools {
    ///     type Session = ();
    ///     fn open(&self, _: &Request, _: &Parts) -> Result<(), RpcError> { Ok(()) }
    ///     async fn handle(&self, _: Context<()>, _: Message) -> Result<Reply, HandlerError> {
    ///         Ok(Reply::Accepted)
    ///     }
    /// }
    ///
    /// let manager = SessionManager::builder(Tools).node_id(7).build().unwrap();
    /// assert_eq!(manager.readiness().status(), 200);
    /// assert!(manager.start_drain());
    /// assert!(manager.is_draining());
    /// assert_eq!(manager.readiness().status(), 503); // out of the round-robin
    /// assert_eq!(manager.liveness().status(), 200); // still serving its ids
    /// ```
    pub fn start_drain(&self) -> bool {
        let started = !self.inner.drain.on.swap(true, Ordering::Relaxed);
        if started {
            tracing::info!(
                live = self.inner.registry.len(),
                "draining: new sessions are refused, live ones served to their end"
            );
        }
        started
    }

    /// Whether the node is draining.
    pub fn is_draining(&self) -> bool {
        self.inner.drain.is_on()
    }

    /// Drains: [`start_drain`](Self::start_drain), then waits until no
    /// session is live or `deadline` has passed. Shut down after it (the
    /// sessions still live then end with `Shutdown`); e.g. make it part of
    /// the signal future given to [`serve`](super::serve).
    pub async fn drain(&self, deadline: Duration) -> DrainReport {
        self.start_drain();
        let start = Instant::now();
        let registry = &self.inner.registry;
        let _ = tokio::time::timeout(deadline, async {
            while !registry.is_empty() {
                tokio::time::sleep(POLL).await;
            }
        })
        .await;
        let report = DrainReport {
            remaining: registry.len(),
            waited: start.elapsed(),
        };
        tracing::info!(
            remaining = report.remaining,
            waited_ms = report.waited.as_millis() as u64,
            "drain finished"
        );
        report
    }

    /// The readiness probe: 200 when this node takes new sessions; 503 when
    /// it does not (draining, shutting down, or at capacity). A balancer
    /// puts a node in the round-robin of `initialize` requests only while
    /// this says 200. The body is JSON:
    /// `{"status":"ready"|"draining"|"full"|"shutting_down","node":N,"sessions":LIVE}`.
    pub fn readiness(&self) -> Response<Body> {
        let live = self.inner.registry.len();
        let status = if self.inner.shutting_down.load(Ordering::SeqCst) {
            "shutting_down"
        } else if self.is_draining() {
            "draining"
        } else if live >= self.inner.registry.capacity() {
            "full"
        } else {
            "ready"
        };
        self.health(status == "ready", status, live)
    }

    /// The liveness probe: 200 while this node serves its sessions
    /// (draining or not), 503 once it is shutting down. A balancer routes a
    /// session's requests to its owner while this says 200, and to any other
    /// node (which answers 404, so the client re-initializes) when not.
    pub fn liveness(&self) -> Response<Body> {
        let live = self.inner.registry.len();
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            self.health(false, "shutting_down", live)
        } else if self.is_draining() {
            self.health(true, "draining", live)
        } else {
            self.health(true, "serving", live)
        }
    }

    fn health(&self, ok: bool, status: &str, live: usize) -> Response<Body> {
        let code = if ok {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        let node = self.inner.registry.node_id();
        let mut response = body::json(
            code,
            &json!({ "status": status, "node": node, "sessions": live }),
        );
        // Probes must see the state of now, not a cached one.
        response
            .headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

/// Why an `initialize` gets 503 (with `Retry-After`) while draining:
/// nothing was created, so the client (or its balancer) may send it again,
/// to this node's peers.
pub(super) const REFUSAL: &str =
    "this node is draining and takes no new sessions; retry (another node will)";

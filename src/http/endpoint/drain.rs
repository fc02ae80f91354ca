//! Draining a node for a rolling restart, and the two health answers a load
//! balancer checks.
//!
//! A node in a fleet (see `deploy/` and the README's "Run a fleet") owns
//! the sessions whose ids carry its node id; a balancer routes each of them
//! to it by the id's first two hex digits. To restart a node without ending
//! its sessions needlessly, it is first *drained*:
//!
//! * [`SessionManager::start_drain`](crate::http::SessionManager::start_drain) (or [`SessionManager::drain`](crate::http::SessionManager::drain), which
//!   also waits) makes every new `initialize` a 503 with `Retry-After`
//!   ([`Reject::Draining`](crate::http::wire::reject::Reject::Draining)),
//!   before the application's [`open`](crate::http::App::open) runs: nothing is
//!   created, so a balancer may safely send that `initialize` to another
//!   node (nginx `proxy_next_upstream http_503 non_idempotent`, HAProxy
//!   `retry-on 503`).
//! * Every other request is served as before: the node's sessions go on
//!   until their clients `DELETE` them or they idle out.
//! * [`SessionManager::readiness`](crate::http::SessionManager::readiness) answers 503 from then on, so a balancer
//!   with active checks takes the node out of the round-robin of new
//!   sessions; [`SessionManager::liveness`](crate::http::SessionManager::liveness) still answers 200, so the same
//!   balancer keeps routing the node's own ids to it.
//! * [`SessionManager::drain`](crate::http::SessionManager::drain) returns when the last session has ended or a
//!   deadline has passed; the server then shuts down as usual
//!   ([`serve`](crate::http::serve)'s signal), ending what is left with
//!   [`Reason::Shutdown`](crate::Reason::Shutdown).
//!
//! An `initialize` that raced the start of the drain (it passed the check
//! just before) creates its session: it is served and waited for like the
//! others. A drain is not undone; a node that should serve new sessions
//! again is restarted.

use crate::http::app::App;
use crate::http::run::hub::Hub;
use crate::http::wire::body::{self, Body};
use http::header::{HeaderValue, CACHE_CONTROL};
use http::{Response, StatusCode};
use serde_json::json;
use std::time::{Duration, Instant};

/// How often [`SessionManager::drain`](crate::http::SessionManager::drain) looks whether the last session has
/// ended: a drain lasts seconds to hours, so a tenth of a second is prompt
/// enough, and costs nothing on the request path (no notification hook in
/// every close).
const POLL: Duration = Duration::from_millis(100);

/// What [`SessionManager::drain`](crate::http::SessionManager::drain) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainReport {
    /// Sessions still live when the wait ended: 0 when they had all ended
    /// before the deadline.
    pub remaining: usize,
    /// How long the wait lasted.
    pub waited: Duration,
}

/// [`SessionManager::start_drain`](crate::http::SessionManager::start_drain).
pub(crate) fn start<A: App>(hub: &Hub<A>) -> bool {
    let started = hub.phase.start_drain();
    if started {
        // Listen streams end gracefully now: their clients re-listen, and
        // the balancer sends them to the nodes that stay.
        let listeners = hub.listeners.end_all(crate::Reason::Drained);
        tracing::info!(
            live = hub.registry.len(),
            listeners,
            "draining: new sessions and listen streams are refused, live sessions served to their end"
        );
    }
    started
}

/// [`SessionManager::drain`](crate::http::SessionManager::drain).
pub(crate) async fn drain<A: App>(hub: &Hub<A>, deadline: Duration) -> DrainReport {
    start(hub);
    let start = Instant::now();
    let registry = &hub.registry;
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

/// [`SessionManager::readiness`](crate::http::SessionManager::readiness).
pub(crate) fn readiness<A: App>(hub: &Hub<A>) -> Response<Body> {
    let live = hub.registry.len();
    let status = if hub.phase.is_shutting_down() {
        "shutting_down"
    } else if hub.phase.is_draining() {
        "draining"
    } else if live >= hub.registry.capacity() {
        "full"
    } else {
        "ready"
    };
    health(hub, status == "ready", status, live)
}

/// [`SessionManager::liveness`](crate::http::SessionManager::liveness).
pub(crate) fn liveness<A: App>(hub: &Hub<A>) -> Response<Body> {
    let live = hub.registry.len();
    if hub.phase.is_shutting_down() {
        health(hub, false, "shutting_down", live)
    } else if hub.phase.is_draining() {
        health(hub, true, "draining", live)
    } else {
        health(hub, true, "serving", live)
    }
}

fn health<A: App>(hub: &Hub<A>, ok: bool, status: &str, live: usize) -> Response<Body> {
    let code = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let node = hub.registry.node_id();
    let mut response = body::json(
        code,
        &json!({ "status": status, "node": node, "sessions": live }),
    );
    // Probes must see the hub of now, not a cached one.
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

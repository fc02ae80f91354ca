//! The HTTP layer's own counters and gauges, striped by thread like the
//! registry's (`src/stats.rs`), and their Prometheus text.
//!
//! Each thread bumps the stripe its thread-local index picks, so the
//! per-request updates (a response counted, a handler in and out) land on
//! a cache line that thread alone writes in the common case; a read sums
//! every stripe. Unlike the registry's stripes these are not owned by one
//! thread exclusively (the index is a round-robin number, not a leased
//! id), so every update is a `fetch_add`: uncontended, but atomic.
//!
//! A gauge that goes up on one thread and down on another is still exact
//! in the sum (each stripe holds a wrapping difference); a sum read while
//! updates are in flight can be a moment old, and is never shown below 0.
//!
//! ```text
//! sessionreg_http_connections_open             gauge    connections `serve` holds open
//! sessionreg_http_streams_open                 gauge    SSE response bodies alive
//! sessionreg_http_handlers_in_flight           gauge    App::handle calls running
//! sessionreg_http_event_log_bytes              gauge    bytes the event logs of every session hold
//! sessionreg_request_states_unused             gauge    single-use requestStates sealed, not yet used or expired
//! sessionreg_http_responses_total{code}        counter  responses the manager wrote, by status
//! sessionreg_http_notifications_dropped_total  counter  server messages a stream could not take
//! sessionreg_http_streams_ended_total{reason}  counter  standalone GET streams the server ended: credential_expired | credential_withdrawn
//! sessionreg_request_state_rejected_total{cause} counter 2026-07-28 requestStates refused
//! ```

use crate::http::input::sealing::StateRejection;
use crate::Reason;
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The status codes counted by `sessionreg_http_responses_total`, in label
/// order: every status the layer itself writes. Others (an application's
/// router around the manager is not counted; a status the layer does not
/// write cannot occur) would go to `other`, shown only when not zero.
pub(crate) const CODES: [u16; 15] = [
    200, 202, 400, 401, 403, 404, 405, 406, 408, 409, 413, 415, 429, 500, 503,
];
const OTHER: usize = CODES.len();

/// The reasons `sessionreg_http_streams_ended_total` counts, in label
/// order: the ends of a standalone `GET` stream that neither its client
/// nor its session chose (a stream that stalls, or whose client goes,
/// counts its frames in `sessionreg_http_notifications_dropped_total`).
pub(crate) const STREAM_ENDS: [Reason; 2] =
    [Reason::CredentialExpired, Reason::CredentialWithdrawn];

fn stream_end_index(reason: Reason) -> Option<usize> {
    STREAM_ENDS.iter().position(|r| *r == reason)
}

#[derive(Default)]
struct HttpStripe {
    connections: AtomicU64,
    streams: AtomicU64,
    handlers: AtomicU64,
    dropped: AtomicU64,
    responses: [AtomicU64; CODES.len() + 1],
    states_rejected: [AtomicU64; StateRejection::ALL.len()],
    streams_ended: [AtomicU64; STREAM_ENDS.len()],
}

/// The HTTP layer's counters (one set per [`SessionManager`](crate::http::SessionManager)).
pub(crate) struct HttpCounters {
    stripes: Box<[CachePadded<HttpStripe>]>,
    mask: usize,
}

impl std::fmt::Debug for HttpCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.snapshot().fmt(f)
    }
}

/// A snapshot of the HTTP layer's counters, from
/// [`SessionManager::http_stats`](crate::http::SessionManager::http_stats).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpStats {
    /// Connections open (only [`serve`](crate::http::serve) counts them).
    pub connections_open: u64,
    /// SSE response bodies alive (standalone `GET` streams and `POST`
    /// replies streamed as SSE).
    pub streams_open: u64,
    /// [`App::handle`](crate::http::App::handle) calls running.
    pub handlers_in_flight: u64,
    /// Server-to-client messages dropped because the stream could not take
    /// them (its queue full, or the stream stalled).
    pub notifications_dropped: u64,
    /// Bytes the event logs of every session hold (see
    /// [`Builder::event_log_total_bytes`](crate::http::Builder::event_log_total_bytes)).
    pub event_log_bytes: u64,
    /// Single-use 2026-07-28 `requestState`s sealed and neither used nor
    /// expired yet (each holds one entry of a bounded registry: see
    /// [`Builder::single_use_states`](crate::http::Builder::single_use_states)).
    pub request_states_unused: u64,
    responses: [u64; CODES.len() + 1],
    states_rejected: [u64; StateRejection::ALL.len()],
    streams_ended: [u64; STREAM_ENDS.len()],
}

impl HttpStats {
    /// Responses the manager wrote with `status` (0 for a status it never
    /// writes).
    pub fn responses(&self, status: u16) -> u64 {
        CODES
            .iter()
            .position(|c| *c == status)
            .map_or(0, |i| self.responses[i])
    }

    /// Responses of every status.
    pub fn responses_total(&self) -> u64 {
        self.responses.iter().sum()
    }

    /// 2026-07-28 `requestState`s refused for `cause`.
    pub fn request_states_rejected(&self, cause: StateRejection) -> u64 {
        self.states_rejected[cause.index()]
    }

    /// Standalone `GET` streams the server ended for `reason`: the
    /// credential they were opened with expired
    /// ([`Reason::CredentialExpired`]) or was withdrawn
    /// ([`Reason::CredentialWithdrawn`]); 0 for any other reason.
    pub fn streams_ended(&self, reason: Reason) -> u64 {
        stream_end_index(reason).map_or(0, |i| self.streams_ended[i])
    }
}

thread_local! {
    /// This thread's stripe number (before masking), assigned on first use.
    static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Hands out stripe numbers round-robin.
static NEXT_INDEX: AtomicUsize = AtomicUsize::new(0);

fn thread_index() -> usize {
    // `try_with`: a thread in teardown still counts, on stripe 0.
    INDEX
        .try_with(|index| {
            let mut i = index.get();
            if i == usize::MAX {
                // Relaxed: only distinctness matters, which the RMW gives.
                i = NEXT_INDEX.fetch_add(1, Ordering::Relaxed);
                index.set(i);
            }
            i
        })
        .unwrap_or(0)
}

fn code_index(status: u16) -> usize {
    CODES.iter().position(|c| *c == status).unwrap_or(OTHER)
}

impl HttpCounters {
    pub(crate) fn new() -> HttpCounters {
        // Twice the cores, so that worker threads rarely share a stripe.
        let threads = std::thread::available_parallelism().map_or(8, |n| n.get());
        let stripes = (2 * threads).next_power_of_two().clamp(8, 256);
        HttpCounters {
            stripes: (0..stripes).map(|_| CachePadded::default()).collect(),
            mask: stripes - 1,
        }
    }

    #[inline]
    fn stripe(&self) -> &HttpStripe {
        &self.stripes[thread_index() & self.mask]
    }

    // Every update is Relaxed: counters order nothing, and a read sums a
    // snapshot. Gauges subtract by adding the two's complement.

    #[inline]
    pub(crate) fn connection_opened(&self) {
        self.stripe().connections.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn connection_closed(&self) {
        self.stripe()
            .connections
            .fetch_add(u64::MAX, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn stream_opened(&self) {
        self.stripe().streams.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn stream_closed(&self) {
        self.stripe().streams.fetch_add(u64::MAX, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn handler_started(&self) {
        self.stripe().handlers.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn handler_finished(&self) {
        self.stripe()
            .handlers
            .fetch_add(u64::MAX, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn dropped(&self, messages: u64) {
        self.stripe().dropped.fetch_add(messages, Ordering::Relaxed);
    }

    /// A stream ended by the server for `reason` (one of [`STREAM_ENDS`]).
    pub(crate) fn stream_ended(&self, reason: Reason) {
        if let Some(i) = stream_end_index(reason) {
            self.stripe().streams_ended[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    #[inline]
    pub(crate) fn state_rejected(&self, cause: StateRejection) {
        self.stripe().states_rejected[cause.index()].fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn response(&self, status: u16) {
        self.stripe().responses[code_index(status)].fetch_add(1, Ordering::Relaxed);
    }

    fn sum(&self, field: impl Fn(&HttpStripe) -> &AtomicU64) -> u64 {
        self.stripes.iter().fold(0u64, |sum, s| {
            sum.wrapping_add(field(s).load(Ordering::Relaxed))
        })
    }

    /// A gauge's sum; a snapshot taken while it moves may be a moment
    /// behind, and is clamped at 0.
    fn gauge(&self, field: impl Fn(&HttpStripe) -> &AtomicU64) -> u64 {
        let sum = self.sum(field);
        if sum > i64::MAX as u64 {
            0
        } else {
            sum
        }
    }

    pub(crate) fn snapshot(&self) -> HttpStats {
        let mut responses = [0; CODES.len() + 1];
        for (i, out) in responses.iter_mut().enumerate() {
            *out = self.sum(|s| &s.responses[i]);
        }
        let mut states_rejected = [0; StateRejection::ALL.len()];
        for (i, out) in states_rejected.iter_mut().enumerate() {
            *out = self.sum(|s| &s.states_rejected[i]);
        }
        let mut streams_ended = [0; STREAM_ENDS.len()];
        for (i, out) in streams_ended.iter_mut().enumerate() {
            *out = self.sum(|s| &s.streams_ended[i]);
        }
        HttpStats {
            connections_open: self.gauge(|s| &s.connections),
            streams_open: self.gauge(|s| &s.streams),
            handlers_in_flight: self.gauge(|s| &s.handlers),
            notifications_dropped: self.sum(|s| &s.dropped),
            event_log_bytes: 0,
            request_states_unused: 0,
            responses,
            states_rejected,
            streams_ended,
        }
    }
}

/// Appends the HTTP metrics of `stats` to `out` in Prometheus text format
/// (after the registry's: see [`crate::metrics::write`]).
pub(crate) fn write(out: &mut String, stats: &HttpStats) {
    // Writing to a String cannot fail.
    let _ = write_all(out, stats);
}

fn write_all(out: &mut String, stats: &HttpStats) -> std::fmt::Result {
    let gauges = [
        (
            "sessionreg_http_connections_open",
            "Connections open (served by sessionreg::http::serve).",
            stats.connections_open,
        ),
        (
            "sessionreg_http_streams_open",
            "SSE streams open (standalone GET streams and streamed POST replies).",
            stats.streams_open,
        ),
        (
            "sessionreg_http_handlers_in_flight",
            "Application handlers running.",
            stats.handlers_in_flight,
        ),
        (
            "sessionreg_http_event_log_bytes",
            "Bytes held by the event logs of every session (for resumable SSE streams).",
            stats.event_log_bytes,
        ),
        (
            "sessionreg_request_states_unused",
            "Single-use 2026-07-28 requestStates sealed and not yet used or expired.",
            stats.request_states_unused,
        ),
    ];
    for (name, help, value) in gauges {
        writeln!(out, "# HELP {name} {help}")?;
        writeln!(out, "# TYPE {name} gauge")?;
        writeln!(out, "{name} {value}")?;
    }
    writeln!(
        out,
        "# HELP sessionreg_http_responses_total HTTP responses written by the session manager, by status code."
    )?;
    writeln!(out, "# TYPE sessionreg_http_responses_total counter")?;
    for (code, count) in CODES.iter().zip(stats.responses) {
        writeln!(
            out,
            "sessionreg_http_responses_total{{code=\"{code}\"}} {count}"
        )?;
    }
    if stats.responses[OTHER] > 0 {
        writeln!(
            out,
            "sessionreg_http_responses_total{{code=\"other\"}} {}",
            stats.responses[OTHER]
        )?;
    }
    writeln!(
        out,
        "# HELP sessionreg_request_state_rejected_total 2026-07-28 requestStates refused, by cause."
    )?;
    writeln!(
        out,
        "# TYPE sessionreg_request_state_rejected_total counter"
    )?;
    for cause in StateRejection::ALL {
        writeln!(
            out,
            "sessionreg_request_state_rejected_total{{cause=\"{}\"}} {}",
            cause.as_str(),
            stats.states_rejected[cause.index()]
        )?;
    }
    writeln!(
        out,
        "# HELP sessionreg_http_streams_ended_total Standalone GET streams the server ended, by reason: the credential they were opened with expired or was withdrawn."
    )?;
    writeln!(out, "# TYPE sessionreg_http_streams_ended_total counter")?;
    for (reason, count) in STREAM_ENDS.iter().zip(stats.streams_ended) {
        writeln!(
            out,
            "sessionreg_http_streams_ended_total{{reason=\"{}\"}} {count}",
            reason.as_str()
        )?;
    }
    writeln!(
        out,
        "# HELP sessionreg_http_notifications_dropped_total Server-to-client messages dropped because their stream could not take them."
    )?;
    writeln!(
        out,
        "# TYPE sessionreg_http_notifications_dropped_total counter"
    )?;
    writeln!(
        out,
        "sessionreg_http_notifications_dropped_total {}",
        stats.notifications_dropped
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_sum_across_threads() {
        let counters = std::sync::Arc::new(HttpCounters::new());
        counters.stream_opened();
        counters.stream_opened();
        let other = std::sync::Arc::clone(&counters);
        // Closed on another thread (another stripe): the sum is exact.
        std::thread::spawn(move || other.stream_closed())
            .join()
            .unwrap();
        counters.response(200);
        counters.response(429);
        counters.response(429);
        counters.response(418);
        counters.dropped(3);
        counters.stream_ended(Reason::CredentialWithdrawn);
        counters.stream_ended(Reason::Lagged);
        let stats = counters.snapshot();
        assert_eq!(stats.streams_open, 1);
        assert_eq!(stats.responses(429), 2);
        assert_eq!(stats.responses(418), 0);
        assert_eq!(stats.responses_total(), 4);
        let mut text = String::new();
        write(&mut text, &stats);
        for line in [
            "sessionreg_http_connections_open 0",
            "sessionreg_http_streams_open 1",
            "sessionreg_http_handlers_in_flight 0",
            "sessionreg_http_responses_total{code=\"200\"} 1",
            "sessionreg_http_responses_total{code=\"429\"} 2",
            "sessionreg_http_responses_total{code=\"503\"} 0",
            "sessionreg_http_responses_total{code=\"other\"} 1",
            "sessionreg_http_notifications_dropped_total 3",
            "sessionreg_http_streams_ended_total{reason=\"credential_expired\"} 0",
            "sessionreg_http_streams_ended_total{reason=\"credential_withdrawn\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }

    #[test]
    fn a_gauge_read_mid_update_is_never_negative() {
        let counters = HttpCounters::new();
        counters.handler_finished();
        assert_eq!(counters.snapshot().handlers_in_flight, 0);
    }
}

//! The listen streams' metrics, in Prometheus text:
//!
//! ```text
//! sessionreg_listeners_live                      gauge    listen streams open
//! sessionreg_listeners_capacity                  gauge    listen streams open at most
//! sessionreg_listeners_opened_total              counter  listen streams opened
//! sessionreg_listeners_ended_total{reason}       counter  ... ended: disconnected | lagged | shutdown | drained | unavailable
//!                                                          | credential_expired | credential_withdrawn
//! sessionreg_listeners_resources                 gauge    resource URIs some stream (or session) listens to
//! sessionreg_listeners_uri_bytes                 gauge    bytes of resource URIs the streams' filters and sessions' subscriptions keep
//! sessionreg_listeners_notifications_total       counter  publications queued for a stream (or sent to a session)
//! sessionreg_listeners_merged_total              counter  list changes a stream had waiting already (heard as one)
//! sessionreg_publications_total                  counter  publications made through the endpoint's publisher
//! ```
//!
//! And the fleet's bus (`bus.rs`), declared always (so a dashboard's names
//! exist on every node), with samples only where a bus is attached:
//!
//! ```text
//! sessionreg_bus_up                              gauge    1 while the bus carries publications both ways, else 0
//! sessionreg_bus_reconnects_total                counter  times the link came back after it was down
//! sessionreg_bus_published_total                 counter  publications of this node handed to the bus
//! sessionreg_bus_received_total                  counter  publications of other nodes delivered here
//! sessionreg_bus_dropped_total                   counter  publications of this node the bus could not carry
//! sessionreg_bus_record_resets_total             counter  times the record of used single-use states was found lost or replaced
//! sessionreg_bus_nodes                           gauge    the fleet's nodes as last counted (each says it is alive every heartbeat)
//! sessionreg_bus_frames_rejected_total{cause}    counter  frames from the channel dropped: malformed | unknown_key | unauthenticated | stale | replayed
//! ```

use super::bus::FrameRejection;
use super::{Listeners, Publisher};
use crate::Reason;
use std::fmt::Write;

/// The reasons a listen stream ends for, in label order.
const ENDS: [Reason; 7] = [
    Reason::Disconnected,
    Reason::Lagged,
    Reason::Shutdown,
    Reason::Drained,
    Reason::Unavailable,
    Reason::CredentialExpired,
    Reason::CredentialWithdrawn,
];

/// Appends the listen streams' metrics to `out`.
pub(crate) fn write(out: &mut String, listeners: &Listeners, publisher: &Publisher) {
    // Writing to a String cannot fail.
    let _ = write_all(out, listeners, publisher);
}

fn write_all(out: &mut String, listeners: &Listeners, publisher: &Publisher) -> std::fmt::Result {
    let stats = listeners.registry.stats();
    let gauges = [
        (
            "sessionreg_listeners_live",
            "Listen streams (subscriptions/listen) open.",
            stats.live,
        ),
        (
            "sessionreg_listeners_capacity",
            "Listen streams open at most, all principals together.",
            listeners.registry.capacity() as u64,
        ),
        (
            "sessionreg_listeners_resources",
            "Resource URIs a listen stream or a legacy session listens to.",
            listeners.topics.uris() as u64,
        ),
        (
            "sessionreg_listeners_uri_bytes",
            "Bytes of resource URIs the listen streams' filters and the legacy sessions' subscriptions keep (each holder counted).",
            listeners.budget.held() as u64,
        ),
    ];
    for (name, help, value) in gauges {
        writeln!(out, "# HELP {name} {help}")?;
        writeln!(out, "# TYPE {name} gauge")?;
        writeln!(out, "{name} {value}")?;
    }
    let counters = [
        (
            "sessionreg_listeners_opened_total",
            "Listen streams opened.",
            stats.created,
        ),
        (
            "sessionreg_listeners_notifications_total",
            "Publications queued for a listen stream or sent to a legacy session.",
            listeners.delivered(),
        ),
        (
            "sessionreg_listeners_merged_total",
            "List changes a listen stream had waiting already: the client hears them as one.",
            listeners.merged(),
        ),
        (
            "sessionreg_publications_total",
            "Publications made through the endpoint's publisher.",
            publisher.published(),
        ),
    ];
    for (name, help, value) in counters {
        writeln!(out, "# HELP {name} {help}")?;
        writeln!(out, "# TYPE {name} counter")?;
        writeln!(out, "{name} {value}")?;
    }
    write_bus(out, publisher)?;
    writeln!(
        out,
        "# HELP sessionreg_listeners_ended_total Listen streams ended, by reason."
    )?;
    writeln!(out, "# TYPE sessionreg_listeners_ended_total counter")?;
    for reason in ENDS {
        writeln!(
            out,
            "sessionreg_listeners_ended_total{{reason=\"{}\"}} {}",
            reason.as_str(),
            stats.terminated(reason)
        )?;
    }
    Ok(())
}

/// The bus's families; their samples when a bus is attached.
fn write_bus(out: &mut String, publisher: &Publisher) -> std::fmt::Result {
    let counts = publisher.bus_link().map(|link| link.counts());
    let families = [
        (
            "sessionreg_bus_up",
            "gauge",
            "1 while the fleet's bus carries publications both ways, else 0 (no sample: no bus).",
            counts.map(|c| u64::from(c.up)),
        ),
        (
            "sessionreg_bus_reconnects_total",
            "counter",
            "Times the link to the fleet's bus came back after it was down.",
            counts.map(|c| c.reconnects),
        ),
        (
            "sessionreg_bus_published_total",
            "counter",
            "Publications of this node handed to the fleet's bus.",
            counts.map(|c| c.published),
        ),
        (
            "sessionreg_bus_received_total",
            "counter",
            "Publications of other nodes the fleet's bus delivered here.",
            counts.map(|c| c.received),
        ),
        (
            "sessionreg_bus_dropped_total",
            "counter",
            "Publications of this node the fleet's bus could not carry (its queue full, or its link down).",
            counts.map(|c| c.dropped),
        ),
        (
            "sessionreg_bus_record_resets_total",
            "counter",
            "Times the fleet's record of used single-use requestStates was found lost or replaced (flushed, restarted, failed over): states sealed before are refused.",
            counts.map(|c| c.record_resets),
        ),
        (
            "sessionreg_bus_nodes",
            "gauge",
            "The fleet's nodes as this node last counted them on the bus (each says it is alive every heartbeat; 0: never counted): a node's share of a rate limit while Redis cannot decide is the limit divided by it.",
            counts.map(|c| c.nodes),
        ),
    ];
    for (name, kind, help, value) in families {
        writeln!(out, "# HELP {name} {help}")?;
        writeln!(out, "# TYPE {name} {kind}")?;
        if let Some(value) = value {
            writeln!(out, "{name} {value}")?;
        }
    }
    let name = "sessionreg_bus_frames_rejected_total";
    writeln!(
        out,
        "# HELP {name} Frames from the fleet's bus channel dropped unread, by cause: not a frame of this bus, a key id not held, a tag that does not verify (forged), sent outside the frame age, or heard already (replayed)."
    )?;
    writeln!(out, "# TYPE {name} counter")?;
    if let Some(counts) = counts {
        for (cause, value) in FrameRejection::ALL.iter().zip(counts.frames_rejected) {
            writeln!(out, "{name}{{cause=\"{}\"}} {value}", cause.as_str())?;
        }
    }
    Ok(())
}

//! The listen streams' metrics, in Prometheus text:
//!
//! ```text
//! sessionreg_listeners_live                      gauge    listen streams open
//! sessionreg_listeners_capacity                  gauge    listen streams open at most
//! sessionreg_listeners_opened_total              counter  listen streams opened
//! sessionreg_listeners_ended_total{reason}       counter  ... ended: disconnected | lagged | shutdown | drained | unavailable
//! sessionreg_listeners_resources                 gauge    resource URIs some stream (or session) listens to
//! sessionreg_listeners_notifications_total       counter  publications queued for a stream (or sent to a session)
//! sessionreg_publications_total                  counter  publications made through the endpoint's publisher
//! ```

use super::{Listeners, Publisher};
use crate::Reason;
use std::fmt::Write;

/// The reasons a listen stream ends for, in label order.
const ENDS: [Reason; 5] = [
    Reason::Disconnected,
    Reason::Lagged,
    Reason::Shutdown,
    Reason::Drained,
    Reason::Unavailable,
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

//! The registry's counters in Prometheus text format, for any server to
//! mount on a route of its own (the HTTP layer's example serves them on
//! `GET /metrics`). The names are stable: tests and dashboards read them.
//!
//! ```
//! use sessionreg::{metrics, Registry};
//!
//! let registry = Registry::<()>::builder().node_id(3).build().unwrap();
//! let text = metrics::render(&registry.stats());
//! assert!(text.lines().any(|l| l == "sessionreg_node_id 3"));
//! ```

use crate::{Miss, Reason, Stats};
use std::fmt::Write;

/// Renders `stats` as Prometheus text (exposition format 0.0.4):
///
/// ```text
/// sessionreg_sessions_live                       gauge
/// sessionreg_sessions_created_total              counter
/// sessionreg_sessions_terminated_total{reason}   counter
/// sessionreg_lookups_rejected_total{cause}       counter   (another principal's id counts as unknown)
/// sessionreg_sessions_capacity                   gauge
/// sessionreg_node_id                             gauge
/// ```
pub fn render(stats: &Stats) -> String {
    let mut out = String::with_capacity(1536);
    write(&mut out, stats);
    out
}

/// Appends [`render`]'s text to `out`, for a server that adds metrics of
/// its own after the registry's.
pub fn write(out: &mut String, stats: &Stats) {
    // Writing to a String cannot fail.
    let _ = write_all(out, stats);
}

/// The content type to serve [`render`]'s text with.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn write_all(out: &mut String, stats: &Stats) -> std::fmt::Result {
    writeln!(
        out,
        "# HELP sessionreg_sessions_live Sessions created and not yet terminated."
    )?;
    writeln!(out, "# TYPE sessionreg_sessions_live gauge")?;
    writeln!(out, "sessionreg_sessions_live {}", stats.live)?;
    writeln!(
        out,
        "# HELP sessionreg_sessions_created_total Sessions ever created."
    )?;
    writeln!(out, "# TYPE sessionreg_sessions_created_total counter")?;
    writeln!(out, "sessionreg_sessions_created_total {}", stats.created)?;
    writeln!(
        out,
        "# HELP sessionreg_sessions_terminated_total Sessions ended, by reason."
    )?;
    writeln!(out, "# TYPE sessionreg_sessions_terminated_total counter")?;
    for reason in Reason::ALL {
        writeln!(
            out,
            "sessionreg_sessions_terminated_total{{reason=\"{}\"}} {}",
            reason.as_str(),
            stats.terminated(reason)
        )?;
    }
    writeln!(
        out,
        "# HELP sessionreg_lookups_rejected_total Session lookups that found nothing, by cause."
    )?;
    writeln!(out, "# TYPE sessionreg_lookups_rejected_total counter")?;
    for cause in Miss::ALL {
        let count = match cause {
            // Not exported on its own: whoever can read the metrics could
            // tell that a live id they hold is someone else's (the lookup
            // answered like an unknown id, so it is counted like one).
            Miss::Principal => continue,
            Miss::Unknown => stats.misses(cause) + stats.misses(Miss::Principal),
            _ => stats.misses(cause),
        };
        writeln!(
            out,
            "sessionreg_lookups_rejected_total{{cause=\"{}\"}} {count}",
            cause.as_str(),
        )?;
    }
    writeln!(
        out,
        "# HELP sessionreg_sessions_capacity Maximum live sessions."
    )?;
    writeln!(out, "# TYPE sessionreg_sessions_capacity gauge")?;
    writeln!(out, "sessionreg_sessions_capacity {}", stats.capacity)?;
    writeln!(
        out,
        "# HELP sessionreg_node_id The node id in this process's session ids (their first two hex digits)."
    )?;
    writeln!(out, "# TYPE sessionreg_node_id gauge")?;
    writeln!(out, "sessionreg_node_id {}", stats.node)
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use crate::{Reason, Registry};

    #[test]
    fn names_and_values() {
        let registry = Registry::builder().capacity(7).build().unwrap();
        let id = registry.insert(()).unwrap();
        let _ = registry.terminate(&id, Reason::Deleted);
        let _ = registry.get(&id);
        let text = super::render(&registry.stats());
        for line in [
            "# TYPE sessionreg_sessions_live gauge",
            "sessionreg_sessions_live 0",
            "sessionreg_sessions_created_total 1",
            "sessionreg_sessions_terminated_total{reason=\"deleted\"} 1",
            "sessionreg_sessions_terminated_total{reason=\"idle_timeout\"} 0",
            "sessionreg_sessions_terminated_total{reason=\"failed\"} 0",
            "sessionreg_sessions_terminated_total{reason=\"shutdown\"} 0",
            "sessionreg_sessions_terminated_total{reason=\"rejected\"} 0",
            "sessionreg_lookups_rejected_total{cause=\"malformed\"} 0",
            "sessionreg_lookups_rejected_total{cause=\"unknown\"} 0",
            "sessionreg_lookups_rejected_total{cause=\"forged\"} 0",
            "sessionreg_lookups_rejected_total{cause=\"expired\"} 0",
            "# TYPE sessionreg_sessions_capacity gauge",
            "sessionreg_sessions_capacity 7",
            "# TYPE sessionreg_node_id gauge",
            "sessionreg_node_id 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        assert!(text.contains("sessionreg_lookups_rejected_total{cause=\"stale\"}"));
    }
}

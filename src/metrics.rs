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

use crate::tasks::{EndKind, TaskStats};
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

/// Appends a [`TaskStore`](crate::TaskStore)'s counters to `out`:
///
/// ```text
/// sessionreg_tasks_live                          gauge     tasks held: running, or ended and retained
/// sessionreg_tasks_running                       gauge     tasks whose work has not ended
/// sessionreg_tasks_created_total                 counter
/// sessionreg_tasks_ended_total{outcome}          counter   outcome = completed | failed | cancelled | expired | abandoned
/// sessionreg_task_lookups_rejected_total{cause}  counter   (guessed ids show as unknown or forged)
/// sessionreg_tasks_capacity                      gauge
/// ```
pub fn write_tasks(out: &mut String, stats: &TaskStats) {
    let _ = write_tasks_all(out, stats);
}

fn write_tasks_all(out: &mut String, stats: &TaskStats) -> std::fmt::Result {
    let gauge = |out: &mut String, name: &str, help: &str, value: u64| {
        writeln!(out, "# HELP {name} {help}")?;
        writeln!(out, "# TYPE {name} gauge")?;
        writeln!(out, "{name} {value}")
    };
    gauge(
        out,
        "sessionreg_tasks_live",
        "Tasks held: running, or ended and retained.",
        stats.registry.live,
    )?;
    gauge(
        out,
        "sessionreg_tasks_running",
        "Tasks whose work has not ended.",
        stats.running(),
    )?;
    writeln!(
        out,
        "# HELP sessionreg_tasks_created_total Tasks ever created."
    )?;
    writeln!(out, "# TYPE sessionreg_tasks_created_total counter")?;
    writeln!(
        out,
        "sessionreg_tasks_created_total {}",
        stats.registry.created
    )?;
    writeln!(
        out,
        "# HELP sessionreg_tasks_ended_total Tasks ended, by outcome."
    )?;
    writeln!(out, "# TYPE sessionreg_tasks_ended_total counter")?;
    for kind in EndKind::ALL {
        writeln!(
            out,
            "sessionreg_tasks_ended_total{{outcome=\"{}\"}} {}",
            kind.as_str(),
            stats.ended(kind)
        )?;
    }
    write_misses(
        out,
        "sessionreg_task_lookups_rejected_total",
        "Task lookups by id that found nothing, by cause.",
        &stats.registry,
    )?;
    gauge(
        out,
        "sessionreg_tasks_capacity",
        "Maximum tasks held.",
        stats.registry.capacity as u64,
    )
}

/// Appends a [`Handles`](crate::handles::Handles) store's counters to `out`:
///
/// ```text
/// sessionreg_handles_live                          gauge
/// sessionreg_handles_minted_total                  counter
/// sessionreg_handles_ended_total{reason}           counter   idle_timeout: expired; deleted: destroyed
/// sessionreg_handle_lookups_rejected_total{cause}  counter
/// ```
pub fn write_handles(out: &mut String, stats: &Stats) {
    let _ = write_handles_all(out, stats);
}

fn write_handles_all(out: &mut String, stats: &Stats) -> std::fmt::Result {
    writeln!(out, "# HELP sessionreg_handles_live Handles alive.")?;
    writeln!(out, "# TYPE sessionreg_handles_live gauge")?;
    writeln!(out, "sessionreg_handles_live {}", stats.live)?;
    writeln!(
        out,
        "# HELP sessionreg_handles_minted_total Handles ever minted."
    )?;
    writeln!(out, "# TYPE sessionreg_handles_minted_total counter")?;
    writeln!(out, "sessionreg_handles_minted_total {}", stats.created)?;
    writeln!(
        out,
        "# HELP sessionreg_handles_ended_total Handles ended, by reason."
    )?;
    writeln!(out, "# TYPE sessionreg_handles_ended_total counter")?;
    for reason in [Reason::IdleTimeout, Reason::Deleted, Reason::Shutdown] {
        writeln!(
            out,
            "sessionreg_handles_ended_total{{reason=\"{}\"}} {}",
            reason.as_str(),
            stats.terminated(reason)
        )?;
    }
    write_misses(
        out,
        "sessionreg_handle_lookups_rejected_total",
        "Handle lookups that found nothing, by cause.",
        stats,
    )
}

/// A lookup-miss counter family: every cause but `principal`, which counts
/// as `unknown` (see [`write`]).
fn write_misses(out: &mut String, name: &str, help: &str, stats: &Stats) -> std::fmt::Result {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} counter")?;
    for cause in Miss::ALL {
        let count = match cause {
            // Not exported on its own: whoever can read the metrics could
            // tell that a live id they hold is someone else's (the lookup
            // answered like an unknown id, so it is counted like one).
            Miss::Principal => continue,
            Miss::Unknown => stats.misses(cause) + stats.misses(Miss::Principal),
            _ => stats.misses(cause),
        };
        writeln!(out, "{name}{{cause=\"{}\"}} {count}", cause.as_str())?;
    }
    Ok(())
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
    // The session reasons always (dashboards expect every label); any
    // other reason a registry ended entries for, once it has.
    let shown = Reason::ALL
        .into_iter()
        .filter(|r| Reason::SESSION.contains(r) || stats.terminated(*r) > 0);
    for reason in shown {
        writeln!(
            out,
            "sessionreg_sessions_terminated_total{{reason=\"{}\"}} {}",
            reason.as_str(),
            stats.terminated(reason)
        )?;
    }
    write_misses(
        out,
        "sessionreg_lookups_rejected_total",
        "Session lookups that found nothing, by cause.",
        stats,
    )?;
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

    #[test]
    fn task_and_handle_names() {
        use crate::handles::Handles;
        use crate::{Ended, TaskStore};
        let store: TaskStore<(), ()> = TaskStore::builder().capacity(5).build().unwrap();
        let running = store.create(()).unwrap();
        // The live task's id with one bit of its secret flipped: forged.
        let mut forged = running.id().to_bytes();
        forged[23] ^= 1;
        let _ = running.finish(Ended::Cancelled);
        let _ = store.get(&crate::SessionId::from_bytes(forged));
        let mut text = String::new();
        super::write_tasks(&mut text, &store.stats());
        let handles: Handles<(), ()> = Handles::builder().build().unwrap();
        let _ = handles.mint((), ()).unwrap();
        super::write_handles(&mut text, &handles.stats());
        for line in [
            "sessionreg_tasks_live 1",
            "sessionreg_tasks_running 0",
            "sessionreg_tasks_created_total 1",
            "sessionreg_tasks_ended_total{outcome=\"cancelled\"} 1",
            "sessionreg_tasks_ended_total{outcome=\"completed\"} 0",
            "sessionreg_task_lookups_rejected_total{cause=\"forged\"} 1",
            "sessionreg_tasks_capacity 5",
            "sessionreg_handles_live 1",
            "sessionreg_handles_minted_total 1",
            "sessionreg_handles_ended_total{reason=\"idle_timeout\"} 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}

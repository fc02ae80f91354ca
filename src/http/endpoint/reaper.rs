//! The idle reaper: a tokio task that periodically ends idle sessions
//! through the registry's [`reap_idle`](crate::Registry::reap_idle).
//!
//! It belongs to the manager: it starts with the first request the manager
//! serves inside a tokio runtime (or with [`serve`](crate::http::serve), or an
//! explicit [`start_reaper`](crate::http::SessionManager::start_reaper)), so a manager
//! mounted anywhere (axum, tower, bare hyper) reaps without hand wiring; it
//! stops when the last clone of the manager is dropped. There is at most
//! one per manager. It also sweeps the record of unused single-use
//! `requestState`s, which expire with their states, the tasks ended and
//! kept past their retention, and whatever the application reaps in
//! [`App::reap`].
//!
//! It never cancels anything: a session with a request in flight (an
//! [`InFlight`](crate::InFlight) guard alive) is not idle, however long the
//! request runs.
//!
//! Each registry is swept in budgeted steps ([`SWEEP_BUDGET`] slots at a
//! time), to the end of a pass, yielding to the runtime between steps: no
//! poll of the reaper holds its worker longer than one step, however many
//! slots the registry has ever used.

use crate::http::app::App;
use crate::http::run::hub::Hub;
use crate::{SweepStep, SWEEP_BUDGET};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// [`SessionManager::start_reaper`](crate::http::SessionManager::start_reaper).
pub(crate) fn start<A: App>(hub: &Arc<Hub<A>>) -> bool {
    // Sessions with an idle timeout at its period; the rest (the record of
    // unused single-use `requestState`s, which expire with the states; the
    // tasks past their retention; the application's own) at theirs, at
    // most a second.
    let sessions = hub.config.reap_interval;
    let states =
        (hub.config.request_state_ttl / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let others = hub
        .tasks
        .as_ref()
        .map_or(states, |t| t.reap_period().min(states));
    let period = sessions.map_or(others, |s| s.min(others));
    if hub.reaper.get().is_some() {
        return true;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    let mut started = false;
    hub.reaper.get_or_init(|| {
        started = true;
        // A weak reference: the task must not keep the manager alive (the
        // hub's `Drop` aborts the task).
        let weak = Arc::downgrade(hub);
        runtime
            .spawn(async move {
                let mut tick = tokio::time::interval(period.max(Duration::from_millis(1)));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut sessions_swept: Option<tokio::time::Instant> = None;
                loop {
                    let now = tick.tick().await;
                    let due = |every| sessions_swept.is_none_or(|at| now - at >= every);
                    let ended = match sessions {
                        Some(every) if due(every) => {
                            sessions_swept = Some(now);
                            let step = |hub: &Hub<A>| hub.registry.reap_idle_step(SWEEP_BUDGET);
                            let Some(ended) = sweep(&weak, step).await else {
                                return;
                            };
                            ended
                        }
                        _ => 0,
                    };
                    let step = |hub: &Hub<A>| hub.sealer.unused().reap_idle_step(SWEEP_BUDGET);
                    if sweep(&weak, step).await.is_none() {
                        return;
                    }
                    let step = |hub: &Hub<A>| match hub.tasks.as_ref() {
                        Some(tasks) => tasks.reap_step(SWEEP_BUDGET),
                        None => SweepStep {
                            pass_done: true,
                            ..SweepStep::default()
                        },
                    };
                    if sweep(&weak, step).await.is_none() {
                        return;
                    }
                    let Some(hub) = weak.upgrade() else { return };
                    hub.app().reap();
                    drop(hub);
                    if ended > 0 {
                        tracing::debug!(ended, "reaped idle sessions");
                    }
                }
            })
            .abort_handle()
    });
    if started {
        tracing::debug!(?period, "idle reaper started");
    }
    true
}

/// Sweeps one registry of the hub with `step` to the end of a pass, a step
/// at a time, yielding to the runtime between steps; returns what the pass
/// ended, or `None` once the manager is gone. The hub is looked up afresh
/// for each step, so that the task never keeps the manager alive across a
/// yield.
async fn sweep<A: App>(weak: &Weak<Hub<A>>, step: impl Fn(&Hub<A>) -> SweepStep) -> Option<usize> {
    let mut ended = 0;
    loop {
        let hub = weak.upgrade()?;
        let done = step(&hub);
        drop(hub);
        ended += done.ended;
        if done.pass_done {
            return Some(ended);
        }
        tokio::task::yield_now().await;
    }
}

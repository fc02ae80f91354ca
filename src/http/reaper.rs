//! The idle reaper: a tokio task that periodically ends idle sessions
//! through the registry's [`reap_idle`](crate::Registry::reap_idle).
//!
//! It belongs to the manager: it starts with the first request the manager
//! serves inside a tokio runtime (or with [`serve`](super::serve), or an
//! explicit [`start_reaper`](super::SessionManager::start_reaper)), so a manager
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

use super::app::App;
use super::state::State;
use std::sync::Arc;
use std::time::Duration;

/// [`SessionManager::start_reaper`](super::SessionManager::start_reaper).
pub(crate) fn start<A: App>(state: &Arc<State<A>>) -> bool {
    // Sessions with an idle timeout at its period; the rest (the record of
    // unused single-use `requestState`s, which expire with the states; the
    // tasks past their retention; the application's own) at theirs, at
    // most a second.
    let sessions = state.config.reap_interval;
    let states = (state.config.request_state_ttl / 4)
        .clamp(Duration::from_millis(10), Duration::from_secs(1));
    let others = state
        .tasks
        .as_ref()
        .map_or(states, |t| t.reap_period().min(states));
    let period = sessions.map_or(others, |s| s.min(others));
    if state.reaper.get().is_some() {
        return true;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    let mut started = false;
    state.reaper.get_or_init(|| {
        started = true;
        // A weak reference: the task must not keep the manager alive (the
        // state's `Drop` aborts the task).
        let weak = Arc::downgrade(state);
        runtime
            .spawn(async move {
                let mut tick = tokio::time::interval(period.max(Duration::from_millis(1)));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut sessions_swept: Option<tokio::time::Instant> = None;
                loop {
                    let now = tick.tick().await;
                    let Some(state) = weak.upgrade() else { return };
                    let due = |every| sessions_swept.is_none_or(|at| now - at >= every);
                    let ended = match sessions {
                        Some(every) if due(every) => {
                            sessions_swept = Some(now);
                            state.registry.reap_idle()
                        }
                        _ => 0,
                    };
                    state.sealer.unused().reap_idle();
                    if let Some(tasks) = state.tasks.as_ref() {
                        tasks.reap();
                    }
                    state.app().reap();
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

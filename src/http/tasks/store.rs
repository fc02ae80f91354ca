//! The tasks of one endpoint ([`Tasks`]): the store, its places (the
//! capacity and each principal's share), and the token every task's work
//! is cancelled through at shutdown.

use super::places::Places;
use super::Store;
use crate::http::wire::config::Config;
use crate::http::wire::config_error::ConfigError;
use crate::{SweepStep, TaskStats, TaskStore};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The tasks of one endpoint: the store, its places (the capacity and each
/// principal's share), and the token every task's work is cancelled through
/// at shutdown.
pub(crate) struct Tasks {
    pub(super) store: Store,
    pub(super) places: Arc<Places>,
    pub(super) root: CancellationToken,
    pub(super) retention: Duration,
    pub(super) ttl_ends_work: bool,
    pub(super) input_timeout: Option<Duration>,
}

impl Tasks {
    /// The tasks `config` (validated) describes, their ids on `node`.
    pub(crate) fn new(config: &Config, node: u8) -> Result<Tasks, ConfigError> {
        let store = TaskStore::builder()
            .capacity(config.task_capacity)
            .retention(config.task_retention)
            .node_id(node)
            .build()
            .map_err(|e| {
                ConfigError::out_of_range("task_capacity", config.task_capacity, e.to_string())
            })?;
        let places = Places::new(config, reap_period(config.task_retention))?;
        Ok(Tasks {
            store,
            places: Arc::new(places),
            root: CancellationToken::new(),
            retention: config.task_retention,
            ttl_ends_work: config.task_ttl_ends_work,
            input_timeout: config.task_input_timeout,
        })
    }

    /// Frees the tasks ended and kept for their retention: one step of a
    /// pass, of at most `budget` slots.
    pub(crate) fn reap_step(&self, budget: usize) -> SweepStep {
        self.store.reap_step(budget)
    }

    /// Stops every task's work (each ends `abandoned`, unless it ended
    /// first) and frees every task.
    pub(crate) fn shutdown(&self) -> usize {
        self.root.cancel();
        self.store.shutdown()
    }

    pub(crate) fn stats(&self) -> TaskStats {
        self.store.stats()
    }

    /// The period the reaper should sweep the store at, at most.
    pub(crate) fn reap_period(&self) -> Duration {
        reap_period(self.retention)
    }
}

/// The reaper's period for a store with `retention`.
fn reap_period(retention: Duration) -> Duration {
    (retention / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

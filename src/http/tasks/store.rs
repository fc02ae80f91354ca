//! The tasks of one endpoint ([`Tasks`]): the store, and the token every
//! task's work is cancelled through at shutdown.

use super::Store;
use crate::http::config::Config;
use crate::{TaskStats, TaskStore};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The tasks of one endpoint: the store, and the token every task's work
/// is cancelled through at shutdown.
pub(crate) struct Tasks {
    pub(super) store: Store,
    pub(super) root: CancellationToken,
    pub(super) retention: Duration,
    pub(super) ttl_ends_work: bool,
}

impl Tasks {
    pub(crate) fn new(config: &Config, node: u8) -> Tasks {
        let store = TaskStore::builder()
            .capacity(config.task_capacity)
            .retention(config.task_retention)
            .node_id(node)
            .build()
            .expect("a capacity the builder checked");
        Tasks {
            store,
            root: CancellationToken::new(),
            retention: config.task_retention,
            ttl_ends_work: config.task_ttl_ends_work,
        }
    }

    /// Frees the tasks ended and kept for their retention.
    pub(crate) fn reap(&self) -> usize {
        self.store.reap()
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
        (self.retention / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

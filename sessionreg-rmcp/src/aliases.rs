//! The ids of restored sessions.
//!
//! rmcp restores a session (from `StreamableHttpServerConfig::session_store`,
//! after a restart or on another node) under the id its client already
//! holds, and every later request names it so. That id names no slot here:
//! the restored session gets a fresh entry with a registry id of its own
//! (this node's prefix, a new slot and secret), and this map leads the
//! client's id to it, for as long as the session lives.

use sessionreg::SessionId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// Client ids of restored sessions, each to the registry id of its entry.
#[derive(Default)]
pub(crate) struct Aliases {
    /// How many there are: read first, so that a server with no restored
    /// session never takes the lock.
    count: AtomicUsize,
    /// Keys are ids clients send, so the hasher is std's keyed one.
    map: RwLock<HashMap<Arc<str>, SessionId>>,
}

impl Aliases {
    /// The entry the client id `id` leads to, if `id` is a restored
    /// session's.
    #[inline]
    pub(crate) fn get(&self, id: &str) -> Option<SessionId> {
        // Relaxed: a hint that only skips the lock. A request that must see
        // an alias is ordered after the restore that made it by rmcp itself
        // (the same request, or one that waited for the restore to finish).
        if self.count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let map = self.map.read().unwrap_or_else(PoisonError::into_inner);
        map.get(id).copied()
    }

    /// From now on `id` leads to `entry`.
    pub(crate) fn insert(&self, id: Arc<str>, entry: SessionId) {
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        map.insert(id, entry);
        self.count.store(map.len(), Ordering::Relaxed);
    }

    /// `id` no longer leads anywhere, if it still leads to `entry` (a later
    /// restore of the same client id may have replaced it).
    pub(crate) fn remove(&self, id: &str, entry: SessionId) {
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if map.get(id) == Some(&entry) {
            map.remove(id);
            self.count.store(map.len(), Ordering::Relaxed);
        }
    }

    /// How many restored sessions are live.
    pub(crate) fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

//! The publisher's side of the bus ([`Outbox`]): a bounded queue to the
//! bus's task. Handing a publication over is one `try_send` (an `Arc`
//! clone): never a wait, never a serialization on the publisher's thread.
//! A full queue drops the publication, counts it, and marks the node as
//! having lost one (the task then tells the other nodes).

use super::parts::BusParts;
use crate::http::listen::bus::Outbound;
use crate::http::listen::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The sending side of the bus's queue.
pub(super) struct Outbox {
    queue: mpsc::Sender<Shared>,
    shared: Arc<BusParts>,
}

impl Outbox {
    /// A queue of `capacity` publications: its sending side, and the
    /// receiving side for the task.
    pub(super) fn new(capacity: usize, shared: Arc<BusParts>) -> (Outbox, mpsc::Receiver<Shared>) {
        let (queue, receiver) = mpsc::channel(capacity);
        (Outbox { queue, shared }, receiver)
    }
}

impl Outbound for Outbox {
    fn send(&self, publication: &Shared) {
        if self.queue.try_send(Arc::clone(publication)).is_err() {
            self.shared.link.dropped(1);
            // Relaxed: the task reads it when it next can; nothing else is
            // published under it.
            self.shared.lost.store(true, Ordering::Relaxed);
        }
    }
}

//! One listener's queue ([`Inbox`]): the core's [`Mailbox`](crate::Mailbox)
//! of publications, bounded, with the waker of the stream that drains it
//! and the reason it ended.
//!
//! Publishers offer (any thread, no lock, no allocation: one `Arc` clone);
//! the listener's body pops. A topic holds each of its listeners' inboxes
//! directly ([`Tap`]), so a delivery goes from the topic to the queue with
//! no lookup of the listener by id, and the fan-out can bring the next
//! listeners' queues into the cache while it delivers to this one
//! ([`Tap::prefetch`]). A full inbox is a listener that fell behind:
//! the offer fails, and the publisher ends the listener (it is never waited
//! for and never grows). The listener's end closes the inbox: after that,
//! nothing more is delivered (the mailbox's close is linearizable: a pop
//! after it finds nothing), and the body ends the stream.

use super::change::Shared;
use crate::http::access::auth::Principal;
use crate::mailbox::{Consumer, Mailbox, Popped, Pushed};
use crate::{Reason, SessionId};
use futures_util::task::AtomicWaker;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

/// The producers' side of one listener's queue.
pub(crate) struct Inbox {
    mailbox: Arc<Mailbox<Shared>>,
    waker: AtomicWaker,
    /// Why the listener ended: set (by the terminate winner) before the
    /// mailbox is closed, so the body that finds it closed reads it.
    ended: OnceLock<Reason>,
    /// The principal that opened the listener: only publications whose
    /// audience admits it are offered.
    owner: Option<Principal>,
    /// The listener's id, set once it is registered (before it joins any
    /// topic): what a publisher that finds its queue full ends it by.
    id: OnceLock<SessionId>,
}

/// A topic's hold on one listener: its inbox, compared and hashed by
/// identity (one listener, one inbox).
#[derive(Clone)]
pub(crate) struct Tap(pub(crate) Arc<Inbox>);

impl PartialEq for Tap {
    fn eq(&self, other: &Tap) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Tap {}

impl Hash for Tap {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.0).hash(state);
    }
}

impl fmt::Debug for Tap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The Debug form of an id names it without its secret.
        match self.0.id.get() {
            Some(id) => write!(f, "Tap({id:?})"),
            None => write!(f, "Tap({:p})", Arc::as_ptr(&self.0)),
        }
    }
}

impl Tap {
    /// First step of a delivery ahead of time: the inbox itself.
    #[inline]
    pub(crate) fn prefetch(&self) {
        crate::prefetch::prefetch(Arc::as_ptr(&self.0));
    }

    /// Second step, once the inbox is close: its queue's state word.
    #[inline]
    pub(crate) fn prefetch_queue(&self) {
        self.0.mailbox.prefetch_state();
    }

    /// Third step, once the state word is close: the slot the next offer
    /// writes.
    #[inline]
    pub(crate) fn prefetch_slot(&self) {
        self.0.mailbox.prefetch_push();
    }
}

/// What became of a publication offered to a listener.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offered {
    /// Queued for the listener's stream.
    Queued,
    /// The queue is full: the listener has fallen behind (end it).
    Full,
    /// The listener has ended.
    Closed,
}

/// The consumer's side: the listener's stream holds it.
pub(crate) struct Outbox {
    inbox: Arc<Inbox>,
    consumer: Consumer<Shared>,
}

/// What the listener's stream sends next.
pub(crate) enum Next {
    Publication(Shared),
    /// The listener ended, for this reason: nothing more comes.
    Ended(Reason),
}

impl Inbox {
    /// A queue of at most `capacity` publications (at least 1), for a
    /// listener of `owner`.
    pub(crate) fn new(capacity: usize, owner: Option<Principal>) -> (Arc<Inbox>, Outbox) {
        let (mailbox, consumer) =
            Mailbox::with_capacity(capacity.max(1)).expect("a capacity of at least 1");
        let inbox = Arc::new(Inbox {
            mailbox,
            waker: AtomicWaker::new(),
            ended: OnceLock::new(),
            owner,
            id: OnceLock::new(),
        });
        let outbox = Outbox {
            inbox: Arc::clone(&inbox),
            consumer,
        };
        (inbox, outbox)
    }

    /// The principal that opened the listener.
    pub(crate) fn owner(&self) -> Option<&Principal> {
        self.owner.as_ref()
    }

    /// Records the listener's id (once, when it is registered).
    pub(crate) fn set_id(&self, id: SessionId) {
        let _ = self.id.set(id);
    }

    /// The listener's id, once registered.
    pub(crate) fn id(&self) -> Option<&SessionId> {
        self.id.get()
    }

    /// Offers a publication, without waiting, and wakes the stream.
    pub(crate) fn offer(&self, publication: &Shared) -> Offered {
        match self.mailbox.push(Arc::clone(publication)) {
            Pushed::Queued => {
                self.waker.wake();
                Offered::Queued
            }
            Pushed::Full(_) => Offered::Full,
            Pushed::Closed(_) => Offered::Closed,
        }
    }

    /// Ends the queue (the listener's end, once): nothing queued or offered
    /// from now on is delivered, and the stream ends, for `reason`.
    pub(crate) fn close(&self, reason: Reason) {
        let _ = self.ended.set(reason);
        // Release by the mailbox's close pairs with the body's pop, which
        // then reads `ended` (set before).
        let _ = self.mailbox.close();
        self.waker.wake();
    }
}

impl Outbox {
    /// The next publication, or the end; `Pending` (with the waker kept)
    /// while the queue is empty.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Next> {
        if let Some(next) = self.try_next() {
            return Poll::Ready(next);
        }
        // Registered before looking again, so an offer between the two is
        // not lost.
        self.inbox.waker.register(cx.waker());
        match self.try_next() {
            Some(next) => Poll::Ready(next),
            None => Poll::Pending,
        }
    }

    fn try_next(&mut self) -> Option<Next> {
        match self.consumer.pop() {
            Popped::Item(publication) => Some(Next::Publication(publication)),
            Popped::Empty => None,
            Popped::Closed => Some(Next::Ended(
                self.inbox.ended.get().copied().unwrap_or(Reason::Shutdown),
            )),
        }
    }
}

//! One listener's queue ([`Inbox`]): the core's [`Mailbox`](crate::Mailbox)
//! of publications, bounded, with the waker of the stream that drains it
//! and the reason it ended.
//!
//! Publishers offer (any thread, no lock, no allocation: one `Arc` clone);
//! the listener's body pops. A list change is not queued: it raises its
//! kind's signal in the mailbox (one `fetch_or`, no slot, no clone), and a
//! second one before the body takes it changes nothing (the client hears
//! once that the list changed, and fetches it once). So a listener's queue
//! holds resource updates only, and list changes can neither fill it nor
//! be lost to a full one. A topic holds each of its listeners' inboxes and
//! mailboxes directly ([`Tap`]), so a delivery goes from the topic to the
//! queue with no lookup of the listener by id, and the fan-out can bring
//! the next listeners' queues into the cache while it delivers to this one
//! ([`Tap::prefetch`]). A full inbox is a listener that fell behind:
//! the offer fails, and the publisher ends the listener (it is never waited
//! for and never grows). The listener's end closes the inbox: after that,
//! nothing more is delivered (the mailbox's close is linearizable: a pop
//! after it finds nothing), and the body ends the stream.

use super::change::Shared;
use super::wakes::Wakes;
use crate::http::wire::principal::Principal;
use crate::mailbox::{Consumer, Mailbox, Popped, Pushed, Raised, Signal, Signals, Taken};
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
/// identity (one listener, one inbox), and the inbox's mailbox beside it, so
/// that a walk over a topic's members finds both lines a delivery touches
/// (the waker's, the queue's state word) in the member itself and can ask
/// for them together, neither waiting on the other. Two pointers: a kind's
/// member stays 32 bytes.
#[derive(Clone)]
pub(crate) struct Tap {
    inbox: Arc<Inbox>,
    mailbox: Arc<Mailbox<Shared>>,
}

impl PartialEq for Tap {
    fn eq(&self, other: &Tap) -> bool {
        Arc::ptr_eq(&self.inbox, &other.inbox)
    }
}

impl Eq for Tap {}

impl Hash for Tap {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.inbox).hash(state);
    }
}

impl fmt::Debug for Tap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The Debug form of an id names it without its secret.
        match self.inbox.id.get() {
            Some(id) => write!(f, "Tap({id:?})"),
            None => write!(f, "Tap({:p})", Arc::as_ptr(&self.inbox)),
        }
    }
}

impl Tap {
    /// A topic's hold on the listener of `inbox`.
    pub(crate) fn new(inbox: &Arc<Inbox>) -> Tap {
        Tap {
            inbox: Arc::clone(inbox),
            mailbox: Arc::clone(&inbox.mailbox),
        }
    }

    /// The listener's inbox.
    pub(crate) fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    /// First step of a delivery ahead of time: the inbox (its waker) and
    /// its queue's state word, both found in the member.
    #[inline]
    pub(crate) fn prefetch(&self) {
        crate::prefetch::prefetch(Arc::as_ptr(&self.inbox));
        self.mailbox.prefetch_state();
    }

    /// Second step, for a queued offer, once the state word is close: the
    /// slot the next offer writes.
    #[inline]
    pub(crate) fn prefetch_slot(&self) {
        self.mailbox.prefetch_push();
    }

    /// Offers a publication, without waiting, and wakes the stream (now,
    /// or with the publication's other wakes: [`Wakes`]).
    pub(crate) fn offer(&self, publication: &Shared, wakes: &mut Wakes<'_>) -> Offered {
        match self.mailbox.push(Arc::clone(publication)) {
            Pushed::Queued => {
                self.wake(wakes);
                Offered::Queued
            }
            Pushed::Full(_) => Offered::Full,
            Pushed::Closed(_) => Offered::Closed,
        }
    }

    /// Wakes the stream after a delivery: at once, or its waker gathered.
    #[inline]
    fn wake(&self, wakes: &mut Wakes<'_>) {
        if wakes.gathers() {
            if let Some(waker) = self.inbox.waker.take() {
                wakes.push(waker);
            }
        } else {
            self.inbox.waker.wake();
        }
    }

    /// Raises a list change's signal, without waiting, and wakes the
    /// stream if it was down.
    pub(crate) fn signal(&self, signal: Signal, wakes: &mut Wakes<'_>) -> Offered {
        match self.mailbox.raise(signal) {
            Raised::Up => {
                self.wake(wakes);
                Offered::Queued
            }
            // The raise that put it up woke the stream.
            Raised::AlreadyUp => Offered::Merged,
            Raised::Closed => Offered::Closed,
        }
    }
}

/// What became of a publication offered to a listener.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offered {
    /// Queued for the listener's stream (or, a list change, its signal
    /// raised).
    Queued,
    /// A list change the listener had waiting already: it hears the two
    /// as one.
    Merged,
    /// The queue is full: the listener has fallen behind (end it).
    Full,
    /// The listener has ended.
    Closed,
    /// Not offered: the listener's principal is not in the publication's
    /// audience.
    Excluded,
}

/// The consumer's side: the listener's stream holds it.
pub(crate) struct Reader {
    inbox: Arc<Inbox>,
    consumer: Consumer<Shared>,
}

/// What the listener's stream sends next.
pub(crate) enum Next {
    Publication(Shared),
    /// These lists changed (each signal a kind: `Change::of_signal`).
    ListsChanged(Signals),
    /// The listener ended, for this reason: nothing more comes.
    Ended(Reason),
}

impl Inbox {
    /// A queue of at most `capacity` publications (at least 1), for a
    /// listener of `owner`.
    pub(crate) fn new(capacity: usize, owner: Option<Principal>) -> (Arc<Inbox>, Reader) {
        let (mailbox, consumer) =
            Mailbox::with_capacity(capacity.max(1)).expect("a capacity of at least 1");
        let inbox = Arc::new(Inbox {
            mailbox,
            waker: AtomicWaker::new(),
            ended: OnceLock::new(),
            owner,
            id: OnceLock::new(),
        });
        let reader = Reader {
            inbox: Arc::clone(&inbox),
            consumer,
        };
        (inbox, reader)
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

impl Reader {
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
        // List changes first: they are not ordered with the resource
        // updates (each is news of a different thing).
        match self.consumer.take_signals() {
            Taken::Signals(changed) => return Some(Next::ListsChanged(changed)),
            Taken::Closed => return Some(self.ended()),
            Taken::None => {}
        }
        match self.consumer.pop() {
            Popped::Item(publication) => Some(Next::Publication(publication)),
            Popped::Empty => None,
            Popped::Closed => Some(self.ended()),
        }
    }

    /// The end, with the reason the terminate winner set before it closed
    /// the mailbox.
    fn ended(&self) -> Next {
        Next::Ended(self.inbox.ended.get().copied().unwrap_or(Reason::Shutdown))
    }
}

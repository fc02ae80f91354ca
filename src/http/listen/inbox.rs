//! One listener's queue ([`Inbox`]): the core's [`Mailbox`](crate::Mailbox)
//! of publications, bounded, with the waker of the stream that drains it
//! and the reason it ended.
//!
//! Publishers offer (any thread, no lock, no allocation: one `Arc` clone);
//! the listener's body pops. A full inbox is a listener that fell behind:
//! the offer fails, and the publisher ends the listener (it is never waited
//! for and never grows). The listener's end closes the inbox: after that,
//! nothing more is delivered (the mailbox's close is linearizable: a pop
//! after it finds nothing), and the body ends the stream.

use super::change::Shared;
use crate::mailbox::{Consumer, Mailbox, Popped, Pushed};
use crate::Reason;
use futures_util::task::AtomicWaker;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

/// The producers' side of one listener's queue.
pub(crate) struct Inbox {
    mailbox: Arc<Mailbox<Shared>>,
    waker: AtomicWaker,
    /// Why the listener ended: set (by the terminate winner) before the
    /// mailbox is closed, so the body that finds it closed reads it.
    ended: OnceLock<Reason>,
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
    /// A queue of at most `capacity` publications (at least 1).
    pub(crate) fn new(capacity: usize) -> (Arc<Inbox>, Outbox) {
        let (mailbox, consumer) =
            Mailbox::with_capacity(capacity.max(1)).expect("a capacity of at least 1");
        let inbox = Arc::new(Inbox {
            mailbox,
            waker: AtomicWaker::new(),
            ended: OnceLock::new(),
        });
        let outbox = Outbox {
            inbox: Arc::clone(&inbox),
            consumer,
        };
        (inbox, outbox)
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

//! The bounded queue between the producers of one SSE stream and the
//! response body that hands its frames to hyper: flow control for slow and
//! non-reading clients.
//!
//! * The queue holds at most so many messages *and* so many bytes (one
//!   message larger than the byte bound still goes through an empty queue,
//!   so no message is too large to ever be sent).
//! * [`Outlet::try_push`] (server notifications on the standalone stream)
//!   never waits: a message that does not fit is dropped and counted.
//!   [`Outlet::send`] (a handler's streamed reply) waits for room instead.
//! * A stream is *stalled* when a frame has waited for the stall timeout
//!   while the body took nothing (hyper polls the body only when the
//!   connection can take more, so a client that stops reading stops the
//!   body). A stalled stream is ended: its queue is dropped and counted,
//!   whatever it holds (for the standalone stream, the session's in-flight
//!   guard) is let go, so the session becomes idle and can expire.
//!   [`Outlet::watch`] finds stalls when nobody is sending.
//! * Every frame accepted and never delivered (stall, client gone) is
//!   counted in `sessionreg_http_notifications_dropped_total`.

use crate::http::counters::HttpCounters;
use bytes::Bytes;
use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The bounds of one stream's queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueueLimits {
    pub(crate) messages: usize,
    pub(crate) bytes: usize,
    pub(crate) stall: Option<Duration>,
}

/// What became of a frame offered with [`Outlet::try_push`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Queued for the client.
    Queued,
    /// The stream is open but could not take it (full, or stalled and now
    /// ended): dropped and counted.
    Dropped,
    /// The stream has ended: nothing was sent.
    Ended,
}

/// What one try to queue a frame found.
enum Offer {
    Sent,
    /// The stream had already ended.
    Ended,
    /// The stream had stalled: it is ended now, the frame counted dropped.
    Stalled,
    /// No room; a stall would end the stream at `deadline`.
    Full {
        deadline: Option<Instant>,
    },
}

/// The stream has ended; nothing more can be sent on it.
#[derive(Debug)]
pub(crate) struct StreamEnded;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Frames are accepted.
    Open,
    /// No more frames; the body delivers what is queued, then ends.
    Finishing,
    /// Over: the body ends at once.
    Ended,
}

struct Queue {
    frames: VecDeque<Bytes>,
    bytes: usize,
    /// When the oldest queued frame started waiting for the body: the later
    /// of the body's last take and the queue's last turn from empty.
    since: Instant,
    waker: Option<Waker>,
    flow: Flow,
    /// Kept until the stream ends (the standalone stream's in-flight
    /// guard: the session is busy exactly while its stream is live).
    hold: Option<Box<dyn Any + Send + Sync>>,
}

/// One SSE stream's queue, shared by its producers, its body and its stall
/// watch.
pub(crate) struct Outlet {
    queue: Mutex<Queue>,
    limits: QueueLimits,
    counters: Arc<HttpCounters>,
    /// The body took a frame, or the stream ended (for `send`).
    room: Notify,
    /// The queue turned non-empty, or the stream ended (for `watch`).
    pending: Notify,
}

impl std::fmt::Debug for Outlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = self.lock();
        f.debug_struct("Outlet")
            .field("queued", &queue.frames.len())
            .field("bytes", &queue.bytes)
            .field("phase", &queue.flow)
            .finish_non_exhaustive()
    }
}

impl Outlet {
    pub(crate) fn new(limits: QueueLimits, counters: Arc<HttpCounters>) -> Arc<Outlet> {
        Arc::new(Outlet {
            queue: Mutex::new(Queue {
                frames: VecDeque::new(),
                bytes: 0,
                since: Instant::now(),
                waker: None,
                flow: Flow::Open,
                hold: None,
            }),
            limits,
            counters,
            room: Notify::new(),
            pending: Notify::new(),
        })
    }

    /// An outlet that has already ended (for a session that has).
    pub(crate) fn ended(counters: Arc<HttpCounters>) -> Arc<Outlet> {
        let outlet = Outlet::new(
            QueueLimits {
                messages: 1,
                bytes: 1,
                stall: None,
            },
            counters,
        );
        outlet.lock().flow = Flow::Ended;
        outlet
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Every critical section leaves the queue consistent, so a panic
        // elsewhere while it was held (there are no calls out) poisons
        // nothing that matters.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `hold` alive until the stream ends.
    pub(crate) fn hold(&self, hold: Box<dyn Any + Send + Sync>) {
        let mut queue = self.lock();
        if queue.flow == Flow::Open {
            queue.hold = Some(hold);
            return;
        }
        drop(queue);
        drop(hold);
    }

    /// Whether the stream still takes frames.
    pub(crate) fn is_open(&self) -> bool {
        self.lock().flow == Flow::Open
    }

    /// Queues frames without bounds: a resumed stream's replay, which its
    /// event log has already bounded.
    pub(crate) fn preload(&self, frames: impl IntoIterator<Item = Bytes>) {
        let mut queue = self.lock();
        if queue.flow != Flow::Open {
            return;
        }
        for frame in frames {
            queue.bytes += frame.len();
            queue.frames.push_back(frame);
        }
        queue.since = Instant::now();
    }

    fn stalled(&self, queue: &Queue, now: Instant) -> bool {
        !queue.frames.is_empty()
            && self
                .limits
                .stall
                .is_some_and(|stall| now.saturating_duration_since(queue.since) >= stall)
    }

    fn fits(&self, queue: &Queue, len: usize) -> bool {
        queue.frames.is_empty()
            || (queue.frames.len() < self.limits.messages && queue.bytes + len <= self.limits.bytes)
    }

    fn enqueue(&self, queue: &mut Queue, frame: Bytes, now: Instant) -> Option<Waker> {
        if queue.frames.is_empty() {
            queue.since = now;
            self.pending.notify_one();
        }
        queue.bytes += frame.len();
        queue.frames.push_back(frame);
        queue.waker.take()
    }

    /// Offers a frame without waiting. A full queue drops it (counted); a
    /// stalled stream is ended first.
    pub(crate) fn try_push(&self, frame: Bytes) -> Sent {
        match self.offer(&frame) {
            Offer::Sent => Sent::Queued,
            Offer::Ended => Sent::Ended,
            Offer::Stalled => Sent::Dropped,
            Offer::Full { .. } => {
                self.counters.dropped(1);
                Sent::Dropped
            }
        }
    }

    /// Sends a frame, waiting for room. Fails once the stream has ended,
    /// or when it stalls meanwhile (which ends it).
    pub(crate) async fn send(&self, frame: Bytes) -> Result<(), StreamEnded> {
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            // Registered before the queue is looked at, so room made
            // between the look and the await still wakes us.
            room.as_mut().enable();
            let deadline = match self.offer(&frame) {
                Offer::Sent => return Ok(()),
                Offer::Ended | Offer::Stalled => return Err(StreamEnded),
                Offer::Full { deadline } => deadline,
            };
            match deadline {
                Some(deadline) => {
                    tokio::select! {
                        () = &mut room => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
                None => room.await,
            }
        }
    }

    /// One try to queue a frame: ends a stalled stream (counting the frame
    /// with what it held), and queues the frame if it fits.
    fn offer(&self, frame: &Bytes) -> Offer {
        let now = Instant::now();
        let mut queue = self.lock();
        if queue.flow != Flow::Open {
            return Offer::Ended;
        }
        if self.stalled(&queue, now) {
            let hold = self.end(&mut queue, 1);
            drop(queue);
            drop(hold);
            return Offer::Stalled;
        }
        if self.fits(&queue, frame.len()) {
            let waker = self.enqueue(&mut queue, frame.clone(), now);
            drop(queue);
            if let Some(waker) = waker {
                waker.wake();
            }
            return Offer::Sent;
        }
        Offer::Full {
            deadline: self
                .limits
                .stall
                .and_then(|stall| queue.since.checked_add(stall)),
        }
    }

    /// No more frames: the body delivers what is queued, then ends.
    pub(crate) fn finish(&self) {
        let mut queue = self.lock();
        if queue.flow != Flow::Open {
            return;
        }
        queue.flow = Flow::Finishing;
        let hold = queue.hold.take();
        let waker = queue.waker.take();
        drop(queue);
        self.room.notify_waiters();
        self.pending.notify_one();
        drop(hold);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Ends the stream now: what is queued (plus `also` frames the caller
    /// was offering) is counted as dropped. Returns the hold for the caller
    /// to drop once the lock is released.
    #[must_use]
    fn end(&self, queue: &mut Queue, also: u64) -> Option<Box<dyn Any + Send + Sync>> {
        let dropped = queue.frames.len() as u64 + also;
        queue.frames = VecDeque::new();
        queue.bytes = 0;
        queue.flow = Flow::Ended;
        if dropped > 0 {
            self.counters.dropped(dropped);
        }
        if let Some(waker) = queue.waker.take() {
            waker.wake();
        }
        self.room.notify_waiters();
        self.pending.notify_one();
        queue.hold.take()
    }

    /// The body is gone (the client left, or hyper dropped the response):
    /// whatever is still queued is dropped and counted.
    pub(crate) fn body_dropped(&self) {
        self.cut(0);
    }

    /// Ends the stream now, from the body's side (the credential it was
    /// opened with ran out): what is still queued, and `also` frames the
    /// body took and will not send, are dropped and counted; what it held
    /// is let go.
    pub(crate) fn cut(&self, also: u64) {
        let mut queue = self.lock();
        if queue.flow == Flow::Ended {
            drop(queue);
            if also > 0 {
                self.counters.dropped(also);
            }
            return;
        }
        let hold = self.end(&mut queue, also);
        drop(queue);
        drop(hold);
    }

    /// The body's side: the next frame, `None` once the stream is over.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut queue = self.lock();
        if let Some(frame) = queue.frames.pop_front() {
            queue.bytes -= frame.len();
            queue.since = Instant::now();
            let done = queue.frames.is_empty() && queue.flow == Flow::Finishing;
            if done {
                queue.flow = Flow::Ended;
            }
            drop(queue);
            self.room.notify_one();
            return Poll::Ready(Some(frame));
        }
        match queue.flow {
            Flow::Open => {
                if !queue
                    .waker
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    queue.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Flow::Finishing | Flow::Ended => {
                queue.flow = Flow::Ended;
                Poll::Ready(None)
            }
        }
    }

    /// Resolves when the stream is over, ending it first if it stalls: a
    /// frame waits for the stall timeout while the body takes nothing. Run
    /// beside a stream whose producers may fall silent (the standalone
    /// stream gets a task of its own; a streamed reply's pump selects on
    /// it).
    pub(crate) async fn watch(&self) {
        loop {
            let pending = self.pending.notified();
            tokio::pin!(pending);
            pending.as_mut().enable();
            let deadline = match self.stall_deadline() {
                Err(StreamEnded) => return,
                Ok(deadline) => deadline,
            };
            match deadline {
                None => pending.await,
                Some(deadline) => {
                    tokio::select! {
                        () = &mut pending => continue,
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                    if self.end_if_stalled() {
                        return;
                    }
                }
            }
        }
    }

    /// When the stream would stall if the body takes nothing (`None` while
    /// nothing waits, or without a stall timeout).
    fn stall_deadline(&self) -> Result<Option<Instant>, StreamEnded> {
        let queue = self.lock();
        if queue.flow != Flow::Open {
            return Err(StreamEnded);
        }
        Ok(match self.limits.stall {
            // (A stall timeout too long to reach never fires.)
            Some(stall) if !queue.frames.is_empty() => queue.since.checked_add(stall),
            _ => None,
        })
    }

    /// Ends the stream if it has stalled; whether it did.
    fn end_if_stalled(&self) -> bool {
        let mut queue = self.lock();
        if queue.flow != Flow::Open || !self.stalled(&queue, Instant::now()) {
            return false;
        }
        let hold = self.end(&mut queue, 0);
        drop(queue);
        tracing::debug!("SSE stream stalled: ended");
        drop(hold);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    fn outlet(messages: usize, bytes: usize, stall: Option<Duration>) -> Arc<Outlet> {
        Outlet::new(
            QueueLimits {
                messages,
                bytes,
                stall,
            },
            Arc::new(HttpCounters::new()),
        )
    }

    fn take(outlet: &Outlet) -> Option<Bytes> {
        match outlet.poll_next(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(frame) => frame,
            Poll::Pending => panic!("nothing to take"),
        }
    }

    #[test]
    fn bounded_in_messages_and_bytes_and_drops_are_counted() {
        let out = outlet(3, 10, None);
        // A frame larger than the byte bound goes through an empty queue.
        assert_eq!(out.try_push(Bytes::from(vec![b'x'; 20])), Sent::Queued);
        assert_eq!(out.try_push(Bytes::from_static(b"a")), Sent::Dropped);
        assert_eq!(take(&out).unwrap().len(), 20);
        for _ in 0..3 {
            assert_eq!(out.try_push(Bytes::from_static(b"ab")), Sent::Queued);
        }
        // Three messages: the fourth is refused by count.
        assert_eq!(out.try_push(Bytes::from_static(b"c")), Sent::Dropped);
        take(&out);
        // Room by count (2 queued, 4 bytes) but not by bytes: 4 + 7 > 10.
        assert_eq!(out.try_push(Bytes::from(vec![b'y'; 7])), Sent::Dropped);
        assert_eq!(out.try_push(Bytes::from(vec![b'y'; 6])), Sent::Queued);
        assert_eq!(out.counters.snapshot().notifications_dropped, 3);
        out.finish();
        assert_eq!(out.try_push(Bytes::from_static(b"z")), Sent::Ended);
        // What was queued is still delivered, then the end.
        assert_eq!(take(&out).unwrap().len(), 2);
        assert_eq!(take(&out).unwrap().len(), 2);
        assert_eq!(take(&out).unwrap().len(), 6);
        assert!(take(&out).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stall_ends_the_stream_drops_its_queue_and_lets_go_of_its_hold() {
        let out = outlet(8, 1024, Some(Duration::from_secs(60)));
        let held = Arc::new(());
        out.hold(Box::new(Arc::clone(&held)));
        let watch = tokio::spawn({
            let out = Arc::clone(&out);
            async move { out.watch().await }
        });
        assert_eq!(out.try_push(Bytes::from_static(b"one")), Sent::Queued);
        assert_eq!(out.try_push(Bytes::from_static(b"two")), Sent::Queued);
        // The body takes one, then nothing for the stall timeout.
        tokio::time::sleep(Duration::from_secs(30)).await;
        take(&out);
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert!(out.is_open(), "progress 59 s ago is not a stall");
        assert_eq!(Arc::strong_count(&held), 2);
        watch.await.unwrap();
        assert!(!out.is_open());
        assert_eq!(Arc::strong_count(&held), 1, "the hold was let go");
        assert_eq!(out.counters.snapshot().notifications_dropped, 1);
        assert!(take(&out).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn send_waits_for_room_and_gives_up_on_a_stall() {
        let out = outlet(1, 1024, Some(Duration::from_secs(60)));
        out.send(Bytes::from_static(b"1")).await.unwrap();
        let sender = tokio::spawn({
            let out = Arc::clone(&out);
            async move { out.send(Bytes::from_static(b"2")).await }
        });
        tokio::task::yield_now().await;
        assert!(!sender.is_finished(), "waits for room");
        take(&out);
        sender.await.unwrap().unwrap();
        // Now nothing is taken: the next send ends the stream at the stall.
        let blocked = out.send(Bytes::from_static(b"3")).await;
        assert!(blocked.is_err());
        assert!(!out.is_open());
        // "2" was queued and never delivered, "3" was being offered.
        assert_eq!(out.counters.snapshot().notifications_dropped, 2);
    }

    #[test]
    fn a_dropped_body_ends_the_stream() {
        let out = outlet(8, 1024, None);
        assert_eq!(out.try_push(Bytes::from_static(b"x")), Sent::Queued);
        out.body_dropped();
        assert_eq!(out.try_push(Bytes::from_static(b"y")), Sent::Ended);
        assert_eq!(out.counters.snapshot().notifications_dropped, 1);
    }
}

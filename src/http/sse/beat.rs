//! A stream body's one timer ([`Beat`]): a keep-alive comment whenever the
//! stream has been quiet for the keep-alive period, and the deadline of the
//! credential it was opened with (`access/validity.rs`), folded into the
//! same sleep. A stream with neither has no timer at all.
//!
//! Each frame sent pushes the next keep-alive out by a period, as the
//! keep-alive alone did (one clock reading and a sleep moved later, which
//! the runtime's timer takes without re-registering); the same reading
//! tells whether the deadline has passed, so a stream busy enough never to
//! be quiet still ends on time. The sleep itself wakes a quiet stream at
//! whichever comes first.

use crate::http::access::validity::Term;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// What a [`Beat`] that fired is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tick {
    /// A keep-alive comment: the stream has been quiet for a period.
    KeepAlive,
    /// The credential's deadline has passed: the stream ends.
    Deadline,
}

/// What a stream with nothing to send is due ([`Beat::poll_quiet`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quiet {
    /// A keep-alive comment (`frame::KEEP_ALIVE`).
    KeepAlive,
    /// The credential's deadline has passed: the stream ends.
    Expired,
    /// The credential was withdrawn: the stream ends.
    Withdrawn,
}

/// A stream body's keep-alive period and credential deadline, on one sleep.
pub(crate) struct Beat {
    /// Set to the earlier of the two; `None` once neither is to come.
    sleep: Option<Pin<Box<Sleep>>>,
    period: Option<Duration>,
    /// When the next keep-alive is due.
    keep_alive: Option<Instant>,
    deadline: Option<Instant>,
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Beat {
    /// Keep-alives every `period` of quiet (`None`, or a period too long to
    /// reach: none), and the end at `deadline` (`None`: none).
    pub(crate) fn new(period: Option<Duration>, deadline: Option<Instant>) -> Beat {
        let keep_alive = period.and_then(|period| Instant::now().checked_add(period));
        let sleep = earliest(keep_alive, deadline).map(|at| Box::pin(tokio::time::sleep_until(at)));
        Beat {
            sleep,
            period,
            keep_alive,
            deadline,
        }
    }

    /// The stream sent a frame: the next keep-alive is a period from now.
    /// Whether the deadline has passed (read from the same clock reading):
    /// the stream must end rather than send more.
    #[must_use]
    pub(crate) fn sent(&mut self) -> bool {
        if self.period.is_none() && self.deadline.is_none() {
            return false;
        }
        let now = Instant::now();
        if self.deadline.is_some_and(|deadline| now >= deadline) {
            return true;
        }
        if let Some(period) = self.period {
            self.keep_alive = now.checked_add(period);
            self.rearm();
        }
        false
    }

    /// What a quiet stream (its queue had nothing) opened under `term` is
    /// due: its credential withdrawn (a withdrawal wakes it, once its waker
    /// is registered here), a keep-alive, or its deadline; `Pending` when
    /// none is yet. Both stream bodies ask it the same way.
    pub(crate) fn poll_quiet(&mut self, term: &mut Term, cx: &mut Context<'_>) -> Poll<Quiet> {
        if term.poll_withdrawn(cx).is_ready() {
            return Poll::Ready(Quiet::Withdrawn);
        }
        self.poll_tick(cx).map(|tick| match tick {
            Tick::KeepAlive => Quiet::KeepAlive,
            Tick::Deadline => Quiet::Expired,
        })
    }

    /// What is due, once the earlier of the next keep-alive and the
    /// deadline comes; the deadline fires once, and nothing after it.
    pub(crate) fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Tick> {
        let Some(sleep) = &mut self.sleep else {
            return Poll::Pending;
        };
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let now = Instant::now();
        if self.deadline.is_some_and(|deadline| now >= deadline) {
            self.sleep = None;
            return Poll::Ready(Tick::Deadline);
        }
        self.keep_alive = self.period.and_then(|period| now.checked_add(period));
        self.rearm();
        Poll::Ready(Tick::KeepAlive)
    }

    /// Sets the sleep to the earlier of the two.
    fn rearm(&mut self) {
        match (earliest(self.keep_alive, self.deadline), &mut self.sleep) {
            (Some(at), Some(sleep)) => sleep.as_mut().reset(at),
            (Some(at), None) => self.sleep = Some(Box::pin(tokio::time::sleep_until(at))),
            (None, _) => self.sleep = None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;

    async fn tick(beat: &mut Beat) -> Tick {
        poll_fn(|cx| beat.poll_tick(cx)).await
    }

    #[tokio::test(start_paused = true)]
    async fn keep_alives_come_after_a_quiet_period_and_the_deadline_once() {
        let period = Duration::from_secs(10);
        let start = Instant::now();
        let mut beat = Beat::new(Some(period), Some(start + Duration::from_secs(25)));
        assert_eq!(tick(&mut beat).await, Tick::KeepAlive);
        assert_eq!(Instant::now(), start + period);
        // A frame at 15 s pushes the next keep-alive to 25 s: the deadline
        // comes first (at the same instant), and ends it.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!beat.sent());
        assert_eq!(tick(&mut beat).await, Tick::Deadline);
        assert_eq!(Instant::now(), start + Duration::from_secs(25));
        assert!(beat.sent(), "past the deadline");
        let pending = poll_fn(|cx| Poll::Ready(beat.poll_tick(cx))).await;
        assert!(pending.is_pending(), "nothing after the deadline");
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_stream_still_finds_its_deadline_and_none_has_no_timer() {
        let start = Instant::now();
        let mut beat = Beat::new(None, Some(start + Duration::from_secs(3)));
        for _ in 0..2 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            assert!(!beat.sent());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(beat.sent(), "a frame at the deadline finds it");
        let mut none = Beat::new(None, None);
        assert!(none.sleep.is_none());
        assert!(!none.sent());
        // A period too long to reach sends no keep-alive.
        assert!(Beat::new(Some(Duration::MAX), None).sleep.is_none());
    }
}

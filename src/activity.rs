//! Idle time: one word per session with its in-flight count and last activity.
//!
//! ```text
//!  63                 24   23    22            0
//! +---------------------+--------+--------------+
//! | last activity (40)  | closed | in flight(23)|
//! +---------------------+--------+--------------+
//! ```
//!
//! A session is idle only when nothing is in flight *and* its last activity is
//! older than the timeout: a long call keeps its session alive however long it
//! runs, and the clock starts when the last request ends, not when it began.
//!
//! `closed` makes "idle" and "a request starts" mutually exclusive: whoever
//! expires a session first sets it, with a CAS that expects zero in flight, and
//! a request can only enter while it is clear. So an expiry never lands under
//! a running request, and a request never starts on a session being expired.
//! All of these are RMWs on this one word, so their order is the word's
//! modification order; no other data is published through it, and Relaxed is
//! enough throughout.

use crate::pack::Field;
use crate::sync::{AtomicU64, Ordering};
use std::time::Duration;

/// The largest stamp (milliseconds since the registry was built).
pub(crate) const MAX_STAMP: u64 = STAMP.max();

const IN_FLIGHT: Field = Field::lowest(23);
const CLOSED: Field = IN_FLIGHT.then(1);
const STAMP: Field = CLOSED.then(40);
const _: () = assert!(STAMP.end() == 64);

/// The longest idle timeout the stamp can measure (about 34 years).
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_millis(STAMP.max() / 2);

/// What [`Activity::try_expire`] found.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Expire {
    /// Idle, and now closed by this call, or closed already by an earlier
    /// expiry: the caller terminates the session with `IdleTimeout`.
    Expired,
    /// A request is in flight, or the last activity is recent.
    Active,
}

/// What [`Activity::enter`] found.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Enter {
    /// Counted in flight; the caller must call [`Activity::exit`].
    Entered,
    /// The session is being expired; no request may start on it.
    Closed,
}

/// The activity word of one session.
pub(crate) struct Activity(AtomicU64);

impl Activity {
    pub(crate) fn new() -> Activity {
        Activity(AtomicU64::new(0))
    }

    /// Starts a fresh session's clock, with `in_flight` requests already
    /// counted. Called by the inserter, which owns the slot; published by the
    /// lifecycle word's Release store.
    #[inline]
    pub(crate) fn reset(&self, now: u64, in_flight: u64) {
        self.0.store(
            IN_FLIGHT.set(STAMP.set(0, now), in_flight),
            Ordering::Relaxed,
        );
    }

    /// Counts one more request in flight, unless the session is being expired.
    #[inline]
    pub(crate) fn enter(&self) -> Enter {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            if CLOSED.get(word) == 1 {
                return Enter::Closed;
            }
            if IN_FLIGHT.get(word) == IN_FLIGHT.max() {
                // Eight million requests in flight on one session is a leak.
                std::process::abort();
            }
            match self.0.compare_exchange_weak(
                word,
                word + IN_FLIGHT.one(),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Enter::Entered,
                Err(now) => word = now,
            }
        }
    }

    /// Counts one request out and stamps `now` as the last activity.
    #[inline]
    pub(crate) fn exit(&self, now: u64) {
        self.update(|word| {
            debug_assert!(IN_FLIGHT.get(word) > 0);
            stamp(word - IN_FLIGHT.one(), now)
        });
    }

    /// Stamps `now` as the last activity.
    #[inline]
    pub(crate) fn touch(&self, now: u64) {
        self.update(|word| stamp(word, now));
    }

    /// Number of requests in flight.
    #[inline]
    pub(crate) fn in_flight(&self) -> u64 {
        IN_FLIGHT.get(self.0.load(Ordering::Relaxed))
    }

    /// Whether the session looks idle now: a hint for sweeps, which confirm
    /// with [`try_expire`](Self::try_expire).
    #[inline]
    pub(crate) fn looks_idle(&self, now: u64, timeout: u64) -> bool {
        is_idle(self.0.load(Ordering::Relaxed), now, timeout)
    }

    /// Whether a lookup must not hand the session out: it looks idle now, or
    /// another thread has already closed it for expiry (and will end it).
    /// The lookup confirms with [`try_expire`](Self::try_expire).
    #[inline]
    pub(crate) fn is_expiring(&self, now: u64, timeout: u64) -> bool {
        let word = self.0.load(Ordering::Relaxed);
        CLOSED.get(word) == 1 || is_idle(word, now, timeout)
    }

    /// Closes the session to new requests if it is idle at `now`.
    pub(crate) fn try_expire(&self, now: u64, timeout: u64) -> Expire {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            if CLOSED.get(word) == 1 {
                return Expire::Expired;
            }
            if !is_idle(word, now, timeout) {
                return Expire::Active;
            }
            match self.0.compare_exchange_weak(
                word,
                CLOSED.set(word, 1),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Expire::Expired,
                Err(now) => word = now,
            }
        }
    }

    fn update(&self, f: impl Fn(u64) -> u64) {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            match self
                .0
                .compare_exchange_weak(word, f(word), Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => word = now,
            }
        }
    }
}

/// The stamp only moves forward: two requests ending out of order keep the
/// later time.
fn stamp(word: u64, now: u64) -> u64 {
    STAMP.set(word, STAMP.get(word).max(now))
}

fn is_idle(word: u64, now: u64, timeout: u64) -> bool {
    CLOSED.get(word) == 0
        && IN_FLIGHT.get(word) == 0
        && now.saturating_sub(STAMP.get(word)) >= timeout
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn in_flight_work_is_never_idle() {
        let activity = Activity::new();
        activity.reset(100, 0);
        assert_eq!(activity.enter(), Enter::Entered);
        // However old the stamp, a request in flight keeps the session.
        assert_eq!(activity.try_expire(1_000_000, 10), Expire::Active);
        activity.exit(200);
        assert_eq!(activity.in_flight(), 0);
        // The clock runs from the end of the last request.
        assert_eq!(activity.try_expire(205, 10), Expire::Active);
        assert!(activity.looks_idle(210, 10));
        assert_eq!(activity.try_expire(210, 10), Expire::Expired);
        // Closed: nothing may start, a lookup must not hand it out, and a
        // second expiry agrees.
        assert_eq!(activity.enter(), Enter::Closed);
        assert!(!activity.looks_idle(210, 10), "closed: not for the reaper");
        assert!(activity.is_expiring(210, 10), "closed: not for lookups");
        assert_eq!(activity.try_expire(210, 10), Expire::Expired);
    }

    #[test]
    fn stamps_only_move_forward() {
        let activity = Activity::new();
        activity.reset(50, 0);
        activity.touch(40);
        assert_eq!(activity.try_expire(59, 10), Expire::Active);
        activity.touch(70);
        assert_eq!(activity.try_expire(79, 10), Expire::Active);
        assert_eq!(activity.try_expire(80, 10), Expire::Expired);
    }
}

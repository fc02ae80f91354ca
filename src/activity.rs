//! Idle time: one word per session with its in-flight count and last activity.
//!
//! ```text
//!  63                25   24      23     22            0
//! +--------------------+-------+--------+--------------+
//! | last activity (39) | rough | closed | in flight(23)|
//! +--------------------+-------+--------+--------------+
//! ```
//!
//! A session is idle only when nothing is in flight *and* its last activity is
//! older than the timeout: a long call keeps its session alive however long it
//! runs, and the clock starts when the last request ends, not when it began.
//!
//! `rough` marks a session whose last activity read no clock: neither an
//! insert nor a request's end reads it (see `clock.rs`). A rough session is
//! never idle; the reaper replaces its stamp with a reading it takes after
//! seeing it rough, which is no earlier than that activity, and a touch
//! replaces it with the time now. So a session is never found idle earlier
//! than it is.
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
const ROUGH: Field = CLOSED.then(1);
const STAMP: Field = ROUGH.then(39);
const _: () = assert!(STAMP.end() == 64);

/// The longest idle timeout the stamp can measure (about 8.7 years).
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

/// What [`Activity::check`] found.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Not idle: a request in flight, a rough or recent stamp.
    Busy,
    /// Idle at this time: confirm with `try_expire` at this time.
    Idle(u64),
    /// Already closed for expiry by another thread, which will end it: never
    /// hand it out (no time was read, and none is needed).
    Closed,
}

/// What [`Activity::enter`] found.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Enter {
    /// Counted in flight; the caller must call [`Activity::exit`].
    Entered,
    /// The session is being expired; no request may start on it.
    Closed,
    /// The limit of requests in flight is reached.
    Full,
}

/// The activity word of one session.
pub(crate) struct Activity(AtomicU64);

impl Activity {
    pub(crate) fn new() -> Activity {
        Activity(AtomicU64::new(0))
    }

    /// Starts a fresh session's clock at `stamp` (`None`: rough), with
    /// `in_flight` requests already counted. Called by the inserter, which
    /// owns the slot; published by the lifecycle word's Release store.
    #[inline]
    pub(crate) fn reset(&self, stamp: Option<u64>, in_flight: u64) {
        let word = match stamp {
            Some(stamp) => STAMP.set(0, stamp),
            None => ROUGH.set(0, 1),
        };
        self.0
            .store(IN_FLIGHT.set(word, in_flight), Ordering::Relaxed);
    }

    /// Counts one more request in flight, unless the session is being
    /// expired, or `limit` requests are in flight already.
    #[inline]
    pub(crate) fn enter(&self, limit: u64) -> Enter {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            if CLOSED.get(word) == 1 {
                return Enter::Closed;
            }
            if IN_FLIGHT.get(word) >= limit {
                return Enter::Full;
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

    /// Counts one request out and stamps its end as the last activity:
    /// exactly at `Some(now)`, or roughly (`None`: no clock was read; the
    /// next sweep stamps it with a later reading).
    #[inline]
    pub(crate) fn exit(&self, now: Option<u64>) {
        self.update(|word| {
            debug_assert!(IN_FLIGHT.get(word) > 0);
            let word = word - IN_FLIGHT.one();
            match now {
                Some(now) => stamp(word, now),
                None => ROUGH.set(word, 1),
            }
        });
    }

    /// Stamps `now` (exact) as the last activity.
    #[inline]
    pub(crate) fn touch(&self, now: u64) {
        self.update(|word| stamp(word, now));
    }

    /// Number of requests in flight.
    #[inline]
    pub(crate) fn in_flight(&self) -> u64 {
        IN_FLIGHT.get(self.0.load(Ordering::Relaxed))
    }

    /// Whether the session's stamp is rough and nothing is in flight: the
    /// reaper must make it exact ([`make_exact`](Self::make_exact)) before
    /// the session can ever look idle.
    #[inline]
    pub(crate) fn is_rough(&self) -> bool {
        let word = self.0.load(Ordering::Relaxed);
        ROUGH.get(word) == 1 && IN_FLIGHT.get(word) == 0
    }

    /// Replaces a rough stamp by a time `read` after this call has loaded
    /// the rough stamp (so no earlier than the activity it records, even if
    /// the slot was reused since the caller looked). Does nothing if the
    /// stamp has become exact meanwhile.
    pub(crate) fn make_exact(&self, read: impl Fn() -> u64) {
        let mut word = self.0.load(Ordering::Relaxed);
        while ROUGH.get(word) == 1 {
            let now = read();
            match self.0.compare_exchange_weak(
                word,
                stamp(word, now),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(changed) => word = changed,
            }
        }
    }

    /// Whether the session looks idle now: a hint for sweeps, which confirm
    /// with [`try_expire`](Self::try_expire).
    #[inline]
    pub(crate) fn looks_idle(&self, now: u64, timeout: u64) -> bool {
        is_idle(self.0.load(Ordering::Relaxed), now, timeout)
    }

    /// What a lookup must do about expiry, asking for the time (`now`) only
    /// for a session that could be idle: nothing in flight, an exact stamp.
    /// A lookup confirms an expiry with [`try_expire`](Self::try_expire).
    #[inline]
    pub(crate) fn check(&self, now: impl FnOnce() -> u64, timeout: u64) -> Check {
        let word = self.0.load(Ordering::Relaxed);
        if CLOSED.get(word) == 1 {
            return Check::Closed;
        }
        if IN_FLIGHT.get(word) > 0 || ROUGH.get(word) == 1 {
            return Check::Busy;
        }
        let now = now();
        if now.saturating_sub(STAMP.get(word)) >= timeout {
            Check::Idle(now)
        } else {
            Check::Busy
        }
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

/// An exact stamp: the stamp only moves forward (two requests ending out of
/// order keep the later time), and it is no longer rough.
fn stamp(word: u64, now: u64) -> u64 {
    ROUGH.set(STAMP.set(word, STAMP.get(word).max(now)), 0)
}

fn is_idle(word: u64, now: u64, timeout: u64) -> bool {
    CLOSED.get(word) == 0
        && ROUGH.get(word) == 0
        && IN_FLIGHT.get(word) == 0
        && now.saturating_sub(STAMP.get(word)) >= timeout
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn in_flight_work_is_never_idle() {
        let activity = Activity::new();
        activity.reset(Some(100), 0);
        assert_eq!(activity.enter(u64::MAX), Enter::Entered);
        // However old the stamp, a request in flight keeps the session.
        assert_eq!(activity.try_expire(1_000_000, 10), Expire::Active);
        activity.exit(Some(200));
        assert_eq!(activity.in_flight(), 0);
        // The clock runs from the end of the last request.
        assert_eq!(activity.try_expire(205, 10), Expire::Active);
        assert!(activity.looks_idle(210, 10));
        assert_eq!(activity.try_expire(210, 10), Expire::Expired);
        // Closed: nothing may start, a lookup must not hand it out, and a
        // second expiry agrees.
        assert_eq!(activity.enter(u64::MAX), Enter::Closed);
        assert!(!activity.looks_idle(210, 10), "closed: not for the reaper");
        assert_eq!(
            activity.check(|| unreachable!("closed: no clock read"), 10),
            Check::Closed,
            "closed: not for lookups"
        );
        assert_eq!(activity.try_expire(210, 10), Expire::Expired);
    }

    #[test]
    fn a_limit_refuses_past_it_and_frees_with_each_exit() {
        let activity = Activity::new();
        activity.reset(Some(0), 0);
        assert_eq!(activity.enter(2), Enter::Entered);
        assert_eq!(activity.enter(2), Enter::Entered);
        assert_eq!(activity.enter(2), Enter::Full);
        assert_eq!(activity.in_flight(), 2, "a refusal counts nothing");
        activity.exit(Some(1));
        assert_eq!(activity.enter(2), Enter::Entered);
        assert_eq!(activity.enter(u64::MAX), Enter::Entered);
    }

    #[test]
    fn stamps_only_move_forward() {
        let activity = Activity::new();
        activity.reset(Some(50), 0);
        activity.touch(40);
        assert_eq!(activity.try_expire(59, 10), Expire::Active);
        activity.touch(70);
        assert_eq!(activity.try_expire(79, 10), Expire::Active);
        assert_eq!(activity.try_expire(80, 10), Expire::Expired);
    }

    #[test]
    fn a_rough_stamp_never_makes_a_session_idle() {
        let activity = Activity::new();
        activity.reset(None, 0);
        assert!(activity.is_rough());
        // However late, a rough stamp is not evidence of idleness, and a
        // lookup reads no clock for it.
        assert!(!activity.looks_idle(1_000, 10));
        assert_eq!(activity.check(|| unreachable!("rough"), 10), Check::Busy);
        assert_eq!(activity.try_expire(1_000, 10), Expire::Active);
        // Made exact at the time the sweep saw it: idle from there on.
        activity.make_exact(|| 1_000);
        assert!(!activity.is_rough());
        assert!(!activity.looks_idle(1_009, 10));
        assert_eq!(activity.try_expire(1_010, 10), Expire::Expired);
        // An exact request's end makes it exact too, and a rough stamp
        // under a request in flight is not the sweep's to fix.
        let activity = Activity::new();
        activity.reset(None, 1);
        assert!(!activity.is_rough(), "in flight: the request's end stamps");
        activity.exit(Some(500));
        assert!(!activity.is_rough());
        assert_eq!(activity.try_expire(509, 10), Expire::Active);
        assert_eq!(activity.check(|| 509, 10), Check::Busy);
        assert_eq!(activity.check(|| 510, 10), Check::Idle(510));
        assert_eq!(activity.try_expire(510, 10), Expire::Expired);
    }

    #[test]
    fn a_rough_request_end_restarts_idle_time_at_the_next_sweep() {
        let activity = Activity::new();
        activity.reset(Some(0), 0);
        assert_eq!(activity.enter(u64::MAX), Enter::Entered);
        // The request ends without reading the clock.
        activity.exit(None);
        assert!(activity.is_rough());
        // However old the exact stamp before it, the session is not idle:
        // its last activity is later than that stamp.
        assert!(!activity.looks_idle(1_000, 10));
        assert_eq!(activity.check(|| unreachable!("rough"), 10), Check::Busy);
        assert_eq!(activity.try_expire(1_000, 10), Expire::Active);
        // The next sweep reads 1_000 after seeing it rough: idle from there.
        activity.make_exact(|| 1_000);
        assert_eq!(activity.try_expire(1_009, 10), Expire::Active);
        assert_eq!(activity.try_expire(1_010, 10), Expire::Expired);
    }
}

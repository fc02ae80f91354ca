//! Idle time: one word per session with its in-flight count and last activity.
//!
//! ```text
//!  63    62                       24   23      22            0
//! +------+--------------------------+-------+--------------+
//! | open | stamp, or claim (39)     | rough | in flight(23)|
//! +------+--------------------------+-------+--------------+
//! ```
//!
//! A session is idle only when nothing is in flight *and* its last activity is
//! older than the timeout: a long call keeps its session alive however long it
//! runs, and the clock starts when the last request ends, not when it began.
//!
//! `rough` marks a session whose last activity read no clock: neither an
//! insert nor a request's end reads it (see `clock.rs`). A rough session is
//! never idle; a sweep, or a touch, makes it exact with a reading taken after
//! the activity it records. So a session is never found idle earlier than it
//! is.
//!
//! The stamp field is a stamp (milliseconds) while the word is exact. While
//! it is rough it holds no time (none is needed: a reading taken after the
//! rough mark is later than any stamp before it) but a *claim*: unclaimed (the
//! field's largest value), or the largest value less the thread id plus one
//! of the thread making the stamp exact. Counted down from the top, a claim
//! reads later than any stamp a registry younger than 17 years makes, so a
//! lookup's one comparison finds a rough word recent (below). Making a rough
//! stamp exact is three steps, each a reason the result cannot be early:
//!
//! 1. **claim**: a CAS from the rough word (nothing in flight) to the same
//!    word claimed by this thread. It may succeed on a word that a request's
//!    begin and end put back since it was loaded: that does not matter,
//!    because the time is read only after the claim. The claim is Acquire
//!    and every request's end is a Release RMW on this word, so the end of
//!    every request before the claim happens before the reading (on every
//!    architecture: the reading is not a load that the CPU may take before
//!    the claim, as it may after a Relaxed one).
//! 2. **read** the clock.
//! 3. **stamp**: a CAS from the claimed word to the exact one. It succeeds
//!    only if the word is still claimed by this thread, which no other
//!    thread can write: a request's begin or end, a touch, another stamper
//!    each change the word (an end writes claim 0; another stamper writes
//!    its own id; ids are unique among living threads, and this one is busy
//!    here). So nothing happened between the claim and the stamp, and the
//!    reading is later than every activity before it.
//!
//! Every writer of the word holds the session while it writes (a request's
//! guard, a touch's handle, the sweep's reference), so the slot cannot be
//! reused under a stamper either: the word a claim expects is the held
//! session's, never a newer one's fresh word that happens to look the same.
//!
//! A claim left by a thread that is descheduled between its steps is taken
//! over by the next stamper (its stamp then fails): nobody waits for it.
//! Exact words need none of this: an exact word that reappears after a
//! request's begin and end was stamped by a stamper that read its time after
//! that end, so a CAS that expects it (an expiry, a touch, an exact request
//! end) decides on a stamp no earlier than every activity before it.
//!
//! `open` makes "idle" and "a request starts" mutually exclusive: whoever
//! expires a session first clears it, with a CAS that expects zero in flight,
//! and a request can only enter while it is set. So an expiry never lands
//! under a running request, and a request never starts on a session being
//! expired.
//!
//! The field order serves a lookup, which must find out whether a session is
//! idle on every call: as a number, an open word is above every closed one,
//! and among open words, one with a later stamp (or rough) is above one with
//! an earlier stamp. So a lookup compares the word with one number the
//! clock keeps from its latest reading ([`recent_above`]): above it, the
//! session is recent or rough at that reading and nothing else is looked at;
//! at or below it, the session is closed, or idle, or in flight over an old
//! stamp, and [`Activity::check`] looks at each field.
//!
//! Orderings: a request's end is Release, and a claim and an expiry are
//! Acquire (above, and at `try_expire`); everything else is Relaxed: these are all RMWs
//! on this one word, so their order is the word's modification order, and no
//! other data is published through it.

use crate::pack::Field;
use crate::sync::{AtomicU64, Ordering};
use crate::tid;
use std::time::Duration;

/// The largest stamp (milliseconds since the registry was built).
pub(crate) const MAX_STAMP: u64 = STAMP.max();

const IN_FLIGHT: Field = Field::lowest(23);
const ROUGH: Field = IN_FLIGHT.then(1);
/// The stamp of an exact word; the claim of a rough one (`STAMP`'s bits).
const STAMP: Field = ROUGH.then(39);
/// Set while requests may start; cleared, for good, by an expiry. The top
/// bit, so that every open word is above every closed one.
const OPEN: Field = STAMP.then(1);
const _: () = assert!(OPEN.end() == 64);

/// The claim of a rough word that nobody is stamping: the largest, so that
/// every rough word reads later than the stamps before it.
const UNCLAIMED: u64 = STAMP.max();

/// A word no activity word is above: every lookup looks at each field
/// (a manual clock, whose time moves without a reading).
pub(crate) const NONE_RECENT: u64 = u64::MAX;

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

/// What [`Activity::stamp_rough`] did.
#[must_use]
enum Stamped {
    /// This call made the stamp exact.
    Done,
    /// The word is no longer rough with nothing in flight (here it is now),
    /// or this thread has no id to claim it with: left as it is.
    Left(u64),
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
    /// Nobody else writes the word meanwhile: every other writer holds the
    /// session (a reference), and a slot held is never reused.
    #[inline]
    pub(crate) fn reset(&self, stamp: Option<u64>, in_flight: u64) {
        let word = match stamp {
            Some(stamp) => STAMP.set(OPEN.mask(), stamp),
            None => rough(OPEN.mask()),
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
            if OPEN.get(word) == 0 {
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
    ///
    /// Release: a stamper's claim (Acquire) that reads this end, or any
    /// later write of the word, reads its time after it (see the module
    /// docs).
    #[inline]
    pub(crate) fn exit(&self, now: Option<u64>) {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            debug_assert!(IN_FLIGHT.get(word) > 0);
            let out = word - IN_FLIGHT.one();
            let next = match now {
                Some(now) => exact(out, now),
                None => rough(out),
            };
            match self
                .0
                .compare_exchange_weak(word, next, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(changed) => word = changed,
            }
        }
    }

    /// Stamps a time `read` now as the last activity, restarting the idle
    /// time. A session with requests in flight is left as it is: its idle
    /// time starts when the last of them ends, later than now.
    pub(crate) fn touch(&self, read: impl Fn() -> u64) {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            if OPEN.get(word) == 0 || IN_FLIGHT.get(word) > 0 {
                return;
            }
            if ROUGH.get(word) == 1 {
                match self.stamp_rough(word, &read) {
                    Stamped::Done => return,
                    // Made exact by another stamper (perhaps with a reading
                    // from before this touch), or busy: look again.
                    Stamped::Left(now) if now != word => word = now,
                    Stamped::Left(_) => return,
                }
                continue;
            }
            // Exact: the stamp only moves forward, so this reading, early or
            // late, never makes the session look idle earlier than the stamp
            // it replaces, which is no earlier than any activity before it.
            let now = read();
            match self.0.compare_exchange_weak(
                word,
                exact(word, now),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(changed) => word = changed,
            }
        }
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
        is_rough_idle(self.0.load(Ordering::Relaxed))
    }

    /// Replaces a rough stamp (nothing in flight) by a reading taken after
    /// this call has claimed it, so no earlier than any activity the rough
    /// stamp stands for (see the module docs). The caller holds the session.
    /// Does nothing if the stamp is exact, or a request is in flight (its
    /// end marks it rough again).
    pub(crate) fn make_exact(&self, read: impl Fn() -> u64) {
        let word = self.0.load(Ordering::Relaxed);
        if is_rough_idle(word) {
            let _ = self.stamp_rough(word, &read);
        }
    }

    /// Claims the rough word `word` (nothing in flight), reads the time and
    /// stamps it, while nothing else touches the word (see the module docs);
    /// again after anything did, as long as it stays rough with nothing in
    /// flight.
    fn stamp_rough(&self, mut word: u64, read: &impl Fn() -> u64) -> Stamped {
        // A thread in teardown has no id of its own to claim with: it
        // leaves the stamp rough (never early; a later sweep stamps it).
        let Some(claim) = claim_of(tid::current()) else {
            return Stamped::Left(word);
        };
        while is_rough_idle(word) {
            let claimed = STAMP.set(word, claim);
            // Acquire: the reading below is taken after every request's end
            // before this claim (their Release), on every architecture.
            if let Err(changed) =
                self.0
                    .compare_exchange_weak(word, claimed, Ordering::Acquire, Ordering::Relaxed)
            {
                word = changed;
                continue;
            }
            let now = read();
            // Still claimed by this thread: nothing happened since the claim.
            match self.0.compare_exchange(
                claimed,
                exact(claimed, now),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Stamped::Done,
                Err(changed) => word = changed,
            }
        }
        Stamped::Left(word)
    }

    /// Whether the session looks idle now: a hint for sweeps, which confirm
    /// with [`try_expire`](Self::try_expire).
    #[inline]
    pub(crate) fn looks_idle(&self, now: u64, timeout: u64) -> bool {
        is_idle(self.0.load(Ordering::Relaxed), now, timeout)
    }

    /// What a lookup must do about expiry. `recent` is [`recent_above`] of
    /// a reading taken no later than now (or [`NONE_RECENT`]); the time
    /// (`now`) is asked for only for a session that could be idle: open,
    /// nothing in flight, an exact stamp. A lookup confirms an expiry with
    /// [`try_expire`](Self::try_expire).
    #[inline]
    pub(crate) fn check(&self, recent: u64, now: impl FnOnce() -> u64, timeout: u64) -> Check {
        let word = self.0.load(Ordering::Relaxed);
        if word > recent {
            // Open, and rough or stamped less than the timeout before a
            // reading taken no later than now: not idle at that reading,
            // which is as much as the fields below would tell with it.
            return Check::Busy;
        }
        if OPEN.get(word) == 0 {
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
    ///
    /// Acquire on success: the last request's end (Release) happens before
    /// it, so the expirer, which goes on to end the session and run its
    /// close callback, sees what the requests did (a task's work settled
    /// its outcome before it let go). Relaxed for a session found closed
    /// already: the thread that closed it ends it.
    pub(crate) fn try_expire(&self, now: u64, timeout: u64) -> Expire {
        let mut word = self.0.load(Ordering::Relaxed);
        loop {
            if OPEN.get(word) == 0 {
                return Expire::Expired;
            }
            if !is_idle(word, now, timeout) {
                return Expire::Active;
            }
            match self.0.compare_exchange_weak(
                word,
                OPEN.set(word, 0),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Expire::Expired,
                Err(now) => word = now,
            }
        }
    }
}

/// The claim a thread with id `tid` stamps with: [`UNCLAIMED`] less its id
/// plus one (never [`UNCLAIMED`], distinct for each id); `None` for a thread
/// in teardown, whose id is shared.
fn claim_of(tid: usize) -> Option<u64> {
    let below = (tid as u64).checked_add(1)?;
    (tid != tid::SHARED && below <= UNCLAIMED).then(|| UNCLAIMED - below)
}

/// The number a lookup compares a session's word with after a reading of
/// `latest` ([`Activity::check`]): an open word whose stamp is less than
/// `timeout` before `latest`, or a rough one, is above it; a closed word, or
/// one that may be idle at `latest`, is not. It grows with `latest`, so the
/// largest of those a clock has kept is that of its latest reading.
pub(crate) fn recent_above(latest: u64, timeout: u64) -> u64 {
    match latest.checked_sub(timeout) {
        // Nothing is idle yet: every open word is above.
        None => OPEN.mask() - 1,
        // Above: open, and a stamp (or claim) past `idle_since`.
        Some(idle_since) => {
            OPEN.mask()
                | STAMP.set(0, idle_since.min(STAMP.max()))
                | ROUGH.mask()
                | IN_FLIGHT.mask()
        }
    }
}

/// `word`, rough and unclaimed (a request's end that read no clock).
fn rough(word: u64) -> u64 {
    STAMP.set(ROUGH.set(word, 1), UNCLAIMED)
}

/// `word`, stamped exactly at `now`: the stamp only moves forward (two
/// requests ending out of order keep the later time); a rough word's
/// claim is no time, and is replaced.
fn exact(word: u64, now: u64) -> u64 {
    let stamp = if ROUGH.get(word) == 1 {
        now
    } else {
        STAMP.get(word).max(now)
    };
    ROUGH.set(STAMP.set(word, stamp), 0)
}

/// The word's flags (open, rough, in flight) as the low 25 bits of one
/// number: `open` is the top bit, rotated to the bottom, so that a sweep
/// tests all three on every slot with one small mask.
fn flags(word: u64) -> u64 {
    const _: () = assert!(OPEN.end() == 64 && ROUGH.end() == IN_FLIGHT.end() + 1);
    word.rotate_left(1) & ((1 << (ROUGH.end() + 1)) - 1)
}

/// [`flags`] of an open, rough word with nothing in flight.
const OPEN_ROUGH_IDLE: u64 = 1 | ROUGH.mask() << 1;
/// [`flags`] of an open, exact word with nothing in flight.
const OPEN_EXACT_IDLE: u64 = 1;

fn is_rough_idle(word: u64) -> bool {
    flags(word) == OPEN_ROUGH_IDLE
}

fn is_idle(word: u64, now: u64, timeout: u64) -> bool {
    flags(word) == OPEN_EXACT_IDLE && now.saturating_sub(STAMP.get(word)) >= timeout
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
            activity.check(NONE_RECENT, || unreachable!("closed: no clock read"), 10),
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
        activity.touch(|| 40);
        assert_eq!(activity.try_expire(59, 10), Expire::Active);
        activity.touch(|| 70);
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
        assert_eq!(
            activity.check(NONE_RECENT, || unreachable!("rough"), 10),
            Check::Busy
        );
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
        assert_eq!(activity.check(NONE_RECENT, || 509, 10), Check::Busy);
        assert_eq!(activity.check(NONE_RECENT, || 510, 10), Check::Idle(510));
        assert_eq!(activity.try_expire(510, 10), Expire::Expired);
    }

    /// A claim that a descheduled stamper left behind is taken over, never
    /// waited for; a rough word, claimed or not, is never idle; a request's
    /// end clears the claim; a touch under a request in flight does nothing.
    #[test]
    fn a_claim_left_behind_is_taken_over_and_never_idle() {
        let activity = Activity::new();
        activity.reset(None, 0);
        // Another thread (id 41) claimed it, then stopped before stamping.
        let claimed = STAMP.set(activity.0.load(Ordering::Relaxed), claim_of(41).unwrap());
        activity.0.store(claimed, Ordering::Relaxed);
        assert!(activity.is_rough());
        assert!(!activity.looks_idle(u64::MAX / 2, 10));
        assert_eq!(
            activity.check(NONE_RECENT, || unreachable!("rough"), 10),
            Check::Busy
        );
        assert_eq!(activity.try_expire(1_000, 10), Expire::Active);
        activity.make_exact(|| 1_000);
        assert!(!activity.is_rough());
        assert_eq!(activity.try_expire(1_010, 10), Expire::Expired);

        let activity = Activity::new();
        activity.reset(Some(5), 0);
        assert_eq!(activity.enter(u64::MAX), Enter::Entered);
        activity.touch(|| 500);
        activity.exit(None);
        let word = activity.0.load(Ordering::Relaxed);
        assert_eq!((ROUGH.get(word), STAMP.get(word)), (1, UNCLAIMED));
        activity.touch(|| 600);
        assert!(!activity.is_rough());
        assert_eq!(activity.try_expire(609, 10), Expire::Active);
        assert_eq!(activity.try_expire(610, 10), Expire::Expired);
    }

    /// A lookup's first comparison decides nothing the fields would not
    /// decide with the same reading: a word above `recent_above(latest,
    /// timeout)` is one the full check finds busy at `latest`; a closed word
    /// is never above; and an open, exact word with nothing in flight at or
    /// below it is idle at `latest` (the comparison lets through only what
    /// the fields must look at). One case apart, where the comparison is the
    /// later: a stamp later than the reading (a lookup that loaded an older
    /// reading than a sweep's stamp) with a zero timeout, which the fields'
    /// saturating difference finds idle, and the comparison busy.
    #[test]
    fn the_first_comparison_agrees_with_the_fields() {
        let stamps = [0, 1, 9, 10, 11, 989, 990, 991, 1_000, STAMP.max() - 1];
        let claims = [UNCLAIMED, claim_of(0).unwrap(), claim_of(41).unwrap()];
        let latests = [0, 5, 10, 999, 1_000, 1_001, MAX_STAMP];
        let timeouts = [0, 1, 10, 1_000, MAX_TIMEOUT.as_millis() as u64];
        for (open, rough, in_flight) in (0..2)
            .flat_map(|o| (0..2).map(move |r| (o, r)))
            .flat_map(|(o, r)| [0, 1, IN_FLIGHT.max()].map(|n| (o, r, n)))
        {
            let fields = match rough {
                1 => &claims[..],
                _ => &stamps[..],
            };
            for &stamp in fields {
                let word = OPEN.set(
                    STAMP.set(ROUGH.set(IN_FLIGHT.set(0, in_flight), rough), stamp),
                    open,
                );
                for latest in latests {
                    for timeout in timeouts {
                        let recent = recent_above(latest, timeout);
                        let full =
                            Activity(AtomicU64::new(word)).check(NONE_RECENT, || latest, timeout);
                        let case = format!("word {word:#x}, latest {latest}, timeout {timeout}");
                        let fast = Activity(AtomicU64::new(word)).check(recent, || latest, timeout);
                        if rough == 0 && stamp > latest && timeout == 0 {
                            assert_eq!(fast, if open == 1 { Check::Busy } else { full }, "{case}");
                            continue;
                        }
                        assert_eq!(fast, full, "{case}");
                        if word > recent {
                            assert_eq!(full, Check::Busy, "{case}");
                            assert_eq!(open, 1, "{case}: a closed word above");
                        } else if open == 1 && rough == 0 && in_flight == 0 {
                            assert_eq!(full, Check::Idle(latest), "{case}");
                        }
                    }
                }
            }
        }
        // The number grows with the reading.
        assert!(recent_above(999, 1_000) < recent_above(1_000, 1_000));
        assert!(recent_above(1_000, 1_000) < recent_above(1_001, 1_000));
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
        assert_eq!(
            activity.check(NONE_RECENT, || unreachable!("rough"), 10),
            Check::Busy
        );
        assert_eq!(activity.try_expire(1_000, 10), Expire::Active);
        // The next sweep reads 1_000 after seeing it rough: idle from there.
        activity.make_exact(|| 1_000);
        assert_eq!(activity.try_expire(1_009, 10), Expire::Active);
        assert_eq!(activity.try_expire(1_010, 10), Expire::Expired);
    }
}

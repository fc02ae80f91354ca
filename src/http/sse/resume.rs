//! Resumable SSE streams (MCP 2025-11-25, "Resumability and Redelivery"):
//! event ids that name their stream, the per-stream event logs, and the
//! `Last-Event-ID` lookup that finds the one stream to replay.
//!
//! * Every SSE stream of a session has a number: 0 is the standalone `GET`
//!   stream, and each `POST` answered with a stream gets the next one.
//!   An event id is `STREAM-SEQ`: `SEQ` counts that stream's events from 1
//!   (0 is the priming event), drawn under the session's stream lock, so
//!   ids are unique in the session and strictly increasing per stream even
//!   under concurrent senders.
//! * With the event log on ([`Builder::event_log`]), each stream keeps its
//!   last events. A `GET` with `Last-Event-ID: S-N` replays stream `S`
//!   only, from `N + 1`, then carries it on (a `POST` reply still being
//!   produced goes on to the new connection; a finished one ends after the
//!   replay). The stream must not be connected meanwhile (409), and must
//!   be one of this session's (else 400).
//! * A `POST` reply stream whose connection drops is not cancelled: its
//!   handler runs on and its events are logged for the client's resume.
//!   [`Context::close_sse_stream`] drops the connection on purpose (SSE
//!   polling).
//! * Clients at 2025-11-25 or later get a priming event (an id, a `retry`
//!   field and empty data) first on each resumable stream, so they can
//!   resume even before the first message.
//! * Each log is bounded in events and in bytes; each connection carrying a
//!   stream is an [`Outlet`] (bounded queue, stall detection: `outlet.rs`).
//!
//! [`Builder::event_log`]: crate::http::Builder::event_log
//! [`Context::close_sse_stream`]: crate::http::Context::close_sse_stream

use super::frame::{self, event};
use super::outlet::{Outlet, QueueLimits};
use crate::http::counters::HttpCounters;
use bytes::Bytes;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The queue of one connection carrying a stream.
pub(crate) type StreamQueue = Arc<Outlet>;

/// Finished `POST` streams whose logs a session keeps for late resumes;
/// the oldest finished one goes first. Streams still running are never
/// evicted (their number is bounded by the session's requests in flight).
const FINISHED_KEPT: usize = 16;

/// The standalone `GET` stream's number.
pub(crate) const STANDALONE: u64 = 0;

/// An SSE event id: which stream, which event of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventId {
    pub(crate) stream: u64,
    pub(crate) seq: u64,
}

impl EventId {
    /// Parses `STREAM-SEQ`; `None` for anything else.
    pub(crate) fn parse(text: &str) -> Option<EventId> {
        let (stream, seq) = text.trim().split_once('-')?;
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
        if !(digits(stream) && digits(seq)) {
            return None;
        }
        Some(EventId {
            stream: stream.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.stream, self.seq)
    }
}

/// One stream's state.
#[derive(Debug, Default)]
struct Log {
    /// The last events, oldest first (empty without an event log).
    events: VecDeque<(u64, Bytes)>,
    /// The last event number drawn.
    last_seq: u64,
    /// The connection carrying the stream now, if any.
    sink: Option<StreamQueue>,
    /// The stream has ended (its reply is complete): a resume replays and
    /// ends.
    done: bool,
    /// A client has had the stream: its events are logged from then on. A
    /// `POST` reply stream is opened with its response; the standalone
    /// stream by the first `GET`, so a session whose client never opens
    /// one keeps no log of it.
    opened: bool,
}

impl Log {
    fn connected(&self) -> bool {
        self.sink.as_ref().is_some_and(|s| s.is_open())
    }

    /// Lets go of the connection: it delivers what it has queued, then
    /// ends.
    fn disconnect(&mut self) {
        if let Some(sink) = self.sink.take() {
            sink.finish();
        }
    }
}

/// Why a `GET` could not open or resume a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// The stream is connected already (409).
    Conflict,
    /// `Last-Event-ID` names no stream of this session (400).
    UnknownStream,
}

/// The bounds of the event logs, shared by every session of a manager.
#[derive(Debug, Clone)]
pub(crate) struct LogBounds {
    /// Events kept per stream, at most (0: no logs).
    pub(crate) events: usize,
    /// Bytes kept per session, all its streams' logs together.
    pub(crate) session_bytes: usize,
    /// Bytes kept by every session's logs together.
    pub(crate) total: Arc<LogBudget>,
}

/// The bytes every session's event logs hold, against their common bound.
#[derive(Debug)]
pub(crate) struct LogBudget {
    limit: usize,
    used: AtomicUsize,
}

impl LogBudget {
    pub(crate) fn new(limit: usize) -> LogBudget {
        LogBudget {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// The bytes held now (`sessionreg_http_event_log_bytes`).
    pub(crate) fn used(&self) -> usize {
        // Relaxed: a gauge, and a bound that may be passed by the frames
        // being logged at one instant (see `take`).
        self.used.load(Ordering::Relaxed)
    }

    /// Counts `bytes` in; whether the total stays within the bound (when
    /// it does not, they are counted in all the same: the caller evicts
    /// or gives them back).
    fn take(&self, bytes: usize) -> bool {
        self.used.fetch_add(bytes, Ordering::Relaxed) + bytes <= self.limit
    }

    fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }

    fn over(&self) -> bool {
        self.used() > self.limit
    }
}

/// Every stream of one session: kept in the session's entry, behind its
/// stream lock.
#[derive(Debug)]
pub(crate) struct Logs {
    streams: HashMap<u64, Log>,
    finished: VecDeque<u64>,
    /// Detach requests for `POST` streams of requests still running whose
    /// reply has not started; each is taken off when its request's reply
    /// starts or the request ends (`forget`), so there are at most as
    /// many as the session's requests in flight.
    detach_early: Vec<u64>,
    bounds: LogBounds,
    /// The bytes of the frames in this session's logs.
    bytes: usize,
    /// The session has ended: streams opened from now on end at once, and
    /// nothing more is logged.
    closed: bool,
    /// The bounds of each connection's queue.
    limits: QueueLimits,
    counters: Arc<HttpCounters>,
}

impl Drop for Logs {
    fn drop(&mut self) {
        self.bounds.total.give_back(self.bytes);
    }
}

impl Logs {
    /// The logs of one session within `bounds` (none when `bounds.events`
    /// is 0), with connections bounded by `limits`.
    pub(crate) fn new(bounds: LogBounds, limits: QueueLimits, counters: Arc<HttpCounters>) -> Logs {
        let mut streams = HashMap::new();
        streams.insert(STANDALONE, Log::default());
        Logs {
            streams,
            finished: VecDeque::new(),
            detach_early: Vec::new(),
            bounds,
            bytes: 0,
            closed: false,
            limits,
            counters,
        }
    }

    /// A connection's queue, for a session that has ended.
    pub(crate) fn ended(&self) -> StreamQueue {
        Outlet::ended(Arc::clone(&self.counters))
    }

    /// Whether events are logged (and so streams resumable).
    pub(crate) fn logging(&self) -> bool {
        self.bounds.events > 0
    }

    /// Draws the next id of `stream`, logs the event (evicting the oldest
    /// events past the stream's count, the session's bytes or every
    /// session's bytes), and returns its frame and the connection to
    /// deliver it on (if one is live).
    pub(crate) fn record(&mut self, stream: u64, message: &Value) -> (Bytes, Option<StreamQueue>) {
        let logging = self.logging() && !self.closed;
        let events = self.bounds.events;
        let log = self.streams.entry(stream).or_default();
        log.last_seq += 1;
        let frame = event(
            EventId {
                stream,
                seq: log.last_seq,
            },
            message,
        );
        let sink = log.sink.clone().filter(|s| s.is_open());
        if logging && log.opened {
            let len = frame.len();
            log.events.push_back((log.last_seq, frame.clone()));
            let mut dropped = 0;
            while log.events.len() > events {
                let Some((_, old)) = log.events.pop_front() else {
                    break;
                };
                dropped += old.len();
            }
            let fits = self.bounds.total.take(len);
            self.bytes += len;
            self.release(dropped);
            if !fits || self.bytes > self.bounds.session_bytes {
                self.evict(stream);
            }
        }
        (frame, sink)
    }

    /// Gives back `bytes` that left this session's logs.
    fn release(&mut self, bytes: usize) {
        self.bytes -= bytes;
        self.bounds.total.give_back(bytes);
    }

    /// Lets the oldest events go until this session is within its bytes
    /// and every session's logs within theirs (as far as this session's
    /// own events can make room): finished streams' first, oldest stream
    /// first, then those of `current` (the stream being logged), then any
    /// other's.
    fn evict(&mut self, current: u64) {
        let over = |logs: &Logs| logs.bytes > logs.bounds.session_bytes || logs.bounds.total.over();
        let mut order: Vec<u64> = self.finished.iter().copied().collect();
        order.push(current);
        order.extend(
            self.streams
                .keys()
                .copied()
                .filter(|s| *s != current && !self.finished.contains(s)),
        );
        for stream in order {
            while over(self) {
                let Some((_, old)) = self
                    .streams
                    .get_mut(&stream)
                    .and_then(|l| l.events.pop_front())
                else {
                    break;
                };
                self.release(old.len());
            }
        }
    }

    /// Connects a new `POST` reply stream; with `priming`, its priming
    /// event goes first.
    pub(crate) fn open_post(
        &mut self,
        stream: u64,
        priming: Option<Option<Duration>>,
    ) -> StreamQueue {
        if self.closed {
            return self.ended();
        }
        let outlet = Outlet::new(self.limits, Arc::clone(&self.counters));
        if let Some(retry) = priming {
            outlet.preload([frame::priming(EventId { stream, seq: 0 }, retry)]);
        }
        let early = match self.detach_early.iter().position(|s| *s == stream) {
            Some(at) => {
                self.detach_early.swap_remove(at);
                true
            }
            None => false,
        };
        let log = self.streams.entry(stream).or_default();
        log.opened = true;
        if early {
            // Closed before it started: the client gets the priming event
            // only.
            outlet.finish();
        } else {
            log.sink = Some(Arc::clone(&outlet));
        }
        outlet
    }

    /// Drops the connection carrying `stream`, leaving the stream itself
    /// running (logged) for the client to resume.
    pub(crate) fn detach(&mut self, stream: u64) {
        match self.streams.get_mut(&stream) {
            Some(log) => log.disconnect(),
            None if !self.detach_early.contains(&stream) => self.detach_early.push(stream),
            None => {}
        }
    }

    /// The request of `stream` is done with its reply (answered without a
    /// stream, failed, or stopped): a detach it asked for before its
    /// stream opened has nothing left to close.
    pub(crate) fn forget(&mut self, stream: u64) {
        self.detach_early.retain(|s| *s != stream);
    }

    /// The stream has ended: its connection ends after what is queued, and
    /// its log is kept for a late resume (the oldest finished logs go).
    pub(crate) fn finish(&mut self, stream: u64) {
        self.detach_early.retain(|s| *s != stream);
        if let Some(log) = self.streams.get_mut(&stream) {
            log.done = true;
            log.disconnect();
            self.finished.push_back(stream);
        }
        while self.finished.len() > FINISHED_KEPT {
            if let Some(old) = self.finished.pop_front() {
                if let Some(log) = self.streams.remove(&old) {
                    let bytes = log.events.iter().map(|(_, f)| f.len()).sum();
                    self.release(bytes);
                }
            }
        }
    }

    /// Opens the standalone stream (no `last`) or resumes the stream `last`
    /// names, replaying what it logged after `last`.
    pub(crate) fn open_get(
        &mut self,
        last: Option<EventId>,
        priming: Option<Option<Duration>>,
    ) -> Result<StreamQueue, OpenError> {
        if self.closed {
            // The session has ended: an already-ended stream.
            return Ok(self.ended());
        }
        // Without a log nothing can be replayed: the header is ignored and
        // the standalone stream opens afresh.
        let last = last.filter(|_| self.logging());
        let stream = last.map_or(STANDALONE, |l| l.stream);
        let log = self
            .streams
            .get_mut(&stream)
            .ok_or(OpenError::UnknownStream)?;
        if last.is_some_and(|l| l.seq > log.last_seq) {
            // An id this stream never gave out.
            return Err(OpenError::UnknownStream);
        }
        if log.connected() {
            return Err(OpenError::Conflict);
        }
        log.opened = true;
        let outlet = Outlet::new(self.limits, Arc::clone(&self.counters));
        match last {
            // The log bounds the replay; the queue's bounds apply after it.
            Some(last) => outlet.preload(
                log.events
                    .iter()
                    .filter(|(seq, _)| *seq > last.seq)
                    .map(|(_, frame)| frame.clone()),
            ),
            None => {
                if let Some(retry) = priming {
                    let id = EventId {
                        stream,
                        seq: log.last_seq,
                    };
                    outlet.preload([frame::priming(id, retry)]);
                }
            }
        }
        if log.done {
            // A finished stream ends after its replay.
            outlet.finish();
        } else {
            log.sink = Some(Arc::clone(&outlet));
        }
        Ok(outlet)
    }

    /// Drops every connection and every log (the session ended).
    pub(crate) fn close(&mut self) -> Vec<StreamQueue> {
        self.closed = true;
        let bytes = std::mem::take(&mut self.bytes);
        self.bounds.total.give_back(bytes);
        self.streams
            .values_mut()
            .filter_map(|l| {
                l.events = VecDeque::new();
                l.sink.take()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bounded(events: usize, session_bytes: usize, total: &Arc<LogBudget>) -> Logs {
        let limits = QueueLimits {
            messages: 8,
            bytes: 1 << 20,
            stall: None,
        };
        let bounds = LogBounds {
            events,
            session_bytes,
            total: Arc::clone(total),
        };
        Logs::new(bounds, limits, Arc::new(HttpCounters::new()))
    }

    fn logs(events: usize) -> Logs {
        bounded(events, usize::MAX, &Arc::new(LogBudget::new(usize::MAX)))
    }

    /// Opens the standalone stream once and lets it go (its client went
    /// away): its events are logged from then on.
    fn opened(mut logs: Logs) -> Logs {
        logs.open_get(None, None).unwrap().body_dropped();
        logs
    }

    /// The bytes of a session's logs, counted from the frames.
    fn held(logs: &Logs) -> usize {
        logs.streams
            .values()
            .flat_map(|l| l.events.iter())
            .map(|(_, f)| f.len())
            .sum()
    }

    /// The frames a connection has queued, and whether it has ended.
    fn take(outlet: &Outlet) -> (Vec<Bytes>, bool) {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut frames = Vec::new();
        loop {
            match outlet.poll_next(&mut cx) {
                std::task::Poll::Ready(Some(frame)) => frames.push(frame),
                std::task::Poll::Ready(None) => return (frames, true),
                std::task::Poll::Pending => return (frames, false),
            }
        }
    }

    fn ids(outlet: &Outlet) -> Vec<String> {
        let mut out = Vec::new();
        for frame in take(outlet).0 {
            let text = String::from_utf8(frame.to_vec()).unwrap();
            out.push(
                text.lines()
                    .next()
                    .unwrap()
                    .trim_start_matches("id: ")
                    .to_string(),
            );
        }
        out
    }

    #[test]
    fn event_ids_round_trip() {
        let id = EventId { stream: 3, seq: 17 };
        assert_eq!(EventId::parse(&id.to_string()), Some(id));
        for bad in [
            "",
            "3",
            "3-",
            "-1",
            "a-1",
            "3-1-2",
            "1-+2",
            "99999999999999999999999-1",
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad}");
        }
    }

    /// The 2025-11-25 page: "The server MUST NOT replay messages that
    /// would have been delivered on a different stream."
    #[test]
    fn a_resume_replays_only_its_own_stream() {
        let mut logs = opened(logs(8));
        let post = logs.open_post(1, Some(None));
        assert_eq!(ids(&post), ["1-0"]);
        logs.record(STANDALONE, &json!(1));
        logs.record(1, &json!(2));
        logs.record(STANDALONE, &json!(3));
        logs.record(1, &json!(4));
        post.body_dropped();
        let resumed = logs.open_get(EventId::parse("1-0"), None).unwrap();
        assert_eq!(ids(&resumed), ["1-1", "1-2"]);
        let standalone = logs.open_get(EventId::parse("0-1"), None).unwrap();
        assert_eq!(ids(&standalone), ["0-2"]);
        // Connected now: a second resume of either is a conflict.
        assert_eq!(
            logs.open_get(EventId::parse("1-0"), None).unwrap_err(),
            OpenError::Conflict
        );
        assert_eq!(logs.open_get(None, None).unwrap_err(), OpenError::Conflict);
        // Streams and events this session never had.
        assert_eq!(
            logs.open_get(EventId::parse("7-1"), None).unwrap_err(),
            OpenError::UnknownStream
        );
        resumed.body_dropped();
        assert_eq!(
            logs.open_get(EventId::parse("1-9"), None).unwrap_err(),
            OpenError::UnknownStream
        );
    }

    #[test]
    fn a_finished_stream_replays_and_ends() {
        let mut logs = logs(8);
        drop(logs.open_post(2, None));
        logs.record(2, &json!("result"));
        logs.finish(2);
        let rx = logs.open_get(EventId::parse("2-0"), None).unwrap();
        assert_eq!(ids(&rx), ["2-1"]);
        assert!(take(&rx).1, "ends after the replay");
        // Finished logs are bounded.
        for s in 10..10 + FINISHED_KEPT as u64 {
            drop(logs.open_post(s, None));
            logs.finish(s);
        }
        assert_eq!(
            logs.open_get(EventId::parse("2-0"), None).unwrap_err(),
            OpenError::UnknownStream
        );
    }

    /// A stream nobody opened has no log.
    #[test]
    fn the_standalone_stream_is_logged_once_opened() {
        let mut logs = logs(8);
        logs.record(STANDALONE, &json!(1));
        assert_eq!(held(&logs), 0);
        let mut logs = opened(logs);
        logs.record(STANDALONE, &json!(2));
        let resumed = logs.open_get(EventId::parse("0-1"), None).unwrap();
        assert_eq!(ids(&resumed), ["0-2"]);
    }

    #[test]
    fn a_sessions_logs_share_one_byte_bound() {
        let message = json!({ "pad": "x".repeat(50) });
        let one = event(EventId { stream: 0, seq: 1 }, &message).len();
        let total = Arc::new(LogBudget::new(usize::MAX));
        // Room for 100 events a stream by count, for about three in all by
        // bytes.
        let mut logs = opened(bounded(100, 3 * one + one / 2, &total));
        for stream in [1, 2] {
            drop(logs.open_post(stream, None));
        }
        for stream in [STANDALONE, 1, 2, 1, STANDALONE, 2, 2, 1] {
            logs.record(stream, &message);
            assert!(logs.bytes <= 3 * one + one / 2);
            assert_eq!(logs.bytes, held(&logs));
            assert_eq!(total.used(), logs.bytes);
        }
        // A stream past the bound lets its own oldest go first: each keeps
        // its newest.
        let newest = |stream| logs.streams[&stream].events.back().map(|e| e.0);
        assert_eq!(newest(2), Some(3));
        assert_eq!(newest(1), Some(3));
        // Finished streams' logs go first.
        logs.finish(1);
        logs.record(2, &message);
        assert!(logs.streams[&1].events.len() < 2);
        drop(logs);
        assert_eq!(total.used(), 0);
    }

    #[test]
    fn every_sessions_logs_share_the_total_bound() {
        let message = json!({ "pad": "x".repeat(50) });
        let one = event(EventId { stream: 0, seq: 1 }, &message).len();
        let total = Arc::new(LogBudget::new(4 * one));
        let mut a = opened(bounded(100, usize::MAX, &total));
        let mut b = opened(bounded(100, usize::MAX, &total));
        for _ in 0..3 {
            a.record(STANDALONE, &message);
        }
        for _ in 0..3 {
            b.record(STANDALONE, &message);
            assert!(total.used() <= 4 * one);
        }
        // `a` keeps what it had room for; `b`, finding no room, lets its
        // own oldest go (it cannot take `a`'s).
        assert_eq!(held(&a), 3 * one);
        assert_eq!(held(&b), one);
        a.close();
        assert_eq!(total.used(), one);
        drop(b);
        assert_eq!(total.used(), 0);
    }

    #[test]
    fn an_early_detach_is_forgotten_with_its_request() {
        let mut logs = logs(8);
        for stream in 1..100 {
            logs.detach(stream);
            logs.detach(stream);
            logs.forget(stream);
        }
        assert!(logs.detach_early.is_empty());
    }

    #[test]
    fn without_a_log_last_event_id_is_ignored() {
        let mut logs = logs(0);
        let rx = logs.open_get(EventId::parse("5-5"), None).unwrap();
        assert_eq!(ids(&rx), Vec::<String>::new());
        assert_eq!(logs.open_get(None, None).unwrap_err(), OpenError::Conflict);
    }
}

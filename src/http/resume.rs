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
//! [`Builder::event_log`]: super::Builder::event_log
//! [`Context::close_sse_stream`]: super::Context::close_sse_stream

use super::counters::HttpCounters;
use super::outlet::{Outlet, QueueLimits};
use super::rules::Version;
use bytes::Bytes;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The queue of one connection carrying a stream.
pub(crate) type Sink = Arc<Outlet>;

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

/// One SSE event carrying a JSON-RPC message.
pub(crate) fn event(id: EventId, message: &Value) -> Bytes {
    let data = serde_json::to_string(message).unwrap_or_default();
    Bytes::from(format!("id: {id}\ndata: {data}\n\n"))
}

/// The priming event: an id to resume from, the reconnection delay, and
/// empty data (2025-11-25, "Sending Messages to the Server" 6).
pub(crate) fn priming(id: EventId, retry: Option<Duration>) -> Bytes {
    match retry {
        Some(retry) => Bytes::from(format!(
            "id: {id}\nretry: {}\ndata: \n\n",
            retry.as_millis()
        )),
        None => Bytes::from(format!("id: {id}\ndata: \n\n")),
    }
}

/// Whether a client at `version` understands priming events and resumes
/// streams the 2025-11-25 way.
pub(crate) fn resumes(version: Version) -> bool {
    matches!(version, Version::Sessions(v) if v >= "2025-11-25")
}

/// One stream's state.
#[derive(Debug, Default)]
struct Log {
    /// The last events, oldest first (empty without an event log).
    events: VecDeque<(u64, Bytes)>,
    /// The bytes of the frames in `events`.
    bytes: usize,
    /// The last event number drawn.
    last_seq: u64,
    /// The connection carrying the stream now, if any.
    sink: Option<Sink>,
    /// The stream has ended (its reply is complete): a resume replays and
    /// ends.
    done: bool,
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

/// Every stream of one session: kept in the session's entry, behind its
/// stream lock.
#[derive(Debug)]
pub(crate) struct Logs {
    streams: HashMap<u64, Log>,
    finished: VecDeque<u64>,
    /// Detach requests for `POST` streams not registered yet.
    detach_early: Vec<u64>,
    /// Events per stream's log, at most.
    capacity: usize,
    /// Bytes per stream's log, at most.
    max_bytes: usize,
    /// The bounds of each connection's queue.
    limits: QueueLimits,
    counters: Arc<HttpCounters>,
}

impl Logs {
    /// Logs of at most `capacity` events and `max_bytes` bytes per stream
    /// (no logs when `capacity` is 0), with connections bounded by `limits`.
    pub(crate) fn new(
        capacity: usize,
        max_bytes: usize,
        limits: QueueLimits,
        counters: Arc<HttpCounters>,
    ) -> Logs {
        let mut streams = HashMap::new();
        streams.insert(STANDALONE, Log::default());
        Logs {
            streams,
            finished: VecDeque::new(),
            detach_early: Vec::new(),
            capacity,
            max_bytes,
            limits,
            counters,
        }
    }

    /// A connection's queue, for a session that has ended.
    pub(crate) fn ended(&self) -> Sink {
        Outlet::ended(Arc::clone(&self.counters))
    }

    /// Whether events are logged (and so streams resumable).
    pub(crate) fn logging(&self) -> bool {
        self.capacity > 0
    }

    /// Draws the next id of `stream`, logs the event (evicting the oldest
    /// past the log's count or bytes), and returns its frame and the
    /// connection to deliver it on (if one is live).
    pub(crate) fn record(&mut self, stream: u64, message: &Value) -> (Bytes, Option<Sink>) {
        let (capacity, max_bytes) = (self.capacity, self.max_bytes);
        let log = self.streams.entry(stream).or_default();
        log.last_seq += 1;
        let frame = event(
            EventId {
                stream,
                seq: log.last_seq,
            },
            message,
        );
        if capacity > 0 {
            log.bytes += frame.len();
            log.events.push_back((log.last_seq, frame.clone()));
            while log.events.len() > capacity || log.bytes > max_bytes {
                let Some((_, evicted)) = log.events.pop_front() else {
                    break;
                };
                log.bytes -= evicted.len();
            }
        }
        let sink = log.sink.clone().filter(|s| s.is_open());
        (frame, sink)
    }

    /// Connects a new `POST` reply stream; with `priming`, its priming
    /// event goes first.
    pub(crate) fn open_post(&mut self, stream: u64, priming: Option<Option<Duration>>) -> Sink {
        let outlet = Outlet::new(self.limits, Arc::clone(&self.counters));
        if let Some(retry) = priming {
            outlet.preload([self::priming(EventId { stream, seq: 0 }, retry)]);
        }
        let early = match self.detach_early.iter().position(|s| *s == stream) {
            Some(at) => {
                self.detach_early.swap_remove(at);
                true
            }
            None => false,
        };
        let log = self.streams.entry(stream).or_default();
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
            None => self.detach_early.push(stream),
        }
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
                self.streams.remove(&old);
            }
        }
    }

    /// Opens the standalone stream (no `last`) or resumes the stream `last`
    /// names, replaying what it logged after `last`.
    pub(crate) fn open_get(
        &mut self,
        last: Option<EventId>,
        priming: Option<Option<Duration>>,
    ) -> Result<Sink, OpenError> {
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
                    outlet.preload([self::priming(id, retry)]);
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

    /// Drops every connection (the session ended).
    pub(crate) fn close(&mut self) -> Vec<Sink> {
        self.streams
            .values_mut()
            .filter_map(|l| l.sink.take())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn logs(capacity: usize) -> Logs {
        let limits = QueueLimits {
            messages: 8,
            bytes: 1 << 20,
            stall: None,
        };
        Logs::new(capacity, usize::MAX, limits, Arc::new(HttpCounters::new()))
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
        let mut logs = logs(8);
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

    #[test]
    fn each_log_is_bounded_in_bytes_as_well_as_events() {
        let limits = QueueLimits {
            messages: 8,
            bytes: 1 << 20,
            stall: None,
        };
        let message = json!({ "pad": "x".repeat(50) });
        let one = event(EventId { stream: 0, seq: 1 }, &message).len();
        // Room for 100 events by count, for about three by bytes.
        let mut logs = Logs::new(
            100,
            3 * one + one / 2,
            limits,
            Arc::new(HttpCounters::new()),
        );
        for _ in 0..10 {
            logs.record(STANDALONE, &message);
        }
        let log = &logs.streams[&STANDALONE];
        assert_eq!(log.events.len(), 3);
        assert_eq!(
            log.bytes,
            log.events.iter().map(|(_, f)| f.len()).sum::<usize>()
        );
        // The newest are kept.
        assert_eq!(log.events.back().unwrap().0, 10);
    }

    #[test]
    fn without_a_log_last_event_id_is_ignored() {
        let mut logs = logs(0);
        let rx = logs.open_get(EventId::parse("5-5"), None).unwrap();
        assert_eq!(ids(&rx), Vec::<String>::new());
        assert_eq!(logs.open_get(None, None).unwrap_err(), OpenError::Conflict);
    }
}

//! The bound on spans waiting for export, and their drops counted (feature
//! `otel`). A span's record enters the queue at its close (`span_layer.rs`)
//! and holds its place until the export that carries it has its answer;
//! past the bound a span is turned away and counted (`queue_full`), and the
//! spans of an export that failed are counted too (`export_failed`), for
//! `/metrics`: `sessionreg_otel_spans_dropped_total{cause}`.
//!
//! A request's span ends into the queue without waiting: one atomic add,
//! an uncontended lock and a push, and a wake of the exporter when a batch
//! is full. A collector that is down only fills the queue; its spans are
//! then dropped and counted, and requests go on as before.

use crate::http::observe::span_record::SpanRecord;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use tokio::sync::Notify;

/// Spans dropped, by cause, since the process started (every export
/// installed counts here).
pub(crate) static DROPPED_QUEUE_FULL: AtomicU64 = AtomicU64::new(0);
/// Spans an export that failed (or timed out) lost.
pub(crate) static DROPPED_EXPORT_FAILED: AtomicU64 = AtomicU64::new(0);

/// An exported span's buffer that grew past this is freed, not kept for
/// spans to come (a batch's worth are kept: about 256 KiB).
const SPARE_BYTES: usize = 4096;

/// Spans between their close and their export's answer, at most
/// `capacity`; the exporter is woken when `batch` wait.
#[derive(Debug)]
pub(crate) struct SpanQueue {
    waiting: Mutex<Waiting>,
    held: AtomicUsize,
    capacity: usize,
    batch: usize,
    /// Wakes the exporter: a batch is full.
    pub(crate) full: Notify,
}

/// The spans waiting, and the buffers of those exported, to be reused.
#[derive(Debug, Default)]
struct Waiting {
    spans: Vec<SpanRecord>,
    spare: Vec<Vec<u8>>,
}

impl SpanQueue {
    /// A queue of `capacity` spans (at least 1), exported by `batch`es.
    pub(crate) fn new(capacity: usize, batch: usize) -> SpanQueue {
        SpanQueue {
            waiting: Mutex::new(Waiting::default()),
            held: AtomicUsize::new(0),
            capacity,
            batch: batch.clamp(1, capacity.max(1)),
            full: Notify::new(),
        }
    }

    /// Spans exported together at most.
    pub(crate) fn batch(&self) -> usize {
        self.batch
    }

    /// Queues a closed span, or drops and counts it when the queue is full;
    /// an exported span's buffer for the next span, if one is kept.
    pub(crate) fn push(&self, span: SpanRecord) -> Option<Vec<u8>> {
        // Relaxed: a count; the span itself goes through the lock, which
        // orders it.
        if self.held.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.held.fetch_sub(1, Ordering::Relaxed);
            DROPPED_QUEUE_FULL.fetch_add(1, Ordering::Relaxed);
            return Some(span.into_body());
        }
        let (waiting, spare) = {
            let mut waiting = self.lock();
            waiting.spans.push(span);
            (waiting.spans.len(), waiting.spare.pop())
        };
        if waiting == self.batch {
            self.full.notify_one();
        }
        spare
    }

    /// Moves up to a batch of the waiting spans into `into` (empty).
    pub(crate) fn take(&self, into: &mut Vec<SpanRecord>) {
        let mut waiting = self.lock();
        let n = waiting.spans.len().min(self.batch);
        into.extend(waiting.spans.drain(..n));
    }

    /// Keeps the buffers of exported spans (`spans`, emptied) for spans
    /// to come, a batch's worth at most; the others are freed here, not
    /// under the lock the requests' spans take.
    pub(crate) fn recycle(&self, spans: &mut Vec<SpanRecord>) {
        spans.retain(|span| span.body_capacity() <= SPARE_BYTES);
        let room = self.batch.saturating_sub(self.lock().spare.len());
        spans.truncate(room);
        let mut waiting = self.lock();
        waiting
            .spare
            .extend(spans.drain(..).map(SpanRecord::into_body));
    }

    /// Gives back the places of `spans` exported (or lost).
    pub(crate) fn leave(&self, spans: usize) {
        self.held.fetch_sub(spans, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        // A panic while pushing or draining leaves a well-formed `Vec`.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Writes `sessionreg_otel_spans_dropped_total{cause}`.
pub(crate) fn write_metrics(out: &mut String) {
    use std::fmt::Write;
    let _ = writeln!(
        out,
        "# HELP sessionreg_otel_spans_dropped_total Spans the OTLP export dropped: its queue \
         was full, or an export failed.\n\
         # TYPE sessionreg_otel_spans_dropped_total counter\n\
         sessionreg_otel_spans_dropped_total{{cause=\"queue_full\"}} {}\n\
         sessionreg_otel_spans_dropped_total{{cause=\"export_failed\"}} {}",
        DROPPED_QUEUE_FULL.load(Ordering::Relaxed),
        DROPPED_EXPORT_FAILED.load(Ordering::Relaxed),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(body_bytes: usize) -> SpanRecord {
        SpanRecord::begin("s", None, Vec::with_capacity(body_bytes))
    }

    #[test]
    fn exported_buffers_come_back_to_spans_to_come_a_batch_at_most() {
        let queue = SpanQueue::new(8, 2);
        assert!(queue.push(span(512)).is_none(), "nothing kept yet");
        assert!(queue.push(span(64 * 1024)).is_none());
        let mut exported = Vec::new();
        queue.take(&mut exported);
        assert_eq!(exported.len(), 2);
        queue.recycle(&mut exported);
        queue.leave(2);
        assert!(exported.is_empty());
        // The small buffer is kept; the one past SPARE_BYTES was freed.
        let spare = queue.push(span(0)).expect("a kept buffer");
        assert!(spare.capacity() >= 512 && spare.capacity() <= SPARE_BYTES);
        assert!(queue.push(span(0)).is_none());
        // Never more than a batch's worth.
        let mut many: Vec<SpanRecord> = (0..5).map(|_| span(512)).collect();
        queue.recycle(&mut many);
        assert_eq!(queue.lock().spare.len(), 2);
    }
}

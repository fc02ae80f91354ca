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

/// Spans between their close and their export's answer, at most
/// `capacity`; the exporter is woken when `batch` wait.
#[derive(Debug)]
pub(crate) struct SpanQueue {
    waiting: Mutex<Vec<SpanRecord>>,
    held: AtomicUsize,
    capacity: usize,
    batch: usize,
    /// Wakes the exporter: a batch is full.
    pub(crate) full: Notify,
}

impl SpanQueue {
    /// A queue of `capacity` spans (at least 1), exported by `batch`es.
    pub(crate) fn new(capacity: usize, batch: usize) -> SpanQueue {
        SpanQueue {
            waiting: Mutex::new(Vec::new()),
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

    /// Queues a closed span, or drops and counts it when the queue is full.
    pub(crate) fn push(&self, span: SpanRecord) {
        // Relaxed: a count; the span itself goes through the lock, which
        // orders it.
        if self.held.fetch_add(1, Ordering::Relaxed) >= self.capacity {
            self.held.fetch_sub(1, Ordering::Relaxed);
            DROPPED_QUEUE_FULL.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let waiting = {
            let mut spans = self.lock();
            spans.push(span);
            spans.len()
        };
        if waiting == self.batch {
            self.full.notify_one();
        }
    }

    /// Moves up to a batch of the waiting spans into `into` (empty).
    pub(crate) fn take(&self, into: &mut Vec<SpanRecord>) {
        let mut spans = self.lock();
        let n = spans.len().min(self.batch);
        into.extend(spans.drain(..n));
    }

    /// Gives back the places of `spans` exported (or lost).
    pub(crate) fn leave(&self, spans: usize) {
        self.held.fetch_sub(spans, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SpanRecord>> {
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

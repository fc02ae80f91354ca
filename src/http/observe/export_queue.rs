//! The bound on spans waiting for export, and their drops counted (feature
//! `otel`). The SDK's batching processor (a thread of its own, a bounded
//! channel, an export per batch or per interval) drops a span it has no
//! room for, but only logs how many at its shutdown; here a gate in front
//! of it counts every span from its end to its export's answer, lets none
//! in past the queue's bound (the processor's own queue, so the processor
//! never drops one itself), and counts what it turns away
//! (`queue_full`), and what an export that failed lost (`export_failed`),
//! for `/metrics`: `sessionreg_otel_spans_dropped_total{cause}`.
//!
//! A request's span ends into the gate without waiting: one atomic add,
//! and the processor's `try_send`. A collector that is down only fills
//! the queue; its spans are then dropped and counted, and requests go on
//! as before.

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, Span, SpanData, SpanExporter, SpanProcessor};
use opentelemetry_sdk::Resource;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Spans dropped, by cause, since the process started (every export
/// installed counts here).
pub(crate) static DROPPED_QUEUE_FULL: AtomicU64 = AtomicU64::new(0);
/// Spans an export that failed (or timed out) lost.
pub(crate) static DROPPED_EXPORT_FAILED: AtomicU64 = AtomicU64::new(0);

/// Spans between their end and their export's answer, at most `capacity`.
#[derive(Debug)]
pub(crate) struct Gate {
    held: AtomicUsize,
    capacity: usize,
}

impl Gate {
    pub(crate) fn new(capacity: usize) -> Gate {
        Gate {
            held: AtomicUsize::new(0),
            capacity,
        }
    }

    /// Takes a place for one span, if there is one.
    fn enter(&self) -> bool {
        // Relaxed: a count; the span itself goes through the processor's
        // channel, which orders it.
        if self.held.fetch_add(1, Ordering::Relaxed) < self.capacity {
            return true;
        }
        self.held.fetch_sub(1, Ordering::Relaxed);
        false
    }

    /// Gives back the places of `spans` exported (or lost).
    fn leave(&self, spans: usize) {
        self.held.fetch_sub(spans, Ordering::Relaxed);
    }
}

/// The SDK's batching processor behind the gate.
#[derive(Debug)]
pub(crate) struct GatedProcessor {
    pub(crate) inner: BatchSpanProcessor,
    pub(crate) gate: Arc<Gate>,
}

impl SpanProcessor for GatedProcessor {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.gate.enter() {
            self.inner.on_end(span);
        } else {
            DROPPED_QUEUE_FULL.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter, giving the gate its places back as each export answers,
/// and counting what a failed one lost.
#[derive(Debug)]
pub(crate) struct GatedExporter<E> {
    pub(crate) inner: E,
    pub(crate) gate: Arc<Gate>,
}

impl<E: SpanExporter> SpanExporter for GatedExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        if result.is_err() {
            DROPPED_EXPORT_FAILED.fetch_add(spans as u64, Ordering::Relaxed);
        }
        self.gate.leave(spans);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
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

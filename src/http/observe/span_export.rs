//! The spans' exporter (feature `otel`): a task on the runtime the export
//! was installed from. It wakes when a batch waits in the queue
//! (`export_queue.rs`), when the schedule's delay has passed, or when a
//! flush asks; it writes each batch as one `ExportTraceServiceRequest`
//! (the resource and the scope encoded once, at install,
//! `export_resource.rs`; each span's record copied in, `span_record.rs`) and POSTs it (`exporter_client.rs`), one
//! export at a time. A failed export's spans are counted and dropped: no
//! retry (a collector that is down would only make the queue wait longer).

use crate::http::observe::export_queue::{SpanQueue, DROPPED_EXPORT_FAILED};
use crate::http::observe::export_resource::ResourceScope;
use crate::http::observe::exporter_client::ExporterClient;
use crate::http::observe::otlp_wire::{self as wire, export};
use crate::http::observe::span_record::SpanRecord;
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Where and how the spans go.
pub(crate) struct SpanExporter {
    pub(crate) queue: Arc<SpanQueue>,
    pub(crate) client: ExporterClient,
    pub(crate) url: http::Uri,
    pub(crate) headers: http::HeaderMap,
    /// The longest a span waits before an export (a batch that fills
    /// sooner goes sooner).
    pub(crate) delay: Duration,
    /// `ResourceSpans.resource` and `ScopeSpans.scope`, encoded.
    origin: Arc<ResourceScope>,
}

/// A flush asked for: its answer is whether every export succeeded.
pub(crate) type Flush = oneshot::Sender<bool>;

impl SpanExporter {
    pub(crate) fn new(
        queue: Arc<SpanQueue>,
        client: ExporterClient,
        url: http::Uri,
        headers: http::HeaderMap,
        delay: Duration,
        origin: Arc<ResourceScope>,
    ) -> SpanExporter {
        SpanExporter {
            queue,
            client,
            url,
            headers,
            delay,
            origin,
        }
    }

    /// Exports until every sender of `flushes` is gone, then exports what
    /// waits and ends.
    pub(crate) async fn run(self, mut flushes: mpsc::UnboundedReceiver<Flush>) {
        let mut batch = Vec::new();
        loop {
            let flush = tokio::select! {
                () = self.queue.full.notified() => None,
                () = tokio::time::sleep(self.delay) => None,
                flush = flushes.recv() => match flush {
                    Some(flush) => Some(flush),
                    None => {
                        self.export_waiting(&mut batch).await;
                        return;
                    }
                },
            };
            let exported = self.export_waiting(&mut batch).await;
            if let Some(flush) = flush {
                let _ = flush.send(exported);
            }
        }
    }

    /// Exports the spans waiting, a batch at a time, until less than a
    /// batch was left; whether every export succeeded.
    async fn export_waiting(&self, batch: &mut Vec<SpanRecord>) -> bool {
        let mut exported = true;
        loop {
            self.queue.take(batch);
            let spans = batch.len();
            if spans == 0 {
                return exported;
            }
            let body = self.encode(batch);
            self.queue.recycle(batch);
            if self
                .client
                .export(&self.url, &self.headers, body)
                .await
                .is_err()
            {
                DROPPED_EXPORT_FAILED.fetch_add(spans as u64, Ordering::Relaxed);
                exported = false;
            }
            self.queue.leave(spans);
            if spans < self.queue.batch() {
                return exported;
            }
        }
    }

    /// `spans` as one `ExportTraceServiceRequest`: every length counted
    /// first, so that each level's is written before its content and
    /// nothing is moved after.
    fn encode(&self, spans: &[SpanRecord]) -> Bytes {
        let origin = &self.origin;
        let spans_len: usize = spans
            .iter()
            .map(|span| wire::field_len(span.encoded_len()))
            .sum();
        let scope_spans = origin.scope.len() + spans_len;
        let resource_spans = origin.resource.len() + wire::field_len(scope_spans);
        let mut out = Vec::with_capacity(wire::field_len(resource_spans));
        let mut head = wire::Head::default();
        head.field_head(export::RESOURCE_SPANS, resource_spans);
        out.extend_from_slice(head.bytes());
        out.extend_from_slice(&origin.resource);
        let mut head = wire::Head::default();
        head.field_head(export::SCOPE_SPANS, scope_spans);
        out.extend_from_slice(head.bytes());
        out.extend_from_slice(&origin.scope);
        for span in spans {
            span.encode(&mut out, export::SPANS);
        }
        debug_assert_eq!(out.len(), wire::field_len(resource_spans));
        Bytes::from(out)
    }
}

//! The spans' exporter (feature `otel`): a task on the runtime the export
//! was installed from. It wakes when a batch waits in the queue
//! (`export_queue.rs`), when the schedule's delay has passed, or when a
//! flush asks; it writes each batch as one `ExportTraceServiceRequest`
//! (the resource and the scope encoded once, at install; each span's record
//! copied in, `span_record.rs`) and POSTs it (`exporter_client.rs`), one
//! export at a time. A failed export's spans are counted and dropped: no
//! retry (a collector that is down would only make the queue wait longer).

use crate::http::observe::export_queue::{SpanQueue, DROPPED_EXPORT_FAILED};
use crate::http::observe::exporter_client::ExporterClient;
use crate::http::observe::otlp_wire::{self as wire, any_value, export};
use crate::http::observe::span_record::SpanRecord;
use bytes::Bytes;
use opentelemetry::{Array, Value};
use opentelemetry_sdk::Resource;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The instrumentation scope the spans are exported under.
const SCOPE: &str = "sessionreg";

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
    resource: Vec<u8>,
    scope: Vec<u8>,
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
        resource: &Resource,
    ) -> SpanExporter {
        let mut encoded = Vec::new();
        let at = wire::begin(&mut encoded, export::RESOURCE);
        for (key, value) in resource.iter() {
            wire::attribute(
                &mut encoded,
                export::RESOURCE_ATTRIBUTES,
                key.as_str(),
                |out| any(out, value),
            );
        }
        wire::end(&mut encoded, at);
        let mut scope = Vec::new();
        let at = wire::begin(&mut scope, export::SCOPE);
        wire::bytes(&mut scope, export::SCOPE_NAME, SCOPE.as_bytes());
        wire::end(&mut scope, at);
        SpanExporter {
            queue,
            client,
            url,
            headers,
            delay,
            resource: encoded,
            scope,
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
            batch.clear();
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

    /// `spans` as one `ExportTraceServiceRequest`.
    fn encode(&self, spans: &[SpanRecord]) -> Bytes {
        let mut out = Vec::with_capacity(self.resource.len() + 64 + spans.len() * 640);
        let resource_spans = wire::begin(&mut out, export::RESOURCE_SPANS);
        out.extend_from_slice(&self.resource);
        let scope_spans = wire::begin(&mut out, export::SCOPE_SPANS);
        out.extend_from_slice(&self.scope);
        for span in spans {
            span.encode(&mut out, export::SPANS);
        }
        wire::end(&mut out, scope_spans);
        wire::end(&mut out, resource_spans);
        Bytes::from(out)
    }
}

/// An OpenTelemetry value as an `AnyValue`'s member.
fn any(out: &mut Vec<u8>, value: &Value) {
    fn each<T>(out: &mut Vec<u8>, values: &[T], one: impl Fn(&mut Vec<u8>, &T)) {
        for value in values {
            let at = wire::begin(out, any_value::ARRAY_VALUES);
            one(out, value);
            wire::end(out, at);
        }
    }
    match value {
        Value::Bool(b) => wire::uint(out, any_value::BOOL, u64::from(*b)),
        Value::I64(i) => wire::uint(out, any_value::INT, *i as u64),
        Value::F64(f) => wire::double(out, any_value::DOUBLE, *f),
        Value::String(s) => wire::bytes(out, any_value::STRING, s.as_str().as_bytes()),
        Value::Array(array) => {
            let at = wire::begin(out, any_value::ARRAY);
            match array {
                Array::Bool(values) => each(out, values, |out, b| {
                    wire::uint(out, any_value::BOOL, u64::from(*b))
                }),
                Array::I64(values) => each(out, values, |out, i| {
                    wire::uint(out, any_value::INT, *i as u64)
                }),
                Array::F64(values) => each(out, values, |out, f| {
                    wire::double(out, any_value::DOUBLE, *f)
                }),
                Array::String(values) => each(out, values, |out, s| {
                    wire::bytes(out, any_value::STRING, s.as_str().as_bytes())
                }),
                other => each(out, &[other], |out, a| {
                    wire::bytes(out, any_value::STRING, a.to_string().as_bytes())
                }),
            }
            wire::end(out, at);
        }
        other => wire::bytes(out, any_value::STRING, other.to_string().as_bytes()),
    }
}

//! The OTLP/HTTP export (feature `otel`) of the process's spans (each
//! request's SERVER span, and any other `tracing` span of the
//! application's that the layer it gives sees) and of the endpoint's
//! duration histograms, to an OpenTelemetry collector, Jaeger, Tempo or
//! any OTLP receiver: protobuf over HTTP, the spans batched behind a
//! bounded queue whose drops are counted (`export_queue.rs`), the metrics
//! exported on an interval.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use sessionreg::http::otlp::{OtlpExport, OtlpSettings};
//! use tracing_subscriber::prelude::*;
//!
//! let export = OtlpExport::install(OtlpSettings::default())?;
//! tracing_subscriber::registry().with(export.layer()).init();
//! // ... build and serve the manager ...
//! export.shutdown(); // sends what is queued
//! # Ok(()) }
//! ```
//!
//! The standard variables apply: `OTEL_EXPORTER_OTLP_ENDPOINT` (and the
//! per-signal `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`), `OTEL_EXPORTER_OTLP_HEADERS`
//! (and the per-signal `..._TRACES_HEADERS`, `..._METRICS_HEADERS`),
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, the batch's
//! `OTEL_BSP_SCHEDULE_DELAY` and `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, and
//! `OTEL_METRIC_EXPORT_INTERVAL`, each unless [`OtlpSettings`] sets it.
//! The queue's length is always [`OtlpSettings::queue`]'s (its drops are
//! counted): `OTEL_BSP_MAX_QUEUE_SIZE` is not read.
//!
//! The spans are written as OTLP straight from the `tracing` spans the
//! layer sees ([`OtlpLayer`]; no OpenTelemetry SDK span in between, and so
//! no sampler but the parent's flag: a span is exported unless its
//! client's context says it is not sampled). The metrics are the
//! histograms the endpoint keeps for `/metrics`, read at each export
//! (`metric_export.rs`): nothing more is recorded per request.

use crate::http::observe::export_env::{self, OtlpSignal};
use crate::http::observe::export_queue::SpanQueue;
use crate::http::observe::export_resource::ResourceScope;
use crate::http::observe::exporter_client::ExporterClient;
use crate::http::observe::metric_export::MetricExporter;
use crate::http::observe::span_export::{Flush, SpanExporter};
use opentelemetry_sdk::Resource;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tracing_subscriber::registry::LookupSpan;

pub use crate::http::observe::span_layer::OtlpLayer;

/// How the export is set up; each `None` is left to the standard
/// variables (then the SDK's defaults).
#[derive(Debug, Clone)]
pub struct OtlpSettings {
    /// The receiver's base URL (`http://collector:4318`); the export adds
    /// `/v1/traces` and `/v1/metrics`. `None`: the `OTEL_EXPORTER_OTLP_*`
    /// variables, else `http://localhost:4318`. Plain HTTP only: put a
    /// collector beside the server to reach a TLS endpoint.
    pub endpoint: Option<String>,
    /// The service's name, unless `OTEL_SERVICE_NAME` names it.
    pub service_name: String,
    /// Spans waiting for export at most (default 2048, the SDK's):
    /// past it a span is dropped and counted
    /// (`sessionreg_otel_spans_dropped_total{cause="queue_full"}`).
    pub queue: usize,
    /// How long one export may take, connection included (default 10 s);
    /// past it the batch is lost and counted (`cause="export_failed"`).
    pub export_timeout: Duration,
    /// How often the metrics are exported; `None`:
    /// `OTEL_METRIC_EXPORT_INTERVAL`, else 60 s.
    pub metrics_interval: Option<Duration>,
}

impl Default for OtlpSettings {
    fn default() -> OtlpSettings {
        OtlpSettings {
            endpoint: None,
            service_name: "sessionreg".to_owned(),
            queue: 2048,
            export_timeout: Duration::from_secs(10),
            metrics_interval: None,
        }
    }
}

/// Why the export could not be set up.
#[derive(Debug)]
pub struct OtlpError(String);

impl fmt::Display for OtlpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OTLP export: {}", self.0)
    }
}

impl std::error::Error for OtlpError {}

/// The export, installed: the spans' queue and exporter (a task on the
/// runtime it was installed from), and the metrics' exporter (another).
pub struct OtlpExport {
    queue: Arc<SpanQueue>,
    /// Ask the spans' exporter and the metrics' for a flush; taken at
    /// shutdown, which ends both.
    flushes: Mutex<Option<Flushes>>,
}

/// The exporters' flush channels.
struct Flushes {
    spans: mpsc::UnboundedSender<Flush>,
    metrics: mpsc::UnboundedSender<Flush>,
}

impl fmt::Debug for OtlpExport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtlpExport").finish_non_exhaustive()
    }
}

impl OtlpExport {
    /// Sets the export up: the spans its [`layer`](Self::layer) sees, and
    /// the histograms of every manager, built before it or after. Needs a
    /// tokio runtime: the exports run on the current one.
    pub fn install(settings: OtlpSettings) -> Result<OtlpExport, OtlpError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| OtlpError("it needs a tokio runtime to export on".to_owned()))?;
        if settings.queue == 0 {
            return Err(OtlpError("queue must be at least 1".to_owned()));
        }
        let client = ExporterClient::new(settings.export_timeout);
        let origin = Arc::new(ResourceScope::new(&resource(&settings.service_name)));
        let endpoint = settings.endpoint.as_deref();

        let queue = Arc::new(SpanQueue::new(settings.queue, export_env::batch_size()));
        let spans = SpanExporter::new(
            Arc::clone(&queue),
            client.clone(),
            export_env::url(endpoint, OtlpSignal::Traces).map_err(OtlpError)?,
            export_env::headers(OtlpSignal::Traces).map_err(OtlpError)?,
            export_env::schedule_delay(),
            Arc::clone(&origin),
        );
        let metrics = MetricExporter {
            client,
            url: export_env::url(endpoint, OtlpSignal::Metrics).map_err(OtlpError)?,
            headers: export_env::headers(OtlpSignal::Metrics).map_err(OtlpError)?,
            interval: settings
                .metrics_interval
                .unwrap_or_else(export_env::metric_interval),
            origin,
        };
        let (span_flushes, asked) = mpsc::unbounded_channel();
        runtime.spawn(spans.run(asked));
        let (metric_flushes, asked) = mpsc::unbounded_channel();
        runtime.spawn(metrics.run(asked));
        Ok(OtlpExport {
            queue,
            flushes: Mutex::new(Some(Flushes {
                spans: span_flushes,
                metrics: metric_flushes,
            })),
        })
    }

    /// The `tracing` layer that exports the spans it sees: each request's
    /// SERVER span (whose parent is set from the client's context when it
    /// is made), any span of the application's (its name, or `otel.name`;
    /// its fields as attributes), the `tracing` events within a span as the
    /// span's events, and `follows_from` as links. Give it a filter
    /// (`LevelFilter::INFO` keeps the transport's DEBUG spans out).
    pub fn layer<S>(&self) -> OtlpLayer<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        OtlpLayer::new(Arc::clone(&self.queue))
    }

    /// Exports what is queued now, spans and metrics; whether both
    /// exports succeeded. (Blocks until they answer: call it off the
    /// runtime's threads, e.g. in `spawn_blocking`.)
    pub fn flush(&self) -> bool {
        let asked = {
            let flushes = self.flushes.lock().unwrap_or_else(PoisonError::into_inner);
            flushes
                .as_ref()
                .map(|flushes| [ask(&flushes.spans), ask(&flushes.metrics)])
        };
        asked.is_some_and(|answers| {
            answers
                .into_iter()
                .all(|answer| answer.is_some_and(|answer| answer.blocking_recv().unwrap_or(false)))
        })
    }

    /// Sends what is queued, then stops exporting (at shutdown; blocks
    /// like [`flush`](Self::flush)).
    pub fn shutdown(&self) {
        let _ = self.flush();
        // Each exporter ends when its last sender is gone.
        self.flushes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}

/// Asks an exporter for a flush: its answer, if it is running.
fn ask(exporter: &mpsc::UnboundedSender<Flush>) -> Option<oneshot::Receiver<bool>> {
    let (done, answer) = oneshot::channel();
    exporter.send(done).ok().map(|()| answer)
}

/// The service's resource: `OTEL_SERVICE_NAME` and
/// `OTEL_RESOURCE_ATTRIBUTES` first, `service_name` where no variable
/// names the service.
fn resource(service_name: &str) -> Resource {
    let origin = std::env::var_os("OTEL_SERVICE_NAME").is_some_and(|v| !v.is_empty());
    let builder = Resource::builder();
    match origin {
        true => builder.build(),
        false => builder.with_service_name(service_name.to_owned()).build(),
    }
}

//! The duration histograms' OTLP export (feature `otel`):
//! `mcp.server.operation.duration` and `mcp.server.session.duration`
//! under the conventions' names, attributes, unit and buckets, read from
//! the histograms the endpoint keeps anyway for `/metrics`
//! (`durations.rs`), so a request records its duration once, in one atomic
//! add, whether the export is on or not. Every manager's histograms are
//! registered here when it is built ([`register`]), before or after the
//! export is installed; a point the same in two managers is their sum, as
//! one meter's instruments of one name would be.
//!
//! A task on the runtime exports them every interval (cumulative points,
//! since each manager began counting), at a flush, and at shutdown; an
//! export that fails is not retried (the next one carries the same counts
//! and more).

use crate::http::observe::durations::{Durations, Histogram};
use crate::http::observe::export_resource::ResourceScope;
use crate::http::observe::exporter_client::ExporterClient;
use crate::http::observe::histogram::HistogramSnapshot;
use crate::http::observe::otlp_wire::{self as wire, metrics as field};
use crate::http::observe::span_export::Flush;
use crate::http::wire::unix_time::unix_nanos;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

/// The histograms of every manager built (those dropped since are pruned).
static REGISTERED: Mutex<Vec<Weak<Durations>>> = Mutex::new(Vec::new());

/// Registers a manager's histograms for export.
pub(crate) fn register(durations: &Arc<Durations>) {
    let mut registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    registered.retain(|d| d.strong_count() > 0);
    registered.push(Arc::downgrade(durations));
}

/// One point: a histogram's attributes and counts (summed over managers).
struct Point {
    start: u64,
    count: u64,
    sum: f64,
    bounds: Vec<f64>,
    buckets: Vec<u64>,
}

/// The points of an export, by histogram and attributes.
type Points = BTreeMap<(Histogram, Vec<(String, String)>), Point>;

/// Where and how the metrics go.
pub(crate) struct MetricExporter {
    pub(crate) client: ExporterClient,
    pub(crate) url: http::Uri,
    pub(crate) headers: http::HeaderMap,
    pub(crate) interval: Duration,
    pub(crate) origin: Arc<ResourceScope>,
}

impl MetricExporter {
    /// Exports every interval and at each flush, until every sender of
    /// `flushes` is gone; then exports once more and ends.
    pub(crate) async fn run(self, mut flushes: mpsc::UnboundedReceiver<Flush>) {
        loop {
            let flush = tokio::select! {
                () = tokio::time::sleep(self.interval) => None,
                flush = flushes.recv() => match flush {
                    Some(flush) => Some(flush),
                    None => {
                        self.export().await;
                        return;
                    }
                },
            };
            let exported = self.export().await;
            if let Some(flush) = flush {
                let _ = flush.send(exported);
            }
        }
    }

    /// Exports the points now (nothing when nothing was counted yet);
    /// whether the receiver took them.
    async fn export(&self) -> bool {
        let Some(body) = self.encode(unix_nanos()) else {
            return true;
        };
        self.client
            .export(&self.url, &self.headers, body)
            .await
            .is_ok()
    }

    /// The points as one `ExportMetricsServiceRequest`, at time `now`;
    /// `None` when nothing was counted yet.
    fn encode(&self, now: u64) -> Option<Bytes> {
        let points = collect();
        (!points.is_empty()).then(|| Bytes::from(encode(&points, &self.origin, now)))
    }
}

/// `points` as one `ExportMetricsServiceRequest`, at time `now`.
fn encode(points: &Points, origin: &ResourceScope, now: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024 + points.len() * 256);
    let resource_metrics = wire::begin(&mut out, field::RESOURCE_METRICS);
    out.extend_from_slice(&origin.resource);
    let scope_metrics = wire::begin(&mut out, field::SCOPE_METRICS);
    out.extend_from_slice(&origin.scope);
    for histogram in [Histogram::Operation, Histogram::Session] {
        let mut of_it = points
            .iter()
            .filter(|((h, _), _)| *h == histogram)
            .peekable();
        if of_it.peek().is_none() {
            continue;
        }
        let (name, description) = describe(histogram);
        let metric = wire::begin(&mut out, field::METRICS);
        wire::bytes(&mut out, field::NAME, name.as_bytes());
        wire::bytes(&mut out, field::DESCRIPTION, description.as_bytes());
        wire::bytes(&mut out, field::UNIT, b"s");
        let data = wire::begin(&mut out, field::HISTOGRAM);
        for ((_, attributes), point) in of_it {
            encode_point(&mut out, attributes, point, now);
        }
        wire::uint(&mut out, field::TEMPORALITY, field::CUMULATIVE);
        wire::end(&mut out, data);
        wire::end(&mut out, metric);
    }
    wire::end(&mut out, scope_metrics);
    wire::end(&mut out, resource_metrics);
    out
}

/// The points of every registered manager, summed by attributes.
fn collect() -> Points {
    let registered: Vec<Arc<Durations>> = REGISTERED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    let mut points = Points::new();
    for durations in registered {
        durations.each_point(|histogram, attributes, snapshot| {
            let key = attributes
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            add(&mut points, (histogram, key), durations.started, snapshot);
        });
    }
    points
}

fn add(
    points: &mut Points,
    key: (Histogram, Vec<(String, String)>),
    start: u64,
    snapshot: HistogramSnapshot,
) {
    let (bounds, counts): (Vec<f64>, Vec<u64>) = snapshot.buckets.into_iter().unzip();
    let point = points.entry(key).or_insert_with(|| Point {
        start,
        count: 0,
        sum: 0.0,
        // The last bucket is +Inf's: not a bound.
        bounds: bounds[..bounds.len().saturating_sub(1)].to_vec(),
        buckets: vec![0; counts.len()],
    });
    point.start = point.start.min(start);
    point.count += snapshot.count;
    point.sum += snapshot.sum_seconds;
    for (total, count) in point.buckets.iter_mut().zip(counts) {
        *total += count;
    }
}

/// A histogram's name and description, as the conventions give them.
fn describe(histogram: Histogram) -> (&'static str, &'static str) {
    match histogram {
        Histogram::Operation => (
            "mcp.server.operation.duration",
            "MCP request or notification duration as observed on the receiver from the time it \
             was received until the result or ack is sent",
        ),
        Histogram::Session => (
            "mcp.server.session.duration",
            "The duration of the MCP session as observed on the MCP server",
        ),
    }
}

fn encode_point(out: &mut Vec<u8>, attributes: &[(String, String)], point: &Point, now: u64) {
    let at = wire::begin(out, field::DATA_POINTS);
    for (key, value) in attributes {
        wire::string_attribute(out, field::ATTRIBUTES, key, value.as_bytes());
    }
    wire::fixed64(out, field::START, point.start);
    wire::fixed64(out, field::TIME, now);
    wire::fixed64(out, field::COUNT, point.count);
    wire::double(out, field::SUM, point.sum);
    let counts = wire::begin(out, field::BUCKET_COUNTS);
    for count in &point.buckets {
        out.extend_from_slice(&count.to_le_bytes());
    }
    wire::end(out, counts);
    let bounds = wire::begin(out, field::BOUNDS);
    for bound in &point.bounds {
        out.extend_from_slice(&bound.to_bits().to_le_bytes());
    }
    wire::end(out, bounds);
    wire::end(out, at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Reason;
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    use prost::Message as _;

    #[test]
    fn two_managers_points_are_summed_and_decode_as_otlp() {
        // A tool name no other test uses: the registry is the process's.
        let tool = "metric_export_probe";
        let managers: Vec<Arc<Durations>> = (0..2).map(|_| Arc::new(Durations::new(16))).collect();
        for (i, durations) in managers.iter().enumerate() {
            register(durations);
            for _ in 0..=i {
                drop(durations.start("tools/call", Some(tool), "2026-07-28"));
            }
        }
        managers[0].session_ended("2025-11-25", Reason::Failed, Duration::from_secs(7200));
        let resource = opentelemetry_sdk::Resource::builder_empty().build();
        let out = encode(&collect(), &ResourceScope::new(&resource), unix_nanos());
        let decoded = ExportMetricsServiceRequest::decode(&out[..]).unwrap();
        let metrics = &decoded.resource_metrics[0].scope_metrics[0].metrics;
        let histogram = |name: &str| match &metrics.iter().find(|m| m.name == name).unwrap().data {
            Some(Data::Histogram(h)) => h.clone(),
            other => panic!("{other:?}"),
        };
        let operation = histogram("mcp.server.operation.duration");
        assert_eq!(operation.aggregation_temporality, 2);
        let point = operation
            .data_points
            .iter()
            .find(|p| {
                p.attributes.iter().any(|kv| {
                    kv.key == "gen_ai.tool.name" && format!("{:?}", kv.value).contains(tool)
                })
            })
            .expect("the probe's point");
        assert_eq!(point.count, 3, "both managers' calls: {point:#?}");
        assert_eq!(point.bucket_counts.len(), point.explicit_bounds.len() + 1);
        assert_eq!(point.bucket_counts.iter().sum::<u64>(), 3);
        assert!(point.start_time_unix_nano <= point.time_unix_nano);
        let session = histogram("mcp.server.session.duration");
        assert!(session.data_points.iter().any(|p| {
            p.attributes.iter().any(|kv| kv.key == "error.type")
                && p.explicit_bounds.last() == Some(&86400.0)
        }));
    }
}

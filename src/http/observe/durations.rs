//! The MCP semantic conventions' two histograms, kept by the endpoint:
//! `mcp.server.operation.duration` (every request and notification, by
//! method, tool or prompt, error type and protocol version) and
//! `mcp.server.session.duration` (every legacy session, by protocol
//! version and, for one that ended in error, the error), shown in
//! `/metrics` as `mcp_server_operation_duration_seconds` and
//! `mcp_server_session_duration_seconds` through `prometheus-client`
//! ([`Durations`] is its [`Collector`]), and, with feature `otel`, read by
//! the OTLP export too ([`Durations::each_point`], `observe/metric_export.rs`).
//!
//! What a client sends and the series keep is bounded: a method outside
//! MCP's is `_OTHER` (`methods.rs`), a tool or prompt name longer than
//! [`TARGET_BYTES`] is `_OTHER`, and past
//! [`Builder::operation_series`](crate::http::Builder::operation_series)
//! series a new name is `_OTHER` too (one more series per method and
//! version at most). Each series has [`ERROR_SLOTS`] places for the error
//! types it sees, and one `_OTHER` for the rest.
//!
//! A request's series is found once, when its message is read (a lock-free
//! map, a borrowed key: no allocation but the first time), and held
//! ([`OperationTimer`]) until it is answered, when one histogram of it
//! counts the duration.

use crate::http::observe::histogram::{DurationHistogram, HistogramSnapshot};
use crate::http::observe::labels::target_label;
pub(crate) use crate::http::observe::labels::Ending;
use crate::http::observe::methods::OTHER;
use crate::http::wire::protocol::LEGACY_VERSIONS;
use crate::Reason;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The longest tool or prompt name a label carries as itself (MCP's names
/// are at most 128 characters).
pub(crate) const TARGET_BYTES: usize = 128;

/// Error types a series keeps apart; more go to its `_OTHER`.
pub(crate) const ERROR_SLOTS: usize = 4;

/// An error slot's code while it is free.
const FREE: i64 = i64::MIN;
/// An error slot's code for [`Ending::ToolError`].
const TOOL_ERROR: i64 = i64::MIN + 1;

/// What a series is named by.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SeriesKey {
    method: &'static str,
    /// The tool's or the prompt's name (`tools/call`, `prompts/get`);
    /// shared, so that an OpenTelemetry attribute takes it without a copy.
    target: Option<Arc<str>>,
    version: &'static str,
}

/// A series looked up by a borrowed name: hashed as a [`SeriesKey`] is.
struct SeriesQuery<'a> {
    method: &'static str,
    target: Option<&'a str>,
    version: &'static str,
}

impl Hash for SeriesKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.method, self.target.as_deref(), self.version).hash(state);
    }
}

impl Hash for SeriesQuery<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.method, self.target, self.version).hash(state);
    }
}

impl papaya::Equivalent<SeriesKey> for SeriesQuery<'_> {
    fn equivalent(&self, key: &SeriesKey) -> bool {
        self.method == key.method
            && self.target == key.target.as_deref()
            && self.version == key.version
    }
}

/// The histograms of one method, target and version: answered, and by
/// error type.
pub(crate) struct OperationSeries {
    key: SeriesKey,
    answered: DurationHistogram,
    /// A slot's code is claimed once (a CAS from [`FREE`]) and never
    /// changes after.
    errors: [(AtomicI64, DurationHistogram); ERROR_SLOTS],
    other_errors: DurationHistogram,
}

impl OperationSeries {
    fn new(key: SeriesKey) -> OperationSeries {
        OperationSeries {
            key,
            answered: DurationHistogram::operation(),
            errors: std::array::from_fn(|_| (AtomicI64::new(FREE), DurationHistogram::operation())),
            other_errors: DurationHistogram::operation(),
        }
    }

    fn histogram(&self, ending: Ending) -> &DurationHistogram {
        let code = match ending {
            Ending::Answered => return &self.answered,
            Ending::Error(code) if code > TOOL_ERROR => code,
            Ending::Error(_) => return &self.other_errors,
            Ending::ToolError => TOOL_ERROR,
        };
        for (slot, histogram) in &self.errors {
            // Acquire: pairs with the claiming CAS's Release (nothing else
            // is published with the code; the histogram exists already,
            // so Relaxed would do: kept for clarity).
            match slot.load(Ordering::Acquire) {
                c if c == code => return histogram,
                FREE => {
                    match slot.compare_exchange(FREE, code, Ordering::AcqRel, Ordering::Acquire) {
                        Ok(_) => return histogram,
                        Err(c) if c == code => return histogram,
                        Err(_) => continue,
                    }
                }
                _ => continue,
            }
        }
        &self.other_errors
    }
}

/// Counts a request's duration into its series when dropped: answered,
/// unless [`end`](Self::end) said otherwise. Held by the request's answer
/// (and by a streamed answer's stream, so that a streamed answer counts
/// to its end).
pub(crate) struct OperationTimer {
    series: Arc<OperationSeries>,
    started: Instant,
    ending: Ending,
}

impl OperationTimer {
    /// Says how the request ended (the last word counts).
    pub(crate) fn end(&mut self, ending: Ending) {
        self.ending = ending;
    }
}

impl Drop for OperationTimer {
    fn drop(&mut self) {
        let elapsed = self.started.elapsed();
        self.series.histogram(self.ending).observe(elapsed);
    }
}

/// The endpoint's two histograms.
pub(crate) struct Durations {
    series: papaya::HashMap<SeriesKey, Arc<OperationSeries>, foldhash::fast::RandomState>,
    /// Series made so far, at most `max_series` (and the overflow ones).
    made: AtomicUsize,
    max_series: usize,
    /// One row per legacy version (in [`LEGACY_VERSIONS`]' order): ended
    /// without error, failed, rejected.
    sessions: Box<[[DurationHistogram; 3]]>,
    /// When the histograms began counting (Unix nanoseconds): the OTLP
    /// export's start time for its cumulative points.
    #[cfg(feature = "otel")]
    pub(crate) started: u64,
}

impl fmt::Debug for Durations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Durations")
            .field("series", &self.made.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Durations {
    /// Durations kept in at most `max_series` series named by a request
    /// (and one `_OTHER` series per method and version past them).
    pub(crate) fn new(max_series: usize) -> Durations {
        Durations {
            // foldhash, seeded per map: a lookup per request hashes a
            // short key several times faster than SipHash; the keys a
            // client chooses are bounded in number (`max_series`), so a
            // crafted collision costs at most that many probes.
            series: papaya::HashMap::with_hasher(foldhash::fast::RandomState::default()),
            made: AtomicUsize::new(0),
            max_series,
            sessions: LEGACY_VERSIONS
                .iter()
                .map(|_| std::array::from_fn(|_| DurationHistogram::session()))
                .collect(),
            #[cfg(feature = "otel")]
            started: crate::http::wire::unix_time::unix_nanos(),
        }
    }

    /// Starts timing a request of `method` (its label: see `methods.rs`)
    /// at protocol `version`, for `target` (a tool's or a prompt's name).
    pub(crate) fn start(
        self: &Arc<Self>,
        method: &'static str,
        target: Option<&str>,
        version: &'static str,
    ) -> OperationTimer {
        let target = target.map(|t| match t.len() <= TARGET_BYTES {
            true => t,
            false => OTHER,
        });
        let series = self.series_of(method, target, version);
        OperationTimer {
            series,
            started: Instant::now(),
            ending: Ending::Answered,
        }
    }

    fn series_of(
        &self,
        method: &'static str,
        target: Option<&str>,
        version: &'static str,
    ) -> Arc<OperationSeries> {
        let map = self.series.pin();
        let query = SeriesQuery {
            method,
            target,
            version,
        };
        if let Some(series) = map.get(&query) {
            return Arc::clone(series);
        }
        let key = |target: Option<&str>| SeriesKey {
            method,
            target: target.map(Arc::from),
            version,
        };
        let make = |key: SeriesKey| Arc::new(OperationSeries::new(key));
        let Some(name) = target.filter(|t| *t != OTHER) else {
            // No name, or `_OTHER`: a series per method and version.
            return Arc::clone(map.get_or_insert_with(key(target), || make(key(target))));
        };
        // A new name: made while the bound allows, counted before it is
        // made so that racing makers cannot pass the bound together.
        // Relaxed: a count; nothing is published through it.
        if self.made.fetch_add(1, Ordering::Relaxed) >= self.max_series {
            self.made.fetch_sub(1, Ordering::Relaxed);
            let overflow = Some(OTHER);
            return Arc::clone(map.get_or_insert_with(key(overflow), || make(key(overflow))));
        }
        match map.try_insert(key(Some(name)), make(key(Some(name)))) {
            Ok(series) => Arc::clone(series),
            Err(taken) => {
                // Another request made it first: ours is not counted.
                self.made.fetch_sub(1, Ordering::Relaxed);
                Arc::clone(taken.current)
            }
        }
    }

    /// Counts a legacy session's life, `version` its protocol version, as
    /// it ends for `reason`.
    pub(crate) fn session_ended(&self, version: &str, reason: Reason, lived: Duration) {
        let Some(row) = LEGACY_VERSIONS.iter().position(|v| *v == version) else {
            return;
        };
        let column = session_error(reason).map_or(0, |(at, _)| at);
        self.sessions[row][column].observe(lived);
    }
}

/// The error a session's end is, if it is one: its column and its
/// `error.type`.
fn session_error(reason: Reason) -> Option<(usize, &'static str)> {
    match reason {
        Reason::Failed => Some((1, "failed")),
        Reason::Rejected => Some((2, "rejected")),
        _ => None,
    }
}

/// An error slot's code as the `error.type` label writes it (`None`: a
/// free slot).
fn error_type(code: i64) -> Option<ErrorLabel> {
    match code {
        FREE => None,
        TOOL_ERROR => Some(ErrorLabel::ToolError),
        code => Some(ErrorLabel::Code(code)),
    }
}

/// An `error.type` value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ErrorLabel {
    /// A JSON-RPC error's code.
    Code(i64),
    /// A tool's result with `isError`.
    ToolError,
    /// Any error type past a series' slots.
    Other,
}

impl fmt::Display for ErrorLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorLabel::Code(code) => write!(f, "{code}"),
            ErrorLabel::ToolError => f.write_str("tool_error"),
            ErrorLabel::Other => f.write_str(OTHER),
        }
    }
}

impl OperationSeries {
    /// Its histograms that have counted something, each with its
    /// `error.type` (`None`: answered).
    fn counted(&self) -> impl Iterator<Item = (Option<ErrorLabel>, &DurationHistogram)> {
        let errors = self.errors.iter().filter_map(|(slot, histogram)| {
            error_type(slot.load(Ordering::Acquire)).map(|label| (Some(label), histogram))
        });
        std::iter::once((None, &self.answered))
            .chain(errors)
            .chain(std::iter::once((
                Some(ErrorLabel::Other),
                &self.other_errors,
            )))
            .filter(|(_, histogram)| !histogram.is_empty())
    }
}

/// Which of the two histograms a point is of.
#[cfg(feature = "otel")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Histogram {
    Operation,
    Session,
}

#[cfg(feature = "otel")]
impl Durations {
    /// Every histogram that has counted something, with its attributes
    /// (the conventions' names: `mcp.method.name`, `gen_ai.tool.name` or
    /// `gen_ai.prompt.name`, `error.type`, `mcp.protocol.version`).
    pub(crate) fn each_point(
        &self,
        mut point: impl FnMut(Histogram, &[(&str, &str)], HistogramSnapshot),
    ) {
        use crate::http::observe::labels::target_attribute;
        let map = self.series.pin();
        for series in map.values() {
            let key = &series.key;
            for (error, histogram) in series.counted() {
                let error = error.map(|e| e.to_string());
                let mut attributes = vec![("mcp.method.name", key.method)];
                if let Some(target) = key.target.as_deref() {
                    attributes.push((target_attribute(key.method), target));
                }
                if let Some(error) = error.as_deref() {
                    attributes.push(("error.type", error));
                }
                attributes.push(("mcp.protocol.version", key.version));
                point(Histogram::Operation, &attributes, histogram.snapshot());
            }
        }
        for (version, row) in LEGACY_VERSIONS.iter().zip(self.sessions.iter()) {
            for (column, histogram) in row.iter().enumerate() {
                if histogram.is_empty() {
                    continue;
                }
                let mut attributes = vec![("mcp.protocol.version", *version)];
                match column {
                    1 => attributes.push(("error.type", "failed")),
                    2 => attributes.push(("error.type", "rejected")),
                    _ => {}
                }
                point(Histogram::Session, &attributes, histogram.snapshot());
            }
        }
    }
}

/// The endpoint's duration histograms as a `prometheus-client`
/// [`Collector`], from
/// [`SessionManager::duration_metrics`](crate::http::SessionManager::duration_metrics):
/// register it into an application's own registry
/// (`registry.register_collector(Box::new(metrics))`), and each scrape of
/// that registry reads them. ([`SessionManager::metrics`](crate::http::SessionManager::metrics)
/// already writes them.)
#[derive(Clone, Debug)]
pub struct DurationMetrics(pub(crate) Arc<Durations>);

impl Collector for DurationMetrics {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        self.0.encode(encoder)
    }
}

impl Durations {
    /// Writes the histograms in the Prometheus text format (OpenMetrics'
    /// histogram lines, which the Prometheus text format reads alike; no
    /// `# EOF`: more follows).
    pub(crate) fn write(self: &Arc<Self>, out: &mut String) {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(DurationMetrics(Arc::clone(self))));
        // Writing to a String does not fail.
        let _ = prometheus_client::encoding::text::encode_registry(out, &registry);
    }
}

impl Collector for Durations {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let mut metric = encoder.encode_descriptor(
            "mcp_server_operation_duration",
            "MCP request or notification duration as observed on the receiver from the time \
             it was received until the result or ack is sent",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        let map = self.series.pin();
        for series in map.values() {
            let key = &series.key;
            for (error, histogram) in series.counted() {
                let error = error.map(|e| e.to_string());
                let mut labels: Vec<(&str, &str)> = vec![("mcp_method_name", key.method)];
                if let Some(target) = key.target.as_deref() {
                    labels.push((target_label(key.method), target));
                }
                if let Some(error) = error.as_deref() {
                    labels.push(("error_type", error));
                }
                labels.push(("mcp_protocol_version", key.version));
                encode_histogram(&mut metric.encode_family(&labels)?, &histogram.snapshot())?;
            }
        }
        let mut metric = encoder.encode_descriptor(
            "mcp_server_session_duration",
            "The duration of the MCP session as observed on the MCP server",
            Some(&Unit::Seconds),
            MetricType::Histogram,
        )?;
        for (version, row) in LEGACY_VERSIONS.iter().zip(self.sessions.iter()) {
            for (column, histogram) in row.iter().enumerate() {
                if histogram.is_empty() {
                    continue;
                }
                let mut labels: Vec<(&str, &str)> = vec![("mcp_protocol_version", version)];
                match column {
                    1 => labels.push(("error_type", "failed")),
                    2 => labels.push(("error_type", "rejected")),
                    _ => {}
                }
                encode_histogram(&mut metric.encode_family(&labels)?, &histogram.snapshot())?;
            }
        }
        Ok(())
    }
}

fn encode_histogram(
    encoder: &mut prometheus_client::encoding::MetricEncoder<'_>,
    snapshot: &HistogramSnapshot,
) -> Result<(), fmt::Error> {
    encoder.encode_histogram::<NoLabelSet>(
        snapshot.sum_seconds,
        snapshot.count,
        &snapshot.buckets,
        None,
    )
}

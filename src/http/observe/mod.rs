//! How a request is seen from outside, by the MCP semantic conventions of
//! OpenTelemetry: its SERVER span (`span.rs`) and the duration histograms
//! (`durations.rs` on `histogram.rs`, labelled as `methods.rs` and
//! `labels.rs` say); with
//! feature `otel`, the span's parent from the client's trace context
//! (`trace_context.rs`, `parent.rs`), the context put into what the server
//! sends, a multi-round-trip retry's link to the request that asked for
//! input (`retry_link.rs`), and the OTLP/HTTP export ([`otlp`]: its `tracing`
//! layer, `span_layer.rs`, keeps each span as OTLP bytes, `span_record.rs`
//! on `otlp_wire.rs`; its bounded queue, `export_queue.rs`; its exporter,
//! `span_export.rs`; the histograms' exporter, `metric_export.rs`; what
//! both name themselves by, `export_resource.rs`; the standard variables,
//! `export_env.rs`; posting on hyper, `exporter_client.rs`).
//!
//! Beyond one span per message, where the conventions say nothing: a
//! task's work runs in a span of its own, linked to the request that
//! created it (`tasks/work_span.rs`, beside the work it describes); a
//! listen stream's request span ends with its head, and the stream stamps
//! every frame with that span's `traceparent` (`stamp.rs`, kept by
//! the stream); a session's standalone stream stamps a publication with
//! the context it was published in; and a multi-round-trip retry's span
//! links to the asking request's, whose ids its sealed state carries
//! (`retry_link.rs`).

pub(crate) mod durations;
#[cfg(feature = "otel")]
pub(crate) mod export_env;
#[cfg(feature = "otel")]
pub(crate) mod export_queue;
#[cfg(feature = "otel")]
pub(crate) mod export_resource;
#[cfg(feature = "otel")]
pub(crate) mod exporter_client;
pub(crate) mod histogram;
pub(crate) mod labels;
pub(crate) mod methods;
#[cfg(feature = "otel")]
pub(crate) mod metric_export;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otlp;
#[cfg(feature = "otel")]
pub(crate) mod otlp_wire;
#[cfg(feature = "otel")]
pub(crate) mod parent;
pub(crate) mod retry_link;
pub(crate) mod span;
#[cfg(feature = "otel")]
pub(crate) mod span_export;
#[cfg(feature = "otel")]
pub(crate) mod span_layer;
#[cfg(feature = "otel")]
pub(crate) mod span_record;
#[cfg(feature = "otel")]
mod stack_text;
mod stamp;
#[cfg(feature = "otel")]
pub(crate) mod trace_context;

pub use durations::DurationMetrics;
pub(crate) use durations::Durations;
pub(crate) use stamp::{stamp, stamped, traceparent};

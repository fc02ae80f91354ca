//! The duration histograms on the OpenTelemetry meter too (feature
//! `otel`), under the conventions' own names, `mcp.server.operation.duration`
//! and `mcp.server.session.duration`, with their attributes and the same
//! buckets as `/metrics`; exported with the rest of the meter's metrics
//! (`otlp.rs`). The meter is the global one when the manager is built:
//! install a meter provider first (`otlp::OtlpExport::install` does);
//! without one the instruments record nothing.

use crate::http::observe::histogram::{OPERATION_BOUNDS, SESSION_BOUNDS};
use crate::http::observe::labels::{target_attribute, Ending, KeyView};
use opentelemetry::metrics::Histogram;
use opentelemetry::{KeyValue, StringValue, Value};
use std::time::Duration;

/// The two instruments.
pub(crate) struct Instruments {
    operation: Histogram<f64>,
    session: Histogram<f64>,
}

impl Instruments {
    /// The instruments of the global meter provider.
    pub(crate) fn new() -> Instruments {
        let meter = opentelemetry::global::meter("sessionreg");
        Instruments {
            operation: meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description(
                    "MCP request or notification duration as observed on the receiver from the \
                     time it was received until the result or ack is sent",
                )
                .with_boundaries(OPERATION_BOUNDS.to_vec())
                .build(),
            session: meter
                .f64_histogram("mcp.server.session.duration")
                .with_unit("s")
                .with_description("The duration of the MCP session as observed on the MCP server")
                .with_boundaries(SESSION_BOUNDS.to_vec())
                .build(),
        }
    }

    /// Records one request of series `key` that ended as `ending`.
    pub(crate) fn operation(&self, key: &KeyView<'_>, ending: Ending, elapsed: Duration) {
        let error = match ending {
            Ending::Answered => None,
            Ending::Error(code) => Some(Value::String(StringValue::from(code.to_string()))),
            Ending::ToolError => Some(Value::from("tool_error")),
        };
        let method = KeyValue::new("mcp.method.name", key.method);
        let version = KeyValue::new("mcp.protocol.version", key.version);
        let target = key.target.map(|target| {
            KeyValue::new(
                target_attribute(key.method),
                Value::String(StringValue::from(target.clone())),
            )
        });
        let error = error.map(|error| KeyValue::new("error.type", error));
        let seconds = elapsed.as_secs_f64();
        match (target, error) {
            (None, None) => self.operation.record(seconds, &[method, version]),
            (Some(target), None) => self.operation.record(seconds, &[method, version, target]),
            (None, Some(error)) => self.operation.record(seconds, &[method, version, error]),
            (Some(target), Some(error)) => self
                .operation
                .record(seconds, &[method, version, target, error]),
        }
    }

    /// Records one legacy session's life.
    pub(crate) fn session(
        &self,
        version: &'static str,
        error: Option<&'static str>,
        lived: Duration,
    ) {
        let version = KeyValue::new("mcp.protocol.version", version);
        match error {
            Some(error) => self.session.record(
                lived.as_secs_f64(),
                &[version, KeyValue::new("error.type", error)],
            ),
            None => self.session.record(lived.as_secs_f64(), &[version]),
        }
    }
}

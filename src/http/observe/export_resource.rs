//! What every OTLP export names itself by (feature `otel`): the resource
//! (the service: `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` and the
//! SDK's `telemetry.sdk.*`, as the OpenTelemetry SDK's resource detection
//! reads them) and the instrumentation scope, `sessionreg`. Encoded once,
//! at install: `ResourceSpans` and `ResourceMetrics` hold the resource at
//! the same field, `ScopeSpans` and `ScopeMetrics` the scope, so both
//! exports copy the same bytes.

use crate::http::observe::otlp_wire::{self as wire, any_value, export};
use opentelemetry::{Array, Value};
use opentelemetry_sdk::Resource;

/// The instrumentation scope the spans and metrics are exported under.
const SCOPE: &str = "sessionreg";

/// The resource and the scope, each as its field of the export's level.
#[derive(Debug)]
pub(crate) struct ResourceScope {
    pub(crate) resource: Vec<u8>,
    pub(crate) scope: Vec<u8>,
}

impl ResourceScope {
    pub(crate) fn new(resource: &Resource) -> ResourceScope {
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
        ResourceScope {
            resource: encoded,
            scope,
        }
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

//! The few protobuf encodings an OTLP trace export needs (feature `otel`),
//! written straight into one buffer: varints, fixed-width numbers, and
//! length-delimited fields whose length is written when they end (five
//! bytes are kept for it, then the content is moved back over what the
//! length did not use: a span's bytes, a few hundred, moved once per level).
//! The field numbers are those of `opentelemetry/proto/trace/v1/trace.proto`,
//! `common/v1/common.proto` and `collector/trace/v1/trace_service.proto`;
//! the tests decode what is written here with the official definitions
//! (`opentelemetry-proto`).

/// Protobuf wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// The most bytes a length takes (a `u32`'s varint).
const LENGTH_BYTES: usize = 5;

/// `KeyValue`: its key and its value (`AnyValue`).
pub(crate) mod key_value {
    pub(crate) const KEY: u32 = 1;
    pub(crate) const VALUE: u32 = 2;
}

/// `AnyValue`'s members.
pub(crate) mod any_value {
    pub(crate) const STRING: u32 = 1;
    pub(crate) const BOOL: u32 = 2;
    pub(crate) const INT: u32 = 3;
    pub(crate) const DOUBLE: u32 = 4;
    pub(crate) const ARRAY: u32 = 5;
    /// `ArrayValue`'s values.
    pub(crate) const ARRAY_VALUES: u32 = 1;
}

/// `Span`'s fields.
pub(crate) mod span {
    pub(crate) const TRACE_ID: u32 = 1;
    pub(crate) const SPAN_ID: u32 = 2;
    pub(crate) const TRACE_STATE: u32 = 3;
    pub(crate) const PARENT_SPAN_ID: u32 = 4;
    pub(crate) const NAME: u32 = 5;
    pub(crate) const KIND: u32 = 6;
    pub(crate) const START: u32 = 7;
    pub(crate) const END: u32 = 8;
    pub(crate) const ATTRIBUTES: u32 = 9;
    pub(crate) const DROPPED_ATTRIBUTES: u32 = 10;
    pub(crate) const DROPPED_EVENTS: u32 = 12;
    pub(crate) const DROPPED_LINKS: u32 = 14;
    pub(crate) const EVENTS: u32 = 11;
    pub(crate) const LINKS: u32 = 13;
    pub(crate) const STATUS: u32 = 15;
    pub(crate) const FLAGS: u32 = 16;
    /// `Status`'s message and code.
    pub(crate) const STATUS_MESSAGE: u32 = 2;
    pub(crate) const STATUS_CODE: u32 = 3;
    /// `Event`'s fields.
    pub(crate) const EVENT_TIME: u32 = 1;
    pub(crate) const EVENT_NAME: u32 = 2;
    pub(crate) const EVENT_ATTRIBUTES: u32 = 3;
    /// `Link`'s fields.
    pub(crate) const LINK_TRACE_ID: u32 = 1;
    pub(crate) const LINK_SPAN_ID: u32 = 2;
    pub(crate) const LINK_TRACE_STATE: u32 = 3;
    pub(crate) const LINK_FLAGS: u32 = 6;
    /// `SpanFlags`: the flags say whether the parent (or a link's span) is
    /// remote, and that they say it.
    pub(crate) const HAS_IS_REMOTE: u32 = 0x100;
    pub(crate) const IS_REMOTE: u32 = 0x200;
}

/// The export request's levels: `ExportTraceServiceRequest.resource_spans`,
/// `ResourceSpans.resource` and `.scope_spans`, `Resource.attributes`,
/// `ScopeSpans.scope` and `.spans`, `InstrumentationScope.name`.
pub(crate) mod export {
    pub(crate) const RESOURCE_SPANS: u32 = 1;
    pub(crate) const RESOURCE: u32 = 1;
    pub(crate) const SCOPE_SPANS: u32 = 2;
    pub(crate) const RESOURCE_ATTRIBUTES: u32 = 1;
    pub(crate) const SCOPE: u32 = 1;
    pub(crate) const SPANS: u32 = 2;
    pub(crate) const SCOPE_NAME: u32 = 1;
}

/// The metrics export's levels and fields (`metrics/v1/metrics.proto`,
/// `collector/metrics/v1/metrics_service.proto`).
pub(crate) mod metrics {
    /// `ExportMetricsServiceRequest.resource_metrics`.
    pub(crate) const RESOURCE_METRICS: u32 = 1;
    /// `ResourceMetrics.scope_metrics` (its resource is field 1, as
    /// `ResourceSpans`' is: [`export::RESOURCE`](super::export::RESOURCE)).
    pub(crate) const SCOPE_METRICS: u32 = 2;
    /// `ScopeMetrics.metrics` (its scope is field 1, as `ScopeSpans`' is).
    pub(crate) const METRICS: u32 = 2;
    /// `Metric`'s name, description, unit and histogram.
    pub(crate) const NAME: u32 = 1;
    pub(crate) const DESCRIPTION: u32 = 2;
    pub(crate) const UNIT: u32 = 3;
    pub(crate) const HISTOGRAM: u32 = 9;
    /// `Histogram`'s points and temporality (2: cumulative).
    pub(crate) const DATA_POINTS: u32 = 1;
    pub(crate) const TEMPORALITY: u32 = 2;
    pub(crate) const CUMULATIVE: u64 = 2;
    /// `HistogramDataPoint`'s fields.
    pub(crate) const START: u32 = 2;
    pub(crate) const TIME: u32 = 3;
    pub(crate) const COUNT: u32 = 4;
    pub(crate) const SUM: u32 = 5;
    pub(crate) const BUCKET_COUNTS: u32 = 6;
    pub(crate) const BOUNDS: u32 = 7;
    pub(crate) const ATTRIBUTES: u32 = 9;
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from((field << 3) | wire));
}

/// A varint field (an enum, a bool, an `int64`: negative ones take ten
/// bytes, as protobuf has them).
pub(crate) fn uint(out: &mut Vec<u8>, field: u32, value: u64) {
    key(out, field, VARINT);
    varint(out, value);
}

pub(crate) fn fixed64(out: &mut Vec<u8>, field: u32, value: u64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&value.to_le_bytes());
}

pub(crate) fn fixed32(out: &mut Vec<u8>, field: u32, value: u32) {
    key(out, field, FIXED32);
    out.extend_from_slice(&value.to_le_bytes());
}

pub(crate) fn double(out: &mut Vec<u8>, field: u32, value: f64) {
    fixed64(out, field, value.to_bits());
}

/// A `bytes` or `string` field.
pub(crate) fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    key(out, field, LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// A length-delimited field begun: write its content, then [`end`] it
/// with what this returns.
#[must_use = "a field begun must be ended"]
pub(crate) fn begin(out: &mut Vec<u8>, field: u32) -> usize {
    key(out, field, LEN);
    out.extend_from_slice(&[0; LENGTH_BYTES]);
    out.len()
}

/// Ends the field [`begin`] returned `start` for: writes its length and
/// moves its content back over the bytes the length did not take.
pub(crate) fn end(out: &mut Vec<u8>, start: usize) {
    let length = out.len() - start;
    let mut prefix = [0u8; 10];
    let mut n = 0;
    let mut value = length as u64;
    while value >= 0x80 {
        prefix[n] = (value as u8) | 0x80;
        value >>= 7;
        n += 1;
    }
    prefix[n] = value as u8;
    n += 1;
    // A field is at most a batch of spans: far below 2^35 bytes.
    debug_assert!(n <= LENGTH_BYTES);
    let at = start - LENGTH_BYTES;
    out[at..at + n].copy_from_slice(&prefix[..n]);
    out.copy_within(start.., at + n);
    out.truncate(out.len() - (LENGTH_BYTES - n));
}

/// The bytes `value` takes as a varint.
fn varint_len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// The bytes a length-delimited field of `length` bytes takes, with its
/// key (a field number below 16: one byte).
pub(crate) fn field_len(length: usize) -> usize {
    1 + varint_len(length as u64) + length
}

/// A string attribute (`field` is where the message holds its
/// `KeyValue`s), its lengths counted first: nothing moved.
pub(crate) fn string_attribute(out: &mut Vec<u8>, field: u32, name: &str, value: &[u8]) {
    let any = field_len(value.len());
    let pair = field_len(name.len()) + field_len(any);
    if pair < 0x80 && field < 16 {
        // Every length one byte (each is within `pair`), every key one
        // byte: the usual attribute, written without a loop.
        out.reserve(2 + pair);
        out.extend_from_slice(&[
            (field << 3 | LEN) as u8,
            pair as u8,
            (key_value::KEY << 3 | LEN) as u8,
            name.len() as u8,
        ]);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&[
            (key_value::VALUE << 3 | LEN) as u8,
            any as u8,
            (any_value::STRING << 3 | LEN) as u8,
            value.len() as u8,
        ]);
        out.extend_from_slice(value);
        return;
    }
    // The keys and lengths before the name, and between it and the value,
    // written on the stack and copied in one go each.
    let mut head = Head::default();
    head.key(field, LEN);
    head.varint(pair as u64);
    head.key(key_value::KEY, LEN);
    head.varint(name.len() as u64);
    let mut middle = Head::default();
    middle.key(key_value::VALUE, LEN);
    middle.varint(any as u64);
    middle.key(any_value::STRING, LEN);
    middle.varint(value.len() as u64);
    out.reserve(head.len + name.len() + middle.len + value.len());
    out.extend_from_slice(head.bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(middle.bytes());
    out.extend_from_slice(value);
}

/// Keys, numbers and short bytes written on the stack, then copied in
/// one go (a span's fixed fields: 82 bytes at most).
pub(crate) struct Head {
    room: [u8; 96],
    len: usize,
}

impl Default for Head {
    fn default() -> Head {
        Head {
            room: [0; 96],
            len: 0,
        }
    }
}

impl Head {
    pub(crate) fn uint(&mut self, field: u32, value: u64) {
        self.key(field, VARINT);
        self.varint(value);
    }

    pub(crate) fn fixed64(&mut self, field: u32, value: u64) {
        self.key(field, FIXED64);
        self.put(&value.to_le_bytes());
    }

    pub(crate) fn fixed32(&mut self, field: u32, value: u32) {
        self.key(field, FIXED32);
        self.put(&value.to_le_bytes());
    }

    pub(crate) fn bytes_field(&mut self, field: u32, value: &[u8]) {
        self.key(field, LEN);
        self.varint(value.len() as u64);
        self.put(value);
    }

    /// A length-delimited field's key and length (its content follows).
    pub(crate) fn field_head(&mut self, field: u32, length: usize) {
        self.key(field, LEN);
        self.varint(length as u64);
    }

    fn put(&mut self, bytes: &[u8]) {
        self.room[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.room[self.len] = (value as u8) | 0x80;
            self.len += 1;
            value >>= 7;
        }
        self.room[self.len] = value as u8;
        self.len += 1;
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from((field << 3) | wire));
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.room[..self.len]
    }
}

/// Writes into a length-delimited field that has begun (a string value
/// formatted in place, never copied through a `String` of its own).
pub(crate) struct Text<'a>(pub(crate) &'a mut Vec<u8>);

impl std::fmt::Write for Text<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// One attribute (`field` is where the message holds its `KeyValue`s)
/// whose value is written by `value` into its `AnyValue`.
pub(crate) fn attribute(
    out: &mut Vec<u8>,
    field: u32,
    name: &str,
    value: impl FnOnce(&mut Vec<u8>),
) {
    let pair = begin(out, field);
    bytes(out, key_value::KEY, name.as_bytes());
    let any = begin(out, key_value::VALUE);
    value(out);
    end(out, any);
    end(out, pair);
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{any_value::Value, KeyValueList};
    use prost::Message;

    /// The values of a `KeyValueList` (its field 1: `KeyValue`s).
    fn decoded(out: &[u8]) -> Vec<(String, Value)> {
        KeyValueList::decode(out)
            .unwrap()
            .values
            .into_iter()
            .map(|kv| (kv.key, kv.value.unwrap().value.unwrap()))
            .collect()
    }

    #[test]
    fn lengths_of_every_width_decode() {
        for size in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000, 2_100_000] {
            let text = "x".repeat(size);
            let mut out = Vec::new();
            attribute(&mut out, 1, "k", |out| {
                bytes(out, any_value::STRING, text.as_bytes())
            });
            // What follows a field moved back is written after it.
            attribute(&mut out, 1, "after", |out| uint(out, any_value::BOOL, 1));
            let values = decoded(&out);
            assert_eq!(values.len(), 2);
            assert_eq!(values[0], ("k".into(), Value::StringValue(text)));
            assert_eq!(values[1], ("after".into(), Value::BoolValue(true)));
        }
    }

    #[test]
    fn a_string_attribute_counted_first_decodes() {
        for size in [0usize, 1, 100, 127, 128, 16_384, 70_000] {
            let (name, value) = ("n".repeat(size / 2 + 1), "v".repeat(size));
            let mut out = Vec::new();
            string_attribute(&mut out, 1, &name, value.as_bytes());
            string_attribute(&mut out, 1, "after", b"x");
            let values = decoded(&out);
            assert_eq!(values[0], (name, Value::StringValue(value)));
            assert_eq!(values[1], ("after".into(), Value::StringValue("x".into())));
        }
    }

    #[test]
    fn numbers_decode() {
        let mut out = Vec::new();
        let ints = [0i64, 1, -1, i64::MAX, i64::MIN];
        for value in ints {
            attribute(&mut out, 1, "n", |out| {
                uint(out, any_value::INT, value as u64)
            });
        }
        attribute(&mut out, 1, "d", |out| double(out, any_value::DOUBLE, 0.25));
        let values = decoded(&out);
        for (i, value) in ints.into_iter().enumerate() {
            assert_eq!(values[i].1, Value::IntValue(value));
        }
        assert_eq!(values[5].1, Value::DoubleValue(0.25));
    }
}

//! One span as the OTLP export keeps it (feature `otel`): its ids, its
//! parent, its times, and the rest of its OTLP `Span` message (name,
//! attributes, links, status) already encoded, in one buffer that grows
//! as the span's fields are given or recorded. Nothing is converted at its
//! end: the exporter writes the few fixed fields and copies the buffer.
//!
//! A field named by tracing-opentelemetry's convention is not an
//! attribute: `otel.name` is the span's name (else the `tracing` span's),
//! `otel.kind` its kind, `otel.status_code` (`ok`, `error`) and
//! `otel.status_description` its status. Every other field is an attribute
//! of its type (text for what is formatted). A name or a status given
//! twice is written twice: the later one wins where protobuf reads one,
//! and a status's code and message merge (a message field's parts given
//! apart are merged, as protobuf reads them).

use crate::http::observe::otlp_wire::{self as wire, any_value, span as field, Text};
use crate::http::observe::stack_text::StackText;
use crate::http::wire::unix_time::unix_nanos;
use std::fmt::Write as _;
use std::sync::Arc;
use tracing::field::{Field, Visit};

/// The room a span's encoded fields get at first: a request's SERVER span
/// takes about 450 bytes.
const BODY_BYTES: usize = 512;

/// The attributes, events and links a span keeps at most, each (the
/// OpenTelemetry SDK's default span limits); past them they are dropped
/// and counted in the span (a field recorded again is another attribute:
/// a span recording one field in a loop does not grow without bound).
const LIMIT: u32 = 128;

/// The W3C flag a span is exported by.
const SAMPLED: u8 = 0x01;

/// A W3C `traceparent`'s three parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TraceParent {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) flags: u8,
}

impl TraceParent {
    /// The parts of a `traceparent` of the valid form
    /// (`trace_context::is_valid_traceparent`); `None` for any other.
    pub(crate) fn parse(valid: &str) -> Option<TraceParent> {
        fn hex<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
            let digit = |b: u8| match b {
                b'0'..=b'9' => Some(b - b'0'),
                b'a'..=b'f' => Some(b - b'a' + 10),
                _ => None,
            };
            let mut out = [0u8; N];
            for (i, pair) in text.chunks_exact(2).take(N).enumerate() {
                out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
            }
            Some(out)
        }
        let bytes = valid.as_bytes();
        if bytes.len() < 55 {
            return None;
        }
        Some(TraceParent {
            trace_id: hex::<16>(&bytes[3..35])?,
            span_id: hex::<8>(&bytes[36..52])?,
            flags: hex::<1>(&bytes[53..55])?[0],
        })
    }

    /// As a `traceparent` of version 00.
    pub(crate) fn to_header(self) -> String {
        let mut out = String::with_capacity(55);
        out.push_str("00-");
        for b in self.trace_id {
            let _ = write!(out, "{b:02x}");
        }
        out.push('-');
        for b in self.span_id {
            let _ = write!(out, "{b:02x}");
        }
        let _ = write!(out, "-{:02x}", self.flags);
        out
    }
}

/// A client's trace context, checked: a span's parent or link.
#[derive(Debug, Clone)]
pub(crate) struct Remote<'a> {
    pub(crate) parent: TraceParent,
    pub(crate) tracestate: Option<&'a str>,
    pub(crate) baggage: Option<&'a str>,
}

/// What a span's context carries on to its children and into what the
/// server sends: its `traceparent`, `tracestate` and `baggage`.
#[derive(Debug, Clone)]
pub(crate) struct Carried {
    pub(crate) traceparent: TraceParent,
    pub(crate) tracestate: Option<Arc<str>>,
    pub(crate) baggage: Option<Arc<str>>,
}

/// A span kept for export.
#[derive(Debug)]
pub(crate) struct SpanRecord {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    /// The parent's span id, and whether the parent is remote.
    parent: Option<([u8; 8], bool)>,
    flags: u8,
    tracestate: Option<Arc<str>>,
    baggage: Option<Arc<str>>,
    kind: u8,
    /// The `tracing` span's name, exported unless `otel.name` names it.
    name: &'static str,
    named: bool,
    start: u64,
    end: u64,
    /// The span's name, attributes, events, links and status, encoded.
    body: Vec<u8>,
    /// Attributes, events and links kept, and dropped past [`LIMIT`].
    kept: [u32; 3],
    dropped: [u32; 3],
}

/// What [`LIMIT`] bounds, as an index of `kept` and `dropped`.
#[derive(Clone, Copy)]
enum Bounded {
    Attribute = 0,
    Event = 1,
    Link = 2,
}

/// A random trace id and span id, never all zero (W3C: zero ids are
/// invalid): `rand`'s thread-local generator, the one the core's secrets
/// come from, no syscall per id; drawn as one `u128` and one `u64` (an
/// array is drawn a byte at a time).
fn trace_id() -> [u8; 16] {
    use rand::RngExt as _;
    let mut rng = rand::rng();
    loop {
        match rng.random::<u128>() {
            0 => continue,
            id => return id.to_be_bytes(),
        }
    }
}

fn span_id() -> [u8; 8] {
    use rand::RngExt as _;
    let mut rng = rand::rng();
    loop {
        match rng.random::<u64>() {
            0 => continue,
            id => return id.to_be_bytes(),
        }
    }
}

impl SpanRecord {
    /// A span that begins now: the root of a new trace, or the child of
    /// `parent` (a span of this process); `body`, an exported span's buffer
    /// given back (`export_queue.rs`), or a new one if it has no room.
    pub(crate) fn begin(
        name: &'static str,
        parent: Option<&SpanRecord>,
        mut body: Vec<u8>,
    ) -> SpanRecord {
        body.clear();
        if body.capacity() == 0 {
            body.reserve_exact(BODY_BYTES);
        }
        // A root is the first of a new trace, and sampled (the SDK's
        // default sampler, parent-based, samples every root); a child
        // follows its parent.
        let (trace_id, parent_id, flags, tracestate, baggage) = match parent {
            Some(parent) => (
                parent.trace_id,
                Some((parent.span_id, false)),
                parent.flags,
                parent.tracestate.clone(),
                parent.baggage.clone(),
            ),
            None => (trace_id(), None, SAMPLED, None, None),
        };
        SpanRecord {
            trace_id,
            span_id: span_id(),
            parent: parent_id,
            flags,
            tracestate,
            baggage,
            kind: 1, // INTERNAL
            name,
            named: false,
            start: unix_nanos(),
            end: 0,
            body,
            kept: [0; 3],
            dropped: [0; 3],
        }
    }

    /// Makes the client's context (`remote`) this span's parent: its trace,
    /// its flags (a parent not sampled: this span is not exported either,
    /// its context still carried on), its `tracestate` and `baggage`.
    /// Before the span has children (they copy its trace when they begin).
    pub(crate) fn adopt(&mut self, remote: &Remote<'_>) {
        self.trace_id = remote.parent.trace_id;
        self.parent = Some((remote.parent.span_id, true));
        self.flags = remote.parent.flags;
        self.tracestate = remote.tracestate.filter(|s| !s.is_empty()).map(Arc::from);
        self.baggage = remote.baggage.filter(|s| !s.is_empty()).map(Arc::from);
    }

    /// Links this span to the span `to` (`remote`: another process's).
    pub(crate) fn link(&mut self, to: &TraceParent, tracestate: Option<&str>, remote: bool) {
        if !self.admit(Bounded::Link) {
            return;
        }
        let link = wire::begin(&mut self.body, field::LINKS);
        wire::bytes(&mut self.body, field::LINK_TRACE_ID, &to.trace_id);
        wire::bytes(&mut self.body, field::LINK_SPAN_ID, &to.span_id);
        if let Some(state) = tracestate.filter(|s| !s.is_empty()) {
            wire::bytes(&mut self.body, field::LINK_TRACE_STATE, state.as_bytes());
        }
        wire::fixed32(
            &mut self.body,
            field::LINK_FLAGS,
            u32::from(to.flags) | field::HAS_IS_REMOTE | if remote { field::IS_REMOTE } else { 0 },
        );
        wire::end(&mut self.body, link);
    }

    /// Its ids and flags, as a `traceparent` gives them.
    pub(crate) fn traceparent(&self) -> TraceParent {
        TraceParent {
            trace_id: self.trace_id,
            span_id: self.span_id,
            flags: self.flags,
        }
    }

    /// What its context carries on.
    pub(crate) fn carried(&self) -> Carried {
        Carried {
            traceparent: self.traceparent(),
            tracestate: self.tracestate.clone(),
            baggage: self.baggage.clone(),
        }
    }

    /// Whether it is exported.
    pub(crate) fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }

    /// The visitor that records a span's values (given at its creation or
    /// later) into it.
    pub(crate) fn fields(&mut self) -> SpanFields<'_> {
        SpanFields(self)
    }

    /// Adds an event of `name` (else the event's `message`) at its time,
    /// with the event's fields.
    pub(crate) fn event(&mut self, event: &tracing::Event<'_>) {
        if !self.admit(Bounded::Event) {
            return;
        }
        let at = wire::begin(&mut self.body, field::EVENTS);
        wire::fixed64(&mut self.body, field::EVENT_TIME, unix_nanos());
        wire::bytes(
            &mut self.body,
            field::EVENT_NAME,
            event.metadata().name().as_bytes(),
        );
        let level = event.metadata().level().as_str();
        wire::attribute(&mut self.body, field::EVENT_ATTRIBUTES, "level", |out| {
            wire::bytes(out, any_value::STRING, level.as_bytes())
        });
        event.record(&mut EventFields(&mut self.body));
        wire::end(&mut self.body, at);
    }

    /// Whether one more of `what` is kept (else it is counted dropped).
    fn admit(&mut self, what: Bounded) -> bool {
        let at = what as usize;
        if self.kept[at] < LIMIT {
            self.kept[at] += 1;
            true
        } else {
            self.dropped[at] = self.dropped[at].saturating_add(1);
            false
        }
    }

    /// How many bytes its buffer holds.
    pub(crate) fn body_capacity(&self) -> usize {
        self.body.capacity()
    }

    /// Its buffer, to be given to a span that begins.
    pub(crate) fn into_body(self) -> Vec<u8> {
        self.body
    }

    /// Ends it now.
    pub(crate) fn close(&mut self) {
        self.end = unix_nanos();
    }

    /// Its fixed fields (ids, kind, times, flags, dropped counts),
    /// encoded on the stack.
    fn fixed(&self) -> wire::Head {
        let mut fixed = wire::Head::default();
        fixed.bytes_field(field::TRACE_ID, &self.trace_id);
        fixed.bytes_field(field::SPAN_ID, &self.span_id);
        let mut flags = u32::from(self.flags) | field::HAS_IS_REMOTE;
        if let Some((parent, remote)) = self.parent {
            fixed.bytes_field(field::PARENT_SPAN_ID, &parent);
            if remote {
                flags |= field::IS_REMOTE;
            }
        }
        fixed.uint(field::KIND, u64::from(self.kind));
        fixed.fixed64(field::START, self.start);
        fixed.fixed64(field::END, self.end);
        fixed.fixed32(field::FLAGS, flags);
        for (what, dropped) in [
            field::DROPPED_ATTRIBUTES,
            field::DROPPED_EVENTS,
            field::DROPPED_LINKS,
        ]
        .into_iter()
        .zip(self.dropped)
        {
            if dropped > 0 {
                fixed.uint(what, u64::from(dropped));
            }
        }
        fixed
    }

    /// Its `tracestate`, and its name unless `otel.name` gave one.
    fn state_and_name(&self) -> (Option<&[u8]>, Option<&[u8]>) {
        let state = self.tracestate.as_deref().map(str::as_bytes);
        (state, (!self.named).then_some(self.name.as_bytes()))
    }

    /// The bytes of its `Span` message (without the field's key and
    /// length): what [`encode`](Self::encode) writes, counted.
    pub(crate) fn encoded_len(&self) -> usize {
        self.len_with(&self.fixed())
    }

    /// [`encoded_len`](Self::encoded_len), its fixed fields encoded.
    fn len_with(&self, fixed: &wire::Head) -> usize {
        let (state, name) = self.state_and_name();
        fixed.bytes().len()
            + state.map_or(0, |s| wire::field_len(s.len()))
            + name.map_or(0, |n| wire::field_len(n.len()))
            + self.body.len()
    }

    /// Writes it as a `Span` (field `at` of the message being written):
    /// its fixed fields on the stack, its length counted, then the parts
    /// copied (nothing moved after).
    pub(crate) fn encode(&self, out: &mut Vec<u8>, at: u32) {
        let fixed = self.fixed();
        let length = self.len_with(&fixed);
        let (state, name) = self.state_and_name();
        let mut head = wire::Head::default();
        head.field_head(at, length);
        out.reserve(head.bytes().len() + length);
        out.extend_from_slice(head.bytes());
        out.extend_from_slice(fixed.bytes());
        if let Some(state) = state {
            wire::bytes(out, field::TRACE_STATE, state);
        }
        if let Some(name) = name {
            wire::bytes(out, field::NAME, name);
        }
        out.extend_from_slice(&self.body);
    }
}

/// Writes a span's fields into its record.
pub(crate) struct SpanFields<'a>(&'a mut SpanRecord);

/// The fields that are not attributes (tracing-opentelemetry's names).
enum Special {
    Name,
    Kind,
    StatusCode,
    StatusMessage,
}

impl Special {
    fn of(field: &str) -> Option<Special> {
        match field.strip_prefix("otel.")? {
            "name" => Some(Special::Name),
            "kind" => Some(Special::Kind),
            "status_code" => Some(Special::StatusCode),
            "status_description" | "status_message" => Some(Special::StatusMessage),
            _ => None,
        }
    }
}

impl SpanFields<'_> {
    fn kind(&mut self, kind: &str) {
        let kinds = [
            ("server", 2),
            ("client", 3),
            ("producer", 4),
            ("consumer", 5),
        ];
        self.0.kind = kinds
            .iter()
            .find(|(name, _)| kind.eq_ignore_ascii_case(name))
            .map_or(1, |(_, kind)| *kind);
    }

    fn status(&mut self, code: &str) {
        let code = if code.eq_ignore_ascii_case("ok") {
            1
        } else if code.eq_ignore_ascii_case("error") {
            2
        } else {
            return;
        };
        let status = wire::begin(&mut self.0.body, field::STATUS);
        wire::uint(&mut self.0.body, field::STATUS_CODE, code);
        wire::end(&mut self.0.body, status);
    }

    fn status_message(&mut self, message: &dyn std::fmt::Display) {
        let status = wire::begin(&mut self.0.body, field::STATUS);
        let text = wire::begin(&mut self.0.body, field::STATUS_MESSAGE);
        let _ = write!(Text(&mut self.0.body), "{message}");
        wire::end(&mut self.0.body, text);
        wire::end(&mut self.0.body, status);
    }

    fn name_text(&mut self, name: &str) {
        self.0.named = true;
        wire::bytes(&mut self.0.body, field::NAME, name.as_bytes());
    }

    fn name(&mut self, name: &dyn std::fmt::Display) {
        match StackText::<128>::format(name) {
            short if !short.cut() => self.name_text(short.as_str()),
            _ => {
                self.0.named = true;
                let text = wire::begin(&mut self.0.body, field::NAME);
                let _ = write!(Text(&mut self.0.body), "{name}");
                wire::end(&mut self.0.body, text);
            }
        }
    }
}

/// A `Debug` value's text, as a `Display`.
struct Shown<'a>(&'a dyn std::fmt::Debug);

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl Visit for SpanFields<'_> {
    fn record_str(&mut self, f: &Field, value: &str) {
        match Special::of(f.name()) {
            Some(Special::Name) => self.name_text(value),
            Some(Special::Kind) => self.kind(value),
            Some(Special::StatusCode) => self.status(value),
            Some(Special::StatusMessage) => self.status_message(&value),
            None if self.0.admit(Bounded::Attribute) => {
                attribute_str(&mut self.0.body, field::ATTRIBUTES, f.name(), value)
            }
            None => {}
        }
    }

    fn record_debug(&mut self, f: &Field, value: &dyn std::fmt::Debug) {
        match Special::of(f.name()) {
            Some(Special::Name) => self.name(&Shown(value)),
            Some(Special::Kind) => self.kind(&format!("{value:?}")),
            Some(Special::StatusCode) => self.status(&format!("{value:?}")),
            Some(Special::StatusMessage) => self.status_message(&Shown(value)),
            None if self.0.admit(Bounded::Attribute) => {
                attribute_debug(&mut self.0.body, field::ATTRIBUTES, f.name(), value)
            }
            None => {}
        }
    }

    fn record_i64(&mut self, f: &Field, value: i64) {
        if self.0.admit(Bounded::Attribute) {
            attribute_i64(&mut self.0.body, field::ATTRIBUTES, f.name(), value);
        }
    }

    fn record_u64(&mut self, f: &Field, value: u64) {
        match i64::try_from(value) {
            Ok(value) => self.record_i64(f, value),
            Err(_) => self.record_debug(f, &value),
        }
    }

    fn record_bool(&mut self, f: &Field, value: bool) {
        if self.0.admit(Bounded::Attribute) {
            attribute_bool(&mut self.0.body, field::ATTRIBUTES, f.name(), value);
        }
    }

    fn record_f64(&mut self, f: &Field, value: f64) {
        if self.0.admit(Bounded::Attribute) {
            attribute_f64(&mut self.0.body, field::ATTRIBUTES, f.name(), value);
        }
    }
}

/// Writes an event's fields: its `message` is its name.
struct EventFields<'a>(&'a mut Vec<u8>);

impl Visit for EventFields<'_> {
    fn record_str(&mut self, f: &Field, value: &str) {
        match f.name() {
            "message" => wire::bytes(self.0, field::EVENT_NAME, value.as_bytes()),
            name => attribute_str(self.0, field::EVENT_ATTRIBUTES, name, value),
        }
    }

    fn record_debug(&mut self, f: &Field, value: &dyn std::fmt::Debug) {
        match f.name() {
            "message" => {
                let text = wire::begin(self.0, field::EVENT_NAME);
                let _ = write!(Text(self.0), "{value:?}");
                wire::end(self.0, text);
            }
            name => attribute_debug(self.0, field::EVENT_ATTRIBUTES, name, value),
        }
    }

    fn record_i64(&mut self, f: &Field, value: i64) {
        attribute_i64(self.0, field::EVENT_ATTRIBUTES, f.name(), value);
    }

    fn record_u64(&mut self, f: &Field, value: u64) {
        match i64::try_from(value) {
            Ok(value) => self.record_i64(f, value),
            Err(_) => self.record_debug(f, &value),
        }
    }

    fn record_bool(&mut self, f: &Field, value: bool) {
        attribute_bool(self.0, field::EVENT_ATTRIBUTES, f.name(), value);
    }

    fn record_f64(&mut self, f: &Field, value: f64) {
        attribute_f64(self.0, field::EVENT_ATTRIBUTES, f.name(), value);
    }
}

fn attribute_str(out: &mut Vec<u8>, at: u32, name: &str, value: &str) {
    wire::string_attribute(out, at, name, value.as_bytes());
}

fn attribute_debug(out: &mut Vec<u8>, at: u32, name: &str, value: &dyn std::fmt::Debug) {
    let short = StackText::<128>::format(Shown(value));
    if !short.cut() {
        return wire::string_attribute(out, at, name, short.as_str().as_bytes());
    }
    wire::attribute(out, at, name, |out| {
        let text = wire::begin(out, any_value::STRING);
        let _ = write!(Text(out), "{value:?}");
        wire::end(out, text);
    });
}

fn attribute_i64(out: &mut Vec<u8>, at: u32, name: &str, value: i64) {
    wire::attribute(out, at, name, |out| {
        wire::uint(out, any_value::INT, value as u64)
    });
}

fn attribute_bool(out: &mut Vec<u8>, at: u32, name: &str, value: bool) {
    wire::attribute(out, at, name, |out| {
        wire::uint(out, any_value::BOOL, u64::from(value))
    });
}

fn attribute_f64(out: &mut Vec<u8>, at: u32, name: &str, value: f64) {
    wire::attribute(out, at, name, |out| {
        wire::double(out, any_value::DOUBLE, value)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_reads_back_as_written() {
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03";
        let parsed = TraceParent::parse(header).unwrap();
        assert_eq!(parsed.flags, 3);
        assert_eq!(parsed.span_id, 0x00f0_67aa_0ba9_02b7u64.to_be_bytes());
        assert_eq!(parsed.to_header(), header);
        assert_eq!(TraceParent::parse(&header[..54]), None);
    }

    #[test]
    fn ids_are_never_zero_and_differ() {
        let (a, b) = (trace_id(), trace_id());
        assert_ne!(a, b);
        assert!(a != [0; 16] && span_id() != [0; 8]);
    }
}

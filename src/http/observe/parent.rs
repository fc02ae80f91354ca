//! The client's trace, continued (feature `otel`): a request's span takes
//! its parent from the W3C trace context in its `params._meta`
//! (`traceparent`, `tracestate`, `baggage`: the MCP semantic conventions'
//! propagation, which the Python SDK's client injects), else from its
//! HTTP `traceparent` header; with both, `_meta` is the parent and the
//! header's context a link (the conventions: the MCP context and the
//! transport's are independent, one HTTP request may carry a retry of an
//! MCP request). And what the server sends within a request (its
//! notifications, its requests to the client, the input requests of an
//! `input_required` answer) carries the request's span as their parent,
//! in their own `params._meta`.
//!
//! The forms are checked strictly (`trace_context.rs`: every trace-flags
//! value allowed, no short or uppercase ids), then read into the span's
//! record (`span_record.rs`), which the export's layer keeps.

use crate::http::observe::span_layer::with_span;
use crate::http::observe::span_record::{Carried, Remote, TraceParent};
use crate::http::observe::trace_context::{
    is_valid_traceparent, is_within, BAGGAGE_BYTES, TRACESTATE_BYTES,
};
use crate::http::wire::raw_text::RawText;
use http::{HeaderMap, HeaderName};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The trace context members of a `_meta` object: each a string, given
/// once (a member given twice, or not a string, is no context).
#[derive(Default)]
struct MetaContext<'a> {
    traceparent: Option<Cow<'a, str>>,
    tracestate: Option<Cow<'a, str>>,
    baggage: Option<Cow<'a, str>>,
}

impl<'a> MetaContext<'a> {
    fn of(meta: RawText<'a>) -> Option<MetaContext<'a>> {
        let mut context = MetaContext::default();
        for (name, value) in meta.members()? {
            let slot = match &*name.text() {
                "traceparent" => &mut context.traceparent,
                "tracestate" => &mut context.tracestate,
                "baggage" => &mut context.baggage,
                _ => continue,
            };
            if slot.replace(value.string()?).is_some() {
                return None;
            }
        }
        Some(context)
    }
}

/// A trace context, checked: a valid `traceparent`, with its
/// `tracestate` and `baggage` unless they are past their bounds.
fn remote<'a>(
    traceparent: Option<&'a str>,
    tracestate: Option<&'a str>,
    baggage: Option<&'a str>,
) -> Option<Remote<'a>> {
    let parent = traceparent
        .map(str::trim)
        .filter(|t| is_valid_traceparent(t))
        .and_then(TraceParent::parse)?;
    Some(Remote {
        parent,
        tracestate: tracestate.filter(|t| is_within(t, TRACESTATE_BYTES)),
        baggage: baggage.filter(|b| is_within(b, BAGGAGE_BYTES)),
    })
}

/// Sets `span`'s parent (and link) from the trace context of the request:
/// its params' `_meta` (`meta`), its headers. Called before the span is
/// first entered, so before any span is made within it (a child copies
/// its parent's trace when it begins).
pub(crate) fn adopt(span: &tracing::Span, meta: Option<RawText<'_>>, headers: &HeaderMap) {
    // Walked only if it can name a trace context (a name with escapes
    // could spell one).
    let meta = meta
        .filter(|meta| meta.get().contains("traceparent") || meta.get().contains('\\'))
        .and_then(MetaContext::of)
        .unwrap_or_default();
    let from_meta = remote(
        meta.traceparent.as_deref(),
        meta.tracestate.as_deref(),
        meta.baggage.as_deref(),
    );
    let from_header = header_context(headers);
    if from_meta.is_none() && from_header.is_none() {
        return;
    }
    with_span(span, |record| match (from_meta, from_header) {
        (Some(parent), header) => {
            record.adopt(&parent);
            if let Some(header) = header {
                record.link(&header.parent, header.tracestate, true);
            }
        }
        (None, Some(parent)) => record.adopt(&parent),
        (None, None) => {}
    });
}

/// The context of the request's `traceparent` header (one only: two are
/// no context), with its `tracestate` and `baggage`.
fn header_context(headers: &HeaderMap) -> Option<Remote<'_>> {
    // Names made once: a look-up by `&str` parses the name each time.
    static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
    static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");
    static BAGGAGE: HeaderName = HeaderName::from_static("baggage");
    let one = |name: &HeaderName| {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (Some(value), None) => value.to_str().ok(),
            _ => None,
        }
    };
    let traceparent = one(&TRACEPARENT)?;
    remote(Some(traceparent), one(&TRACESTATE), one(&BAGGAGE))
}

/// The current span's context, if the export keeps the span.
fn current() -> Option<Carried> {
    with_span(&tracing::Span::current(), |record| record.carried())
}

/// Puts the current span's context (the request's span, where the request
/// runs) into `message`'s `params._meta`, if it is a request or a
/// notification and the span is exported; a message it cannot go into
/// (params that are not an object) is left as it is.
pub(crate) fn stamp(message: &mut Value) {
    if message.get("method").is_none() {
        return;
    }
    let Some(context) = current() else {
        return;
    };
    let Some(object) = message.as_object_mut() else {
        return;
    };
    let params = object
        .entry("params")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(params) = params.as_object_mut() else {
        return;
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    meta.insert(
        "traceparent".to_owned(),
        Value::String(context.traceparent.to_header()),
    );
    for (name, value) in [
        ("tracestate", context.tracestate),
        ("baggage", context.baggage),
    ] {
        if let Some(value) = value {
            meta.insert(name.to_owned(), Value::String(value.to_string()));
        }
    }
}

/// The current span's context as a W3C `traceparent` (version 00), if the
/// span is exported.
pub(crate) fn current_traceparent() -> Option<Box<str>> {
    with_span(&tracing::Span::current(), |record| {
        record.traceparent().to_header().into_boxed_str()
    })
}

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
//! value allowed, no short or uppercase ids), then read by OpenTelemetry's
//! own W3C propagators.

use crate::http::observe::trace_context::{
    is_valid_traceparent, is_within, BAGGAGE_BYTES, TRACESTATE_BYTES,
};
use http::HeaderMap;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry::Context;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The trace context members of a `_meta` object.
#[derive(Default, Deserialize)]
struct MetaContext<'a> {
    #[serde(borrow, default)]
    traceparent: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tracestate: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    baggage: Option<Cow<'a, str>>,
}

/// A trace context, checked, as the propagators read it.
struct Carrier<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
    baggage: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.traceparent),
            "tracestate" => self.tracestate,
            "baggage" => self.baggage,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate", "baggage"]
    }
}

impl<'a> Carrier<'a> {
    /// The carrier of a valid `traceparent`; a `tracestate` or `baggage`
    /// past its bound is left out.
    fn of(
        traceparent: Option<&'a str>,
        tracestate: Option<&'a str>,
        baggage: Option<&'a str>,
    ) -> Option<Carrier<'a>> {
        let traceparent = traceparent
            .map(str::trim)
            .filter(|t| is_valid_traceparent(t))?;
        Some(Carrier {
            traceparent,
            tracestate: tracestate.filter(|t| is_within(t, TRACESTATE_BYTES)),
            baggage: baggage.filter(|b| is_within(b, BAGGAGE_BYTES)),
        })
    }

    /// The remote context it carries (with its baggage), if its span
    /// context is valid.
    fn context(&self) -> Option<Context> {
        let empty = Context::new();
        let cx = TraceContextPropagator::new().extract_with_context(&empty, self);
        if !cx.span().span_context().is_valid() {
            return None;
        }
        Some(BaggagePropagator::new().extract_with_context(&cx, self))
    }
}

/// Sets `span`'s parent (and link) from the trace context of the request:
/// its params' `_meta` (`meta`), its headers. Called before the span is
/// first entered (OpenTelemetry starts a span then).
pub(crate) fn adopt(span: &tracing::Span, meta: Option<&RawValue>, headers: &HeaderMap) {
    let meta: MetaContext<'_> = meta
        .filter(|raw| raw.get().starts_with('{'))
        .and_then(|raw| serde_json::from_str(raw.get()).ok())
        .unwrap_or_default();
    let from_meta = Carrier::of(
        meta.traceparent.as_deref(),
        meta.tracestate.as_deref(),
        meta.baggage.as_deref(),
    )
    .and_then(|carrier| carrier.context());
    let from_header = header_context(headers);
    match (from_meta, from_header) {
        (Some(parent), header) => {
            // An error only when no OpenTelemetry layer is there: then
            // nobody exports the span either.
            let _ = span.set_parent(parent);
            if let Some(header) = header {
                span.add_link(header.span().span_context().clone());
            }
        }
        (None, Some(parent)) => {
            let _ = span.set_parent(parent);
        }
        (None, None) => {}
    }
}

/// The context of the request's `traceparent` header (one only: two are
/// no context), with its `tracestate` and `baggage`.
fn header_context(headers: &HeaderMap) -> Option<Context> {
    let one = |name: &str| {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (Some(value), None) => value.to_str().ok(),
            _ => None,
        }
    };
    Carrier::of(one("traceparent"), one("tracestate"), one("baggage"))?.context()
}

/// Puts the current span's context (the request's span, where the request
/// runs) into `message`'s `params._meta`, if it is a request or a
/// notification and the span is exported; a message it cannot go into
/// (params that are not an object) is left as it is.
pub(crate) fn stamp(message: &mut Value) {
    if message.get("method").is_none() {
        return;
    }
    let cx = tracing::Span::current().context();
    if !cx.span().span_context().is_valid() {
        return;
    }
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
    let mut into = MetaInjector(meta);
    TraceContextPropagator::new().inject_context(&cx, &mut into);
    BaggagePropagator::new().inject_context(&cx, &mut into);
}

/// The current span's context as a W3C `traceparent` (version 00), if the
/// span is exported.
pub(crate) fn current_traceparent() -> Option<Box<str>> {
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let context = span.span_context();
    if !context.is_valid() {
        return None;
    }
    Some(
        format!(
            "00-{}-{}-{:02x}",
            context.trace_id(),
            context.span_id(),
            context.trace_flags().to_u8()
        )
        .into_boxed_str(),
    )
}

/// A `_meta` object as the propagators write into it.
struct MetaInjector<'a>(&'a mut Map<String, Value>);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if !value.is_empty() {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }
}

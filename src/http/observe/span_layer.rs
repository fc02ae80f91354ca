//! The `tracing` layer of the OTLP export (feature `otel`): each span it
//! sees gets a [`SpanRecord`] in its extensions when it is made (its ids,
//! its parent's trace, its fields encoded as it goes), and at its close the
//! record goes to the export's queue (`export_queue.rs`) if it is sampled.
//! A `tracing` event within a span is one of its events; `follows_from` is
//! a link. No OpenTelemetry SDK span is made: the export writes OTLP
//! straight from the record (`span_record.rs`).
//!
//! The request's span takes its parent from the client's context after it
//! is made (`parent.rs`), through [`with_span`]: a subscriber that has this
//! layer answers a downcast to [`WithRecord`] with a function that finds a
//! span's record (the way tracing-opentelemetry reaches its own data).

use crate::http::observe::export_queue::SpanQueue;
use crate::http::observe::span_record::SpanRecord;
use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use tracing::span::{Attributes, Id, Record};
use tracing::{Dispatch, Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The layer that exports the spans it sees over OTLP (from
/// [`OtlpExport::layer`](crate::http::otlp::OtlpExport::layer)).
pub struct OtlpLayer<S> {
    queue: Arc<SpanQueue>,
    with_record: WithRecord,
    subscriber: PhantomData<fn(S)>,
}

impl<S> fmt::Debug for OtlpLayer<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtlpLayer").finish_non_exhaustive()
    }
}

/// Runs a function on a span's record, given the dispatch that has the
/// span (found by a downcast of the dispatch).
#[derive(Clone, Copy)]
pub(crate) struct WithRecord(fn(&Dispatch, &Id, &mut OnRecord<'_>));

/// What is run on a span's record.
type OnRecord<'a> = dyn FnMut(&mut SpanRecord) + 'a;

impl<S> OtlpLayer<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    pub(crate) fn new(queue: Arc<SpanQueue>) -> OtlpLayer<S> {
        OtlpLayer {
            queue,
            with_record: WithRecord(Self::record_of),
            subscriber: PhantomData,
        }
    }

    fn record_of(dispatch: &Dispatch, id: &Id, f: &mut OnRecord<'_>) {
        let Some(subscriber) = dispatch.downcast_ref::<S>() else {
            return;
        };
        let Some(span) = subscriber.span(id) else {
            return;
        };
        let mut extensions = span.extensions_mut();
        if let Some(record) = extensions.get_mut::<SpanRecord>() {
            f(record);
        }
    }
}

thread_local! {
    /// A buffer for this thread's next span: one an exported span left,
    /// taken from the queue when this thread's last span went into it (no
    /// allocation here, and none freed on the exporter's thread).
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` on `span`'s record, if the export's layer keeps one for it
/// (`None`: the span is disabled, or no such layer saw it).
pub(crate) fn with_span<R>(
    span: &tracing::Span,
    f: impl FnOnce(&mut SpanRecord) -> R,
) -> Option<R> {
    let mut f = Some(f);
    let mut out = None;
    span.with_subscriber(|(id, dispatch)| {
        if let Some(with) = dispatch.downcast_ref::<WithRecord>() {
            (with.0)(dispatch, id, &mut |record| {
                if let Some(f) = f.take() {
                    out = Some(f(record));
                }
            });
        }
    });
    out
}

impl<S> Layer<S> for OtlpLayer<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        // The parent this layer sees (a span a filter of this layer's
        // leaves out is skipped to its nearest seen ancestor).
        let body = SPARE.take();
        let mut record = match span.parent() {
            Some(parent) => {
                let extensions = parent.extensions();
                SpanRecord::begin(
                    attrs.metadata().name(),
                    extensions.get::<SpanRecord>(),
                    body,
                )
            }
            None => SpanRecord::begin(attrs.metadata().name(), None, body),
        };
        attrs.record(&mut record.fields());
        span.extensions_mut().insert(record);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            let mut extensions = span.extensions_mut();
            if let Some(record) = extensions.get_mut::<SpanRecord>() {
                values.record(&mut record.fields());
            }
        }
    }

    fn on_follows_from(&self, id: &Id, follows: &Id, ctx: Context<'_, S>) {
        let Some(to) = ctx.span(follows).and_then(|span| {
            let extensions = span.extensions();
            extensions.get::<SpanRecord>().map(SpanRecord::carried)
        }) else {
            return;
        };
        if let Some(span) = ctx.span(id) {
            let mut extensions = span.extensions_mut();
            if let Some(record) = extensions.get_mut::<SpanRecord>() {
                record.link(&to.traceparent, to.tracestate.as_deref(), false);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.event_span(event) {
            let mut extensions = span.extensions_mut();
            if let Some(record) = extensions.get_mut::<SpanRecord>() {
                record.event(event);
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(mut record) = span.extensions_mut().remove::<SpanRecord>() else {
            return;
        };
        if record.sampled() {
            record.close();
            if let Some(spare) = self.queue.push(record) {
                SPARE.set(spare);
            }
        }
    }

    // SAFETY: the pointers returned point at `self` when asked for `Self`'s
    // type id, and at `self.with_record` (a `WithRecord`) when asked for
    // `WithRecord`'s: each the type its id names, as `downcast_raw`'s
    // contract requires; both live as long as `self`.
    unsafe fn downcast_raw(&self, id: TypeId) -> Option<*const ()> {
        if id == TypeId::of::<Self>() {
            Some(self as *const Self as *const ())
        } else if id == TypeId::of::<WithRecord>() {
            Some(&self.with_record as *const WithRecord as *const ())
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::observe::otlp_wire::export;
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    use opentelemetry_proto::tonic::trace::v1::{status::StatusCode, ScopeSpans, Span};
    use prost::Message as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    /// The spans a closure's `tracing` spans became, decoded with the
    /// official definitions.
    fn exported(work: impl FnOnce()) -> Vec<Span> {
        let queue = Arc::new(SpanQueue::new(64, 64));
        let subscriber = tracing_subscriber::registry().with(OtlpLayer::new(Arc::clone(&queue)));
        tracing::subscriber::with_default(subscriber, work);
        let mut records = Vec::new();
        queue.take(&mut records);
        let mut out = Vec::new();
        for record in &records {
            record.encode(&mut out, export::SPANS);
        }
        ScopeSpans::decode(&out[..]).unwrap().spans
    }

    fn attribute(span: &Span, key: &str) -> Option<Value> {
        span.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.clone()?.value)
    }

    #[test]
    fn a_span_is_exported_with_its_fields_events_links_and_status() {
        let spans = exported(|| {
            let first = tracing::info_span!("first", otel.kind = "Client", n = 7_u64);
            let span = tracing::info_span!(
                "work",
                otel.name = %format_args!("tools/call {}", "echo"),
                otel.status_code = tracing::field::Empty,
                otel.status_description = tracing::field::Empty,
                text = "a",
                shown = ?[1, 2],
                flag = true,
                ratio = 0.5,
                big = u64::MAX,
                later = tracing::field::Empty,
            );
            span.follows_from(&first);
            span.in_scope(|| {
                tracing::info!(step = 2, "halfway");
                let _child = tracing::info_span!("child").entered();
            });
            span.record("later", "set");
            span.record("otel.status_code", "ERROR");
            span.record("otel.status_description", "it failed");
        });
        assert_eq!(spans.len(), 3, "{spans:#?}");
        let first = spans.iter().find(|s| s.name == "first").unwrap();
        let child = spans.iter().find(|s| s.name == "child").unwrap();
        let work = spans.iter().find(|s| s.name == "tools/call echo").unwrap();
        assert_eq!(first.kind, 3);
        assert_eq!(attribute(first, "n"), Some(Value::IntValue(7)));
        assert_eq!(work.kind, 1);
        assert_eq!(
            attribute(work, "text"),
            Some(Value::StringValue("a".into()))
        );
        assert_eq!(
            attribute(work, "shown"),
            Some(Value::StringValue("[1, 2]".into()))
        );
        assert_eq!(attribute(work, "flag"), Some(Value::BoolValue(true)));
        assert_eq!(attribute(work, "ratio"), Some(Value::DoubleValue(0.5)));
        assert_eq!(
            attribute(work, "big"),
            Some(Value::StringValue(u64::MAX.to_string()))
        );
        assert_eq!(
            attribute(work, "later"),
            Some(Value::StringValue("set".into()))
        );
        assert!(attribute(work, "otel.name").is_none());
        let status = work.status.clone().unwrap();
        assert_eq!(status.code, StatusCode::Error as i32);
        assert_eq!(status.message, "it failed");
        assert_eq!(work.events.len(), 1);
        assert_eq!(work.events[0].name, "halfway");
        assert!(work.events[0].attributes.iter().any(|kv| kv.key == "step"));
        assert_eq!(work.links.len(), 1);
        assert_eq!(work.links[0].span_id, first.span_id);
        assert_eq!(child.trace_id, work.trace_id);
        assert_eq!(child.parent_span_id, work.span_id);
        assert!(work.parent_span_id.is_empty());
        assert_ne!(work.trace_id, first.trace_id);
        assert!(work.start_time_unix_nano > 0);
        assert!(work.end_time_unix_nano >= work.start_time_unix_nano);
    }

    #[test]
    fn a_span_keeps_128_events_and_attributes_and_counts_the_rest() {
        let spans = exported(|| {
            let span = tracing::info_span!("busy", n = tracing::field::Empty);
            span.in_scope(|| {
                for i in 0..200 {
                    tracing::info!(i, "tick");
                    tracing::Span::current().record("n", i);
                }
            });
        });
        assert_eq!(spans[0].events.len(), 128);
        assert_eq!(spans[0].dropped_events_count, 72);
        assert_eq!(spans[0].attributes.len(), 128);
        assert_eq!(spans[0].dropped_attributes_count, 72);
    }

    #[test]
    fn a_span_whose_client_did_not_sample_it_is_not_exported_but_carried() {
        use crate::http::observe::span_record::{Remote, TraceParent};
        let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        let mut carried = None;
        let spans = exported(|| {
            let span = tracing::info_span!("request");
            with_span(&span, |record| {
                record.adopt(&Remote {
                    parent: TraceParent::parse(header).unwrap(),
                    tracestate: Some("k=v"),
                    baggage: None,
                })
            })
            .expect("the layer keeps the span");
            carried =
                span.in_scope(|| with_span(&tracing::Span::current(), |record| record.carried()));
        });
        assert!(spans.is_empty(), "{spans:#?}");
        let carried = carried.unwrap();
        assert_eq!(&carried.traceparent.to_header()[..36], &header[..36]);
        assert!(carried.traceparent.to_header().ends_with("-00"));
        assert_eq!(carried.tracestate.as_deref(), Some("k=v"));
    }
}

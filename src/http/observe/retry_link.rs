//! A retry's link to the request that asked for input (2026-07-28
//! multi-round-trip requests). The retry is a request of its own, with a
//! SERVER span of its own whose parent is the client's context, as any
//! request's; the MCP conventions say nothing of the round trip. The state
//! sealed into the `input_required` answer carries the asking request's
//! span (its trace id and span id: 24 bytes, inside the seal, so no client
//! can forge or read them, `input/sealing.rs`), and the retry's span links
//! to it. The link is all it is used for; the state itself never goes
//! into a span. With feature `otel` only: without it a span has no ids,
//! and nothing is sealed in.

use crate::http::input::sealing::LINK;

/// The current span (the asking request's) as a link to seal in its
/// answer's state: its trace id and span id, when it is exported.
#[inline]
pub(crate) fn origin() -> Option<[u8; LINK]> {
    #[cfg(feature = "otel")]
    if !tracing::Span::current().is_disabled() {
        return otel::origin();
    }
    None
}

/// Links the current span (the retry's) to the asking request's span,
/// `origin`, opened from the retry's state.
#[inline]
pub(crate) fn link(origin: Option<&[u8; LINK]>) {
    #[cfg(feature = "otel")]
    if let Some(origin) = origin {
        otel::link(origin);
    }
    #[cfg(not(feature = "otel"))]
    let _ = origin;
}

#[cfg(feature = "otel")]
mod otel {
    use super::LINK;
    use crate::http::observe::span_layer::with_span;
    use crate::http::observe::span_record::TraceParent;

    pub(super) fn origin() -> Option<[u8; LINK]> {
        with_span(&tracing::Span::current(), |record| {
            let ids = record.traceparent();
            let mut origin = [0u8; LINK];
            origin[..16].copy_from_slice(&ids.trace_id);
            origin[16..].copy_from_slice(&ids.span_id);
            origin
        })
    }

    pub(super) fn link(origin: &[u8; LINK]) {
        let (trace, span) = origin.split_at(16);
        let to = TraceParent {
            trace_id: trace.try_into().expect("16 bytes"),
            span_id: span.try_into().expect("8 bytes"),
            // Not sealed: a link's flags say nothing the link needs.
            flags: 0,
        };
        if to.trace_id == [0; 16] || to.span_id == [0; 8] {
            return;
        }
        with_span(&tracing::Span::current(), |record| {
            record.link(&to, None, true);
        });
    }
}

//! The current trace context put into what the server sends ([`stamp`],
//! [`stamped`]): with feature `otel`, into its `params._meta`; and the
//! current span's `traceparent` alone ([`traceparent`]), for a stream that
//! writes it into each of its frames.

/// Puts the current span's trace context into an outgoing request's or
/// notification's `params._meta` (feature `otel`; nothing without it).
#[inline]
pub(crate) fn stamp(message: &mut serde_json::Value) {
    #[cfg(feature = "otel")]
    super::parent::stamp(message);
    #[cfg(not(feature = "otel"))]
    let _ = message;
}

/// `message` with the current span's trace context in its `_meta`, when
/// there is one to put there (feature `otel`); else `message` itself.
#[inline]
pub(crate) fn stamped(message: &serde_json::Value) -> std::borrow::Cow<'_, serde_json::Value> {
    #[cfg(feature = "otel")]
    if !tracing::Span::current().is_disabled() {
        let mut stamped = message.clone();
        super::parent::stamp(&mut stamped);
        return std::borrow::Cow::Owned(stamped);
    }
    std::borrow::Cow::Borrowed(message)
}

/// The current span's W3C `traceparent` (55 bytes), when it is exported
/// (feature `otel`); else `None`. What a long-lived stream keeps to stamp
/// every frame it writes long after its request's span ended.
#[inline]
pub(crate) fn traceparent() -> Option<Box<str>> {
    #[cfg(feature = "otel")]
    if !tracing::Span::current().is_disabled() {
        return super::parent::current_traceparent();
    }
    None
}

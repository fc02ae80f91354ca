//! The current trace context put into what the server sends ([`stamp`],
//! [`stamped`]): with feature `otel`, into its `params._meta`.

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

//! A message's params as the client wrote them ([`Params`]): JSON text
//! checked once when the message is read, then shared, not copied, by
//! whoever reads it after (the handler, and the layer's own readers).

use serde::de::Error as _;
use serde_json::value::RawValue;
use std::fmt;
use std::sync::Arc;

/// A request's or a notification's params: the JSON text the client sent,
/// an object or an array, checked as JSON once and held shared. A clone
/// is a reference count, not a copy: the layer's view of a call's `name`
/// and `arguments` ([`ModernRequest::call`](crate::http::ModernRequest::call))
/// and an input request's binding read the same text the handler gets.
///
/// Read them with [`Request::params_as`](super::jsonrpc::Request::params_as)
/// (a type of the application's), [`Request::params_borrowed`](super::jsonrpc::Request::params_borrowed)
/// (one that borrows from the text) or [`Params::get`] (the text itself).
///
/// ```
/// use sessionreg::http::jsonrpc::Params;
///
/// let params = Params::new(r#"{"name": "echo"}"#).unwrap();
/// assert_eq!(params.get(), r#"{"name": "echo"}"#);
/// assert!(Params::new("[1, 2]").is_ok());
/// assert!(Params::new("3").is_err()); // JSON, but neither an object nor an array
/// assert!(Params::new("{").is_err()); // not JSON
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Params(Arc<str>);

impl Params {
    /// `text` as params; an error if it is not JSON, or is JSON but neither
    /// an object nor an array (JSON-RPC 2.0's structured params).
    pub fn new(text: &str) -> Result<Params, serde_json::Error> {
        let raw: &RawValue = serde_json::from_str(text)?;
        Params::checked(raw)
            .ok_or_else(|| serde_json::Error::custom("params must be a JSON object or an array"))
    }

    /// The params of a text serde_json has checked (a `RawValue` borrowed
    /// from a message's body), copied once; `None` unless it is an object
    /// or an array.
    pub(crate) fn checked(raw: &RawValue) -> Option<Params> {
        Params::of_checked(raw.get())
    }

    /// [`Params::checked`] of a value's text checked as JSON by another
    /// reader (the one walk over a body, `one_walk.rs`).
    pub(crate) fn of_checked(text: &str) -> Option<Params> {
        matches!(text.as_bytes().first(), Some(b'{' | b'[')).then(|| Params(Arc::from(text)))
    }

    /// The text, as the client wrote it.
    pub fn get(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Params {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The text, as a `RawValue`'s `Debug` shows it.
impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Params").field(&&*self.0).finish()
    }
}

/// The text, as the client wrote it.
impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_an_object_or_an_array_of_checked_text_shared_by_a_clone() {
        // Whitespace around the value is not part of its text.
        assert_eq!(Params::new(" [1] \n").unwrap().get(), "[1]");
        let params = Params::new(r#"{"a" : [1, {}]}"#).unwrap();
        let shared = params.clone();
        assert!(std::ptr::eq(params.get(), shared.get()));
        assert_eq!(
            format!("{params} {params:?}"),
            r#"{"a" : [1, {}]} Params("{\"a\" : [1, {}]}")"#
        );
        assert!(Params::new(r#""text""#).is_err());
        assert!(Params::new("null").is_err());
        assert!(Params::new(r#"{"a": 1,}"#).is_err());
    }
}

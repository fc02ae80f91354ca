//! The methods MCP defines ([`known`]): what a method's name is kept as
//! without a copy of the client's text ([`MethodName`], [`kept`]), and what
//! a metric's label may name (`observe/methods.rs`).

use serde::{Serialize, Serializer};
use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;

/// Every method MCP defines (the semantic conventions' well-known
/// `mcp.method.name` values, and those of 2026-07-28 and its tasks
/// extension), sorted.
pub(crate) const KNOWN: &[&str] = &[
    "completion/complete",
    "elicitation/create",
    "initialize",
    "logging/setLevel",
    "notifications/cancelled",
    "notifications/elicitation/complete",
    "notifications/initialized",
    "notifications/message",
    "notifications/progress",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/tasks/status",
    "notifications/tools/list_changed",
    "ping",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/templates/list",
    "resources/unsubscribe",
    "roots/list",
    "sampling/createMessage",
    "server/discover",
    "subscriptions/listen",
    "tasks/cancel",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/update",
    "tools/call",
    "tools/list",
];

/// `method` as MCP's own static name, if MCP defines it.
pub(crate) fn known(method: &str) -> Option<&'static str> {
    // The request nearly every busy server answers most, first; then the
    // list, whose comparisons mostly stop at the length.
    if method == "tools/call" {
        return Some("tools/call");
    }
    KNOWN.iter().find(|known| **known == method).copied()
}

/// `method` kept past its message: MCP's own name borrowed, any other
/// copied.
pub(crate) fn kept(method: &str) -> Cow<'static, str> {
    match known(method) {
        Some(name) => Cow::Borrowed(name),
        None => Cow::Owned(method.to_owned()),
    }
}

/// A JSON-RPC method's name, as a [`Request`](super::jsonrpc::Request) or a
/// [`Notification`](super::jsonrpc::Notification) holds it: a name MCP
/// defines is MCP's own static text (no copy of the client's, no
/// allocation), any other a copy. It reads as a `&str` ([`as_str`](Self::as_str),
/// `Deref`) and compares with strings.
///
/// ```
/// use sessionreg::http::jsonrpc::MethodName;
///
/// let name = MethodName::new("tools/call");
/// assert_eq!(name, "tools/call");
/// assert!(name.starts_with("tools/"));
/// match name.as_str() {
///     "tools/call" => {}
///     other => panic!("{other}"),
/// }
/// let other: MethodName = String::from("acme/anything").into();
/// assert_eq!(String::from(other), "acme/anything");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MethodName(Cow<'static, str>);

impl MethodName {
    /// `name`, held as MCP's own text when MCP defines it, else copied.
    pub fn new(name: &str) -> MethodName {
        MethodName(kept(name))
    }

    /// The name's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as a `Cow`: borrowed from MCP's own names, or owned.
    pub(crate) fn into_cow(self) -> Cow<'static, str> {
        self.0
    }
}

impl Deref for MethodName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for MethodName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for MethodName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for MethodName {
    fn from(name: &str) -> MethodName {
        MethodName::new(name)
    }
}

/// `name` itself when MCP does not define it (no copy); MCP's own text
/// (the `String` freed) when it does.
impl From<String> for MethodName {
    fn from(name: String) -> MethodName {
        match known(&name) {
            Some(known) => MethodName(Cow::Borrowed(known)),
            None => MethodName(Cow::Owned(name)),
        }
    }
}

impl From<MethodName> for String {
    fn from(name: MethodName) -> String {
        name.0.into_owned()
    }
}

impl fmt::Debug for MethodName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for MethodName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for MethodName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl PartialEq<str> for MethodName {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for MethodName {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for MethodName {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<MethodName> for str {
    fn eq(&self, other: &MethodName) -> bool {
        *self == *other.0
    }
}

impl PartialEq<MethodName> for &str {
    fn eq(&self, other: &MethodName) -> bool {
        **self == *other.0
    }
}

impl PartialEq<MethodName> for String {
    fn eq(&self, other: &MethodName) -> bool {
        **self == *other.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_name_holds_mcps_own_text_and_copies_any_other() {
        assert!(matches!(
            MethodName::new("tools/call").0,
            Cow::Borrowed("tools/call")
        ));
        assert!(matches!(
            MethodName::from(String::from("ping")).0,
            Cow::Borrowed("ping")
        ));
        let other = MethodName::from(String::from("acme/anything"));
        assert!(matches!(&other.0, Cow::Owned(m) if m == "acme/anything"));
        assert_eq!(other, "acme/anything");
        assert_eq!("acme/anything", other);
        assert_eq!(
            format!("{other} {other:?}"),
            r#"acme/anything "acme/anything""#
        );
        assert_eq!(serde_json::to_string(&other).unwrap(), r#""acme/anything""#);
        assert_ne!(MethodName::new("tools/list"), "tools/call");
    }

    #[test]
    fn the_known_methods_are_sorted_and_kept_without_a_copy() {
        assert!(KNOWN.windows(2).all(|w| w[0] < w[1]));
        assert!(matches!(kept("tools/call"), Cow::Borrowed("tools/call")));
        assert!(matches!(kept("ping"), Cow::Borrowed("ping")));
        assert!(matches!(kept("acme/anything"), Cow::Owned(m) if m == "acme/anything"));
    }
}

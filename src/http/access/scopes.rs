//! The scopes a request's access token grants ([`Scopes`]), put into the
//! request's extensions beside its [`Principal`](super::auth::Principal) by
//! whoever authenticated it (the OAuth resource server of feature `oauth`,
//! or a middleware in front of the manager), and read by the application
//! through [`Context::scopes`](crate::http::Context::scopes).

use http::request::Parts;
use std::fmt;
use std::sync::Arc;

/// The scopes an access token grants: OAuth scope tokens (RFC 6749 §3.3),
/// in the order the token lists them. Cheap to clone (one `Arc`).
///
/// ```
/// use sessionreg::http::Scopes;
///
/// let scopes = Scopes::new(["files:read", "files:write"]);
/// assert!(scopes.contains("files:read"));
/// assert!(!scopes.contains("files"));
/// assert_eq!(scopes.iter().collect::<Vec<_>>(), ["files:read", "files:write"]);
/// assert_eq!(scopes.to_string(), "files:read files:write");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Scopes(Arc<str>);

impl Scopes {
    /// The scopes named in `scopes`; empty names and repeats are skipped, and
    /// a name with a space in it counts as the names it separates (a scope
    /// token has no space).
    pub fn new<I, S>(scopes: I) -> Scopes
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut joined = String::new();
        for scope in scopes {
            for name in scope.as_ref().split(' ').filter(|s| !s.is_empty()) {
                if !joined.split(' ').any(|have| have == name) {
                    if !joined.is_empty() {
                        joined.push(' ');
                    }
                    joined.push_str(name);
                }
            }
        }
        Scopes(joined.into())
    }

    /// The scopes of a space-separated list, as the `scope` claim and
    /// parameter carry them.
    pub fn parse(list: &str) -> Scopes {
        Scopes::new([list])
    }

    /// Whether the token grants `scope` (compared exactly: scope tokens are
    /// case-sensitive).
    pub fn contains(&self, scope: &str) -> bool {
        self.iter().any(|have| have == scope)
    }

    /// Whether the token grants every one of `scopes`.
    pub fn contains_all<'a>(&self, scopes: impl IntoIterator<Item = &'a str>) -> bool {
        scopes.into_iter().all(|scope| self.contains(scope))
    }

    /// The scopes, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.split(' ').filter(|s| !s.is_empty())
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The scopes as a space-separated list.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The scopes put into a request's extensions, if any.
    pub fn of(request: &Parts) -> Option<&Scopes> {
        request.extensions.get::<Scopes>()
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_split_deduplicated_and_compared_exactly() {
        let scopes = Scopes::new(["a b", "", "b", "c  d", "A"]);
        assert_eq!(scopes.as_str(), "a b c d A");
        assert!(scopes.contains_all(["a", "d", "A"]));
        assert!(!scopes.contains("a b"));
        assert!(!scopes.contains(""));
        assert!(Scopes::parse("  ").is_empty());
        assert_eq!(format!("{scopes:?}"), r#"["a", "b", "c", "d", "A"]"#);
    }
}

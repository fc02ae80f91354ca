//! Who sent a request ([`Principal`]), as the layer's authentication (or a
//! middleware in front of it) named them: what sessions, tasks, handles,
//! listen streams and shares are bound to, and what a publication's
//! audience names.

use http::request::Parts;
use std::fmt;
use std::sync::Arc;

/// Who a request comes from, as the [`Authenticator`](crate::http::Authenticator) named it: a user, a
/// tenant, a client application. Sessions are bound to it; two principals
/// are the same when their names are equal.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// A principal named `name`.
    pub fn new(name: impl Into<Arc<str>>) -> Principal {
        Principal(name.into())
    }

    /// The principal's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The principal the manager's authenticator found for a request, read
    /// from the request's extensions (`None` without an authenticator).
    ///
    /// ```
    /// use sessionreg::http::Principal;
    ///
    /// let (mut parts, ()) = http::Request::new(()).into_parts();
    /// assert!(Principal::of(&parts).is_none());
    /// parts.extensions.insert(Principal::new("ada"));
    /// assert_eq!(Principal::of(&parts).map(Principal::as_str), Some("ada"));
    /// ```
    pub fn of(request: &Parts) -> Option<&Principal> {
        request.extensions.get::<Principal>()
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Principal").field(&&*self.0).finish()
    }
}

/// As its name: the audience of a publication carries principals across a
/// fleet's bus.
impl serde::Serialize for Principal {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Principal {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Principal, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(Principal::new(name))
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

//! The protocol versions this layer serves, and which era each belongs to.
//!
//! MCP has two eras (the 2026-07-28 versioning page's terms). **Legacy**
//! versions (2024-11-05 to 2025-11-25) open a session with `initialize`
//! and name it with `MCP-Session-Id`; the **modern** one, 2026-07-28, has
//! no session: every request carries its protocol version and the client's
//! capabilities in `params._meta`. One endpoint serves both, deciding per
//! request.

/// The legacy protocol versions (with sessions) this layer serves, oldest
/// first.
pub(crate) const LEGACY_VERSIONS: [&str; 4] =
    ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The newest legacy version: what `initialize` is answered with when a
/// client asks for one this layer does not know.
pub(crate) const LATEST_LEGACY_VERSION: &str = "2025-11-25";
/// The version assumed for a request without an `MCP-Protocol-Version`
/// header (as the 2025-06-18 and later revisions say).
pub(crate) const DEFAULT_VERSION: &str = "2025-03-26";
/// The modern protocol version (no sessions): its requests never touch the
/// session registry.
pub(crate) const MODERN_VERSION: &str = "2026-07-28";

/// The protocol version a request was sent at: a legacy one (with
/// sessions) or the modern one.
///
/// ```
/// use sessionreg::http::Version;
///
/// assert_eq!(Version::named("2025-06-18"), Some(Version::Legacy("2025-06-18")));
/// assert_eq!(Version::named(Version::MODERN), Some(Version::Modern));
/// assert_eq!(Version::negotiate(Some("2099-01-01")), Version::LATEST_LEGACY);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// One of [`Version::LEGACY`]: the request belongs to a session.
    Legacy(&'static str),
    /// [`Version::MODERN`]: no session is looked up, minted or echoed.
    Modern,
}

impl Version {
    /// The legacy protocol versions (with sessions) this layer serves,
    /// oldest first.
    pub const LEGACY: [&'static str; 4] = LEGACY_VERSIONS;
    /// The newest legacy version: what `initialize` is answered with when a
    /// client asks for one this layer does not know.
    pub const LATEST_LEGACY: &'static str = LATEST_LEGACY_VERSION;
    /// The version assumed for a request without an `MCP-Protocol-Version`
    /// header (as the 2025-06-18 and later revisions say).
    pub const ASSUMED: &'static str = DEFAULT_VERSION;
    /// The modern protocol version (no sessions): its requests never touch
    /// the session registry.
    pub const MODERN: &'static str = MODERN_VERSION;

    /// The legacy version a server answers `initialize` with: the client's
    /// if it is served, else the latest (MCP version negotiation). Never
    /// the modern version, which has no `initialize`. The layer does this
    /// itself for every `initialize`.
    pub fn negotiate(requested: Option<&str>) -> &'static str {
        negotiate(requested)
    }

    /// The version string.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Legacy(v) => v,
            Version::Modern => MODERN_VERSION,
        }
    }

    /// The legacy version `text` names, or the modern one; `None` for a
    /// version this layer does not serve.
    pub fn named(text: &str) -> Option<Version> {
        if text == MODERN_VERSION {
            return Some(Version::Modern);
        }
        LEGACY_VERSIONS
            .iter()
            .find(|v| **v == text)
            .map(|v| Version::Legacy(v))
    }

    /// Whether a client at this version understands priming events and
    /// resumes SSE streams the 2025-11-25 way.
    pub(crate) fn resumes(self) -> bool {
        matches!(self, Version::Legacy(v) if v >= "2025-11-25")
    }
}

/// [`Version::negotiate`].
pub(crate) fn negotiate(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| LEGACY_VERSIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(LATEST_LEGACY_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_negotiation() {
        assert_eq!(
            Version::named("2024-11-05"),
            Some(Version::Legacy("2024-11-05"))
        );
        assert_eq!(Version::named("2026-07-28"), Some(Version::Modern));
        assert_eq!(Version::named("1999-01-01"), None);
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2099-01-01")), LATEST_LEGACY_VERSION);
        assert_eq!(negotiate(Some(MODERN_VERSION)), LATEST_LEGACY_VERSION);
        assert!(Version::Legacy("2025-11-25").resumes());
        assert!(!Version::Legacy("2025-06-18").resumes() && !Version::Modern.resumes());
    }
}

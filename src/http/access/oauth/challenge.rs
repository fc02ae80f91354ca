//! The `WWW-Authenticate` challenges of a resource server (RFC 6750 §3,
//! RFC 9728 §5.1, the MCP authorization page's "Scope Challenge Handling"),
//! built once:
//!
//! * no token: `401`, `Bearer resource_metadata="…"`, and `scope="…"` when
//!   scopes are required, so a client knows where to get a token and what
//!   to ask for;
//! * a token that is not valid: the same with `error="invalid_token"`
//!   first;
//! * a valid token without a required scope: `403`,
//!   `Bearer error="insufficient_scope", scope="…", resource_metadata="…",
//!   error_description="…"`; a call whose tool, prompt, resource or method
//!   needs more gets the same, its `scope` naming every scope the call
//!   needs (the required ones first), built when it is refused
//!   ([`step_up`]).
//!
//! Every value quoted in them was checked when the server was built: a URL
//! of visible ASCII without quotes or backslashes, scope tokens of RFC 6749
//! §3.3's characters.

use http::HeaderValue;

/// The three challenges.
#[derive(Debug, Clone)]
pub(crate) struct Challenges {
    pub(crate) missing: HeaderValue,
    pub(crate) invalid: HeaderValue,
    pub(crate) insufficient_scope: HeaderValue,
}

impl Challenges {
    /// The challenges of a resource whose metadata is at `metadata_url`,
    /// requiring `required` (space-separated, possibly empty).
    pub(crate) fn new(metadata_url: &str, required: &str) -> Challenges {
        let metadata = format!("resource_metadata=\"{metadata_url}\"");
        let scope = if required.is_empty() {
            String::new()
        } else {
            format!(", scope=\"{required}\"")
        };
        let value = |text: String| {
            HeaderValue::try_from(text).expect("checked: visible ASCII without quotes")
        };
        Challenges {
            missing: value(format!("Bearer {metadata}{scope}")),
            invalid: value(format!("Bearer error=\"invalid_token\", {metadata}{scope}")),
            insufficient_scope: value(format!(
                "Bearer error=\"insufficient_scope\"{scope}, {metadata}, \
                 error_description=\"{REQUIRED_DESCRIPTION}\""
            )),
        }
    }
}

/// The `error_description` of the 403 for a required scope.
const REQUIRED_DESCRIPTION: &str = "the access token lacks a scope every request needs";

/// The 403 challenge of a call that needs `needed` (every scope, checked
/// tokens), asked for by `what` (a method and its target: quoted with
/// anything but visible ASCII, quotes and backslashes replaced by `?`).
pub(crate) fn step_up(metadata_url: &str, needed: &[String], what: &str) -> HeaderValue {
    let what: String = what
        .chars()
        .map(|c| match c {
            '"' | '\\' => '?',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '?',
        })
        .collect();
    let text = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{metadata_url}\", \
         error_description=\"the access token lacks a scope {what} needs\"",
        needed.join(" ")
    );
    HeaderValue::try_from(text).expect("checked: visible ASCII without quotes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_name_the_metadata_and_the_required_scopes() {
        let url = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
        let c = Challenges::new(url, "files:read files:write");
        assert_eq!(
            c.missing,
            format!(r#"Bearer resource_metadata="{url}", scope="files:read files:write""#)
        );
        assert_eq!(
            c.invalid,
            format!(
                r#"Bearer error="invalid_token", resource_metadata="{url}", scope="files:read files:write""#
            )
        );
        assert_eq!(
            c.insufficient_scope,
            format!(
                r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="{url}", error_description="the access token lacks a scope every request needs""#
            )
        );
        assert_eq!(
            step_up(
                url,
                &["a".into(), "b:w".into()],
                "tools/call of \"x\"\u{e9}"
            ),
            format!(
                r#"Bearer error="insufficient_scope", scope="a b:w", resource_metadata="{url}", error_description="the access token lacks a scope tools/call of ?x?? needs""#
            )
        );
        let none = Challenges::new(url, "");
        assert_eq!(none.missing, format!(r#"Bearer resource_metadata="{url}""#));
    }
}

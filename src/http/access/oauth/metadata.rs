//! The resource server's Protected Resource Metadata (RFC 9728 §2), and its
//! answer at the well-known URL of the MCP endpoint (RFC 9728 §3.1: the
//! suffix inserted between host and path, e.g.
//! `/.well-known/oauth-protected-resource/mcp`), and at the root
//! `/.well-known/oauth-protected-resource` (the MCP authorization page's
//! fallback for clients that find no `resource_metadata` in a challenge).
//!
//! The document is public: it is answered before the `Origin`/`Host`
//! checks and without credentials, to any origin (`Access-Control-Allow-Origin:
//! *`, a preflight included: browser-based clients read it cross-origin),
//! to `GET` and `HEAD`; another method gets 405.

use crate::http::wire::body::{self, Body};
use bytes::Bytes;
use http::header::{
    HeaderValue, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ALLOW, CACHE_CONTROL, CONTENT_TYPE,
};
use http::{Method, Response, StatusCode};
use serde::Serialize;

/// RFC 9728 §2: the members this server publishes.
#[derive(Serialize)]
pub(crate) struct Document<'a> {
    pub(crate) resource: &'a str,
    pub(crate) authorization_servers: [&'a str; 1],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) scopes_supported: &'a [String],
    pub(crate) bearer_methods_supported: [&'static str; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) resource_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) resource_documentation: Option<&'a str>,
}

/// The metadata, rendered once, and where it is served.
#[derive(Debug, Clone)]
pub(crate) struct Published {
    /// The JSON document.
    pub(crate) json: Bytes,
    /// `/.well-known/oauth-protected-resource` + the resource's path.
    pub(crate) path: String,
    /// Also served at the root well-known path (the resource has a path).
    pub(crate) at_root: bool,
}

impl Published {
    pub(crate) fn new(document: &Document<'_>, path: String, at_root: bool) -> Published {
        Published {
            json: Bytes::from(serde_json::to_vec(document).expect("strings only")),
            path,
            at_root,
        }
    }

    /// Whether a request for `path` asks for this document.
    pub(crate) fn serves(&self, path: &str) -> bool {
        path == self.path || (self.at_root && path == super::urls::RESOURCE_METADATA)
    }

    /// The answer to a request for the document.
    pub(crate) fn answer(&self, method: &Method) -> Response<Body> {
        let mut response = match *method {
            Method::GET => Response::new(body::full(self.json.clone())),
            Method::HEAD => Response::new(body::empty()),
            Method::OPTIONS => body::status(StatusCode::NO_CONTENT),
            _ => {
                let mut refused = body::status(StatusCode::METHOD_NOT_ALLOWED);
                refused
                    .headers_mut()
                    .insert(ALLOW, HeaderValue::from_static("GET, HEAD, OPTIONS"));
                return refused;
            }
        };
        let headers = response.headers_mut();
        if *method != Method::OPTIONS {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(
                CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            );
        }
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
        headers.insert(
            ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, HEAD, OPTIONS"),
        );
        headers.insert(
            ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("mcp-protocol-version"),
        );
        response
    }
}

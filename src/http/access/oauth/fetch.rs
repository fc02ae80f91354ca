//! The resource server's one HTTP client, to its authorization server: GET
//! a JSON document (metadata, JWKS), POST a form (introspection). hyper-util's
//! client over rustls (aws-lc, the OS's roots), HTTP/1.1; every exchange
//! bounded in time and in the bytes it reads, no redirect followed (a
//! document must be where the configuration or the metadata says).

use super::OAuthConfigError;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::de::DeserializeOwned;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Why a fetch failed (the URL is the caller's to name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FetchError {
    /// No answer within the timeout.
    Timeout,
    /// No connection, or it failed mid-exchange.
    Unreachable(String),
    /// An answer other than 200.
    Status(StatusCode),
    /// An answer larger than the bound.
    TooLarge,
    /// An answer that is not the JSON expected.
    Json(String),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::Timeout => f.write_str("no answer in time"),
            FetchError::Unreachable(why) => write!(f, "unreachable: {why}"),
            FetchError::Status(status) => write!(f, "answered {status}"),
            FetchError::TooLarge => f.write_str("the answer is larger than allowed"),
            FetchError::Json(why) => write!(f, "not the JSON expected: {why}"),
        }
    }
}

/// The client, with its bounds. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Fetcher {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    max_bytes: usize,
}

impl Fetcher {
    /// A client trusting the OS's root certificates. Without any (a
    /// container with no CA bundle), only plain http works: refused when
    /// `https_needed`.
    pub(crate) fn new(
        timeout: Duration,
        max_bytes: usize,
        https_needed: bool,
    ) -> Result<Fetcher, OAuthConfigError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        let builder = match builder.with_provider_and_native_roots(Arc::clone(&provider)) {
            Ok(builder) => builder,
            Err(error) if https_needed => {
                return Err(OAuthConfigError::Tls(error.to_string()));
            }
            Err(_) => {
                let config = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .map_err(|e| OAuthConfigError::Tls(e.to_string()))?
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth();
                hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
            }
        };
        let connector = builder.https_or_http().enable_http1().build();
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(Fetcher {
            client,
            timeout,
            max_bytes,
        })
    }

    /// GETs `url` and reads its JSON.
    pub(crate) async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, FetchError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(url)
            .header(ACCEPT, "application/json")
            .body(Full::default())
            .map_err(|e| FetchError::Unreachable(e.to_string()))?;
        self.json(request).await
    }

    /// POSTs `form` (already encoded) to `url`, with HTTP Basic credentials
    /// if given, and reads the JSON answer.
    pub(crate) async fn post_form<T: DeserializeOwned>(
        &self,
        url: &str,
        form: String,
        basic: Option<&str>,
    ) -> Result<T, FetchError> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url)
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(credentials) = basic {
            request = request.header(AUTHORIZATION, credentials);
        }
        let request = request
            .body(Full::new(Bytes::from(form)))
            .map_err(|e| FetchError::Unreachable(e.to_string()))?;
        self.json(request).await
    }

    async fn json<T: DeserializeOwned>(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<T, FetchError> {
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| FetchError::Unreachable(error_chain(&e)))?;
            if response.status() != StatusCode::OK {
                return Err(FetchError::Status(response.status()));
            }
            let body = Limited::new(response.into_body(), self.max_bytes)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        FetchError::TooLarge
                    } else {
                        FetchError::Unreachable(e.to_string())
                    }
                })?
                .to_bytes();
            serde_json::from_slice(&body).map_err(|e| FetchError::Json(e.to_string()))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or(Err(FetchError::Timeout))
    }
}

/// An error and its sources, on one line (hyper-util's client error says
/// little by itself).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

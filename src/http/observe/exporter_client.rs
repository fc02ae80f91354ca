//! The OTLP exporters' HTTP client (feature `otel`): hyper's, the one the
//! layer is built on, so that the export adds no HTTP stack (no reqwest).
//! The exporters are tasks on the runtime the export was installed from;
//! a collector that is slow or down holds its exporter (within the export
//! timeout), never a request.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;

/// The largest answer a collector's export response may be (they are a
/// few bytes: a partial success's message at most).
const RESPONSE_BYTES: usize = 1024 * 1024;

/// Why an export failed.
type HttpError = Box<dyn std::error::Error + Send + Sync>;

/// Sends an export over plain HTTP on a tokio runtime.
#[derive(Debug, Clone)]
pub(crate) struct ExporterClient {
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl ExporterClient {
    /// A client whose exports each take at most `timeout`.
    pub(crate) fn new(timeout: Duration) -> ExporterClient {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(timeout));
        connector.set_nodelay(true);
        ExporterClient {
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeout,
        }
    }

    /// POSTs an OTLP/HTTP protobuf export of `body` to `url` with
    /// `headers`, within the timeout; whether the receiver took it (2xx).
    pub(crate) async fn export(
        &self,
        url: &http::Uri,
        headers: &http::HeaderMap,
        body: Bytes,
    ) -> Result<(), HttpError> {
        let mut request = Request::post(url.clone())
            .header(http::header::CONTENT_TYPE, "application/x-protobuf")
            .body(body)?;
        for (name, value) in headers {
            request.headers_mut().append(name, value.clone());
        }
        let response = Self::send(self.client.clone(), request, self.timeout).await?;
        if !response.status().is_success() {
            return Err(format!("the receiver answered {}", response.status()).into());
        }
        Ok(())
    }

    async fn send(
        client: Client<HttpConnector, Full<Bytes>>,
        request: Request<Bytes>,
        timeout: Duration,
    ) -> Result<Response<Bytes>, HttpError> {
        let exchange = async {
            let response = client.request(request.map(Full::new)).await?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| -> HttpError { e })?
                .to_bytes();
            Ok::<_, HttpError>(Response::from_parts(parts, body))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| -> HttpError { "the OTLP export timed out".into() })?
    }
}

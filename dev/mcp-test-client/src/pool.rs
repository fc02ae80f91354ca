//! The HTTP client under every [`Client`](crate::Client): hyper's pooled
//! HTTP/1.1 client on tokio.

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;

/// hyper's pooled HTTP/1.1 client, as every [`Client`](crate::Client) uses
/// it. Clones share the pool.
pub type Http = HyperClient<HttpConnector, Full<Bytes>>;

/// A new HTTP client with hyper's default pool.
pub fn http() -> Http {
    http_builder().build_http()
}

/// hyper-util's client builder on tokio, for a pool of other settings
/// (idle timeout, idle connections per host); finish it with
/// `build_http()`.
pub fn http_builder() -> hyper_util::client::legacy::Builder {
    HyperClient::builder(TokioExecutor::new())
}

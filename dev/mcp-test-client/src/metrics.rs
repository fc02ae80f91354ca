//! Plain `GET`s beside the MCP endpoint (metrics, health probes, admin
//! endpoints), and the Prometheus text of `/metrics`.

use crate::error::Error;
use crate::pool::Http;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use std::collections::HashMap;

/// `METHOD url` with an empty body, read whole: the status and the body as
/// text.
pub async fn fetch_text(
    http: &Http,
    method: Method,
    url: &str,
) -> Result<(StatusCode, String), Error> {
    let request = Request::builder()
        .method(method)
        .uri(url)
        .body(Full::new(Bytes::new()))
        .map_err(|e| Error::Transport(e.to_string()))?;
    let response = http.request(request).await.map_err(Error::from_request)?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(Error::transport)?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The samples of Prometheus text: each sample's name with its labels
/// (`name{label="value"}`, as written) mapped to its value. Comments and
/// lines without a number are left out.
pub fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter_map(|(name, value)| Some((name.to_string(), value.parse().ok()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn samples() {
        let text = "# TYPE a gauge\na 3\nb{reason=\"deleted\"} 2\n\nc x\n";
        let samples = super::samples(text);
        assert_eq!(samples.len(), 2);
        assert_eq!(samples["a"], 3.0);
        assert_eq!(samples["b{reason=\"deleted\"}"], 2.0);
    }
}

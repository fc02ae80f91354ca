//! The OpenTelemetry SDK's standard variables for the OTLP export
//! (feature `otel`), read as the SDKs read them: where a signal goes
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `..._METRICS_ENDPOINT` as it
//! is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` or
//! `/v1/metrics` added), the headers every export carries
//! (`OTEL_EXPORTER_OTLP_HEADERS`, then `..._TRACES_HEADERS` or
//! `..._METRICS_HEADERS` over them: `key=value` pairs, comma-separated,
//! each value percent-decoded), the batch's schedule
//! (`OTEL_BSP_SCHEDULE_DELAY` in milliseconds, default 5000;
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, default 512) and the metrics'
//! (`OTEL_METRIC_EXPORT_INTERVAL` in milliseconds, default 60000). A variable that is not
//! set, or empty, is not there; a number that does not parse is its
//! default, as the SDKs have it; an endpoint or a header that cannot be
//! used is an error at install.

use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Uri};
use std::time::Duration;

/// What is exported: spans, or metrics.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OtlpSignal {
    Traces,
    Metrics,
}

impl OtlpSignal {
    fn path(self) -> &'static str {
        match self {
            OtlpSignal::Traces => "/v1/traces",
            OtlpSignal::Metrics => "/v1/metrics",
        }
    }

    fn endpoint_variable(self) -> &'static str {
        match self {
            OtlpSignal::Traces => "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            OtlpSignal::Metrics => "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        }
    }

    fn headers_variable(self) -> &'static str {
        match self {
            OtlpSignal::Traces => "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
            OtlpSignal::Metrics => "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
        }
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The signal's URL: `base` (the settings' receiver) with the signal's
/// path, else the variables', else `http://localhost:4318` with it; plain
/// HTTP only.
pub(crate) fn url(base: Option<&str>, signal: OtlpSignal) -> Result<Uri, String> {
    let with_path = |base: &str| format!("{}{}", base.trim().trim_end_matches('/'), signal.path());
    // The URL, and where it came from (for the error that names it).
    let (url, from) = match base {
        Some(base) => (with_path(base), "the endpoint"),
        None => match var(signal.endpoint_variable()) {
            Some(url) => (url.trim().to_owned(), signal.endpoint_variable()),
            None => match var("OTEL_EXPORTER_OTLP_ENDPOINT") {
                Some(base) => (with_path(&base), "OTEL_EXPORTER_OTLP_ENDPOINT"),
                None => (with_path("http://localhost:4318"), "the default endpoint"),
            },
        },
    };
    let uri: Uri = url
        .parse()
        .map_err(|e| format!("{from}: {url:?} is not a URL: {e}"))?;
    match (uri.scheme_str(), uri.authority()) {
        (Some("http"), Some(_)) => Ok(uri),
        _ => Err(format!(
            "{from}: {url:?} is not a plain http:// URL (put a collector beside the server \
             to reach a TLS endpoint)"
        )),
    }
}

/// The headers of every export of `signal`.
pub(crate) fn headers(signal: OtlpSignal) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for name in ["OTEL_EXPORTER_OTLP_HEADERS", signal.headers_variable()] {
        if let Some(list) = var(name) {
            parse_headers(&list, &mut headers).map_err(|e| format!("{name}: {e}"))?;
        }
    }
    Ok(headers)
}

/// Parses `key=value,key=value` into `into`, a later key replacing an
/// earlier one.
fn parse_headers(list: &str, into: &mut HeaderMap) -> Result<(), String> {
    for pair in list.split(',').filter(|p| !p.trim().is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not key=value"))?;
        let key = key.trim();
        let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
        let name = HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| format!("{key:?} is not a header name"))?;
        let value = HeaderValue::from_str(&value)
            .map_err(|_| format!("the value of {key:?} is not a header value"))?;
        into.insert(name, value);
    }
    Ok(())
}

/// How long a span waits for its export at most.
pub(crate) fn schedule_delay() -> Duration {
    let millis = var("OTEL_BSP_SCHEDULE_DELAY").and_then(|v| v.trim().parse().ok());
    Duration::from_millis(millis.unwrap_or(5000))
}

/// How often the metrics are exported.
pub(crate) fn metric_interval() -> Duration {
    let millis = var("OTEL_METRIC_EXPORT_INTERVAL")
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0);
    Duration::from_millis(millis.unwrap_or(60_000))
}

/// How many spans an export carries at most.
pub(crate) fn batch_size() -> usize {
    var("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(512)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_as_the_sdks_read_them() {
        let mut headers = HeaderMap::new();
        parse_headers(
            "api-key=a%20b, x-tenant = one ,x-tenant=two,,",
            &mut headers,
        )
        .unwrap();
        assert_eq!(headers["api-key"], "a b");
        assert_eq!(headers["x-tenant"], "two");
        assert!(parse_headers("novalue", &mut headers).is_err());
        assert!(parse_headers("bad key=v", &mut headers).is_err());
        assert!(parse_headers("k=line%0Abreak", &mut headers).is_err());
    }

    #[test]
    fn a_receivers_base_gets_the_signals_path() {
        assert_eq!(
            url(Some("http://collector:4318/"), OtlpSignal::Traces).unwrap(),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            url(Some("http://collector:4318"), OtlpSignal::Metrics).unwrap(),
            "http://collector:4318/v1/metrics"
        );
        assert!(url(Some("https://collector:4318"), OtlpSignal::Traces).is_err());
        assert!(url(Some("collector:4318"), OtlpSignal::Metrics).is_err());
    }
}

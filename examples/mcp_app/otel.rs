//! The example servers' logs and traces: the `fmt` log on stderr
//! (`RUST_LOG`, default `info`), and with `--otlp-endpoint URL` or the
//! standard `OTEL_EXPORTER_OTLP_ENDPOINT` (feature `otel`) each request's
//! SERVER span and the duration histograms exported over OTLP/HTTP
//! (README, "Observe").

use clap::Args;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The flags of the export.
#[derive(Args, Debug, Clone, Default)]
pub struct OtelFlags {
    /// Export spans and metrics over OTLP/HTTP to this receiver's base
    /// URL (an OpenTelemetry collector, Jaeger, Tempo:
    /// http://localhost:4318); without it, OTEL_EXPORTER_OTLP_ENDPOINT
    /// (or ..._TRACES_ENDPOINT) turns the export on. OTEL_SERVICE_NAME and
    /// OTEL_RESOURCE_ATTRIBUTES name the service (feature `otel`).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

impl OtelFlags {
    /// Whether the flags or the environment ask for the export.
    fn wanted(&self) -> bool {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        self.otlp_endpoint.is_some()
            || set("OTEL_EXPORTER_OTLP_ENDPOINT")
            || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    }
}

/// What was installed, to flush at the end.
pub struct Telemetry {
    #[cfg(feature = "otel")]
    export: Option<std::sync::Arc<sessionreg::http::otlp::OtlpExport>>,
}

impl Telemetry {
    /// Sends what the export holds (at shutdown).
    pub async fn shutdown(self) {
        #[cfg(feature = "otel")]
        if let Some(export) = self.export {
            let _ = tokio::task::spawn_blocking(move || export.shutdown()).await;
        }
    }
}

/// The log filter: `RUST_LOG`, else `info`; the requests' spans
/// (`sessionreg::http::observe`) are left out of log lines unless
/// `RUST_LOG` names them, so that a busy server does not format a span per
/// request for its log.
fn log_filter() -> EnvFilter {
    EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sessionreg::http::observe=warn"))
}

/// Installs the log and, when asked for, the export (before the manager
/// is built, so that its first spans are exported too). Exits 2 when
/// `--otlp-endpoint` is given without feature `otel`, or the export cannot
/// be set up; without the feature, the variables alone are warned of.
pub fn init(flags: &OtelFlags) -> Telemetry {
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(log_filter());
    if !flags.wanted() {
        tracing_subscriber::registry().with(log).init();
        return Telemetry {
            #[cfg(feature = "otel")]
            export: None,
        };
    }
    #[cfg(feature = "otel")]
    {
        use sessionreg::http::otlp::{OtlpExport, OtlpSettings};
        let settings = OtlpSettings {
            endpoint: flags.otlp_endpoint.clone(),
            service_name: "mcp_server".to_owned(),
            ..OtlpSettings::default()
        };
        let export = match OtlpExport::install(settings) {
            Ok(export) => std::sync::Arc::new(export),
            Err(error) => {
                eprintln!("error: {error}");
                std::process::exit(2);
            }
        };
        let spans = export
            .layer()
            .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
        tracing_subscriber::registry().with(log).with(spans).init();
        Telemetry {
            export: Some(export),
        }
    }
    #[cfg(not(feature = "otel"))]
    {
        // The flag is this command's own: refused. The variables may be
        // set for a whole host or pod: said, and the node serves on.
        if flags.otlp_endpoint.is_some() {
            eprintln!("error: --otlp-endpoint needs feature otel");
            std::process::exit(2);
        }
        tracing_subscriber::registry().with(log).init();
        tracing::warn!("OTEL_EXPORTER_OTLP_ENDPOINT is set, but this build has no feature otel: nothing is exported");
        Telemetry {}
    }
}

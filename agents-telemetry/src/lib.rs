#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

use agents_runtime::telemetry::METRICS_TARGET;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, SpanExporter};
use std::sync::Arc;
use std::time::Duration;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The service name when `OTEL_SERVICE_NAME` is not set.
pub const DEFAULT_SERVICE_NAME: &str = "agents";

/// Why telemetry could not be turned on. Nothing was installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// An `OTEL_*` variable holds a value this build cannot use.
    #[error("{var}={value:?} is not supported: {why}")]
    Unsupported {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What to set instead.
        why: &'static str,
    },
    /// The OTLP exporter could not be built from the configuration (an endpoint that is not a
    /// URL, for example).
    #[error("the OTLP exporter could not be built: {0}; check the OTEL_EXPORTER_OTLP_* variables")]
    Exporter(String),
    /// The process already has a global `tracing` subscriber.
    #[error(
        "a global tracing subscriber is already installed; add `Telemetry::layer()` to that subscriber instead of calling `init_from_env`"
    )]
    SubscriberAlreadySet,
}

/// The OpenTelemetry pipelines (traces and metrics) behind the runtime's spans and metric
/// events. Dropping it flushes and shuts them down (or call [`Telemetry::shutdown`]).
pub struct Telemetry {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Pipelines that export spans to `spans` (batched) and metrics to `metrics` (on the
    /// `OTEL_METRIC_EXPORT_INTERVAL`, 60 s by default, and when flushed), under the service
    /// name `service_name`. [`from_env`] builds the OTLP exporters and calls this; tests pass
    /// in-memory exporters.
    pub fn from_exporters(
        service_name: &str,
        spans: impl SpanExporter + 'static,
        metrics: impl PushMetricExporter,
    ) -> Telemetry {
        Telemetry::build(service_name, Some(spans), Some(metrics))
    }

    /// The pipelines; a signal without an exporter is recorded nowhere.
    fn build(
        service_name: &str,
        spans: Option<impl SpanExporter + 'static>,
        metrics: Option<impl PushMetricExporter>,
    ) -> Telemetry {
        let resource = Resource::builder_empty().with_service_name(service_name.to_owned()).build();
        let mut tracer = SdkTracerProvider::builder().with_resource(resource.clone());
        if let Some(spans) = spans {
            tracer = tracer.with_span_processor(BatchSpanProcessor::builder(spans).build());
        }
        let mut meter = SdkMeterProvider::builder().with_resource(resource);
        if let Some(metrics) = metrics {
            meter = meter.with_reader(PeriodicReader::builder(metrics).build());
        }
        Telemetry { tracer: tracer.build(), meter: meter.build() }
    }

    /// The `tracing` layer that turns spans (`INFO` and above) into OpenTelemetry spans and
    /// the runtime's metric events into OpenTelemetry metrics, for an application that builds
    /// its own subscriber:
    ///
    /// ```no_run
    /// use tracing_subscriber::layer::SubscriberExt as _;
    /// use tracing_subscriber::util::SubscriberInitExt as _;
    ///
    /// let telemetry = agents_telemetry::from_env()?;
    /// tracing_subscriber::registry()
    ///     .with(telemetry.as_ref().map(|t| t.layer()))
    ///     .with(tracing_subscriber::fmt::layer())
    ///     .init();
    /// # Ok::<(), agents_telemetry::TelemetryError>(())
    /// ```
    ///
    /// The filters are the layer's own, so another layer's (a `fmt` layer at `INFO`, say)
    /// neither hides the metric events (`DEBUG`) from it nor sees them.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let spans = tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer("agents"))
            .with_tracked_inactivity(false)
            .with_location(false)
            .with_filter(LevelFilter::INFO);
        let metrics = tracing_opentelemetry::MetricsLayer::new(self.meter.clone())
            .with_filter(Targets::new().with_target(METRICS_TARGET, LevelFilter::DEBUG));
        spans.and_then(metrics)
    }

    /// Exports what is buffered now (spans and metrics), waiting for the exporters.
    pub fn force_flush(&self) -> Result<(), TelemetryError> {
        let spans = self.tracer.force_flush().map_err(|e| TelemetryError::Exporter(e.to_string()));
        let metrics = self.meter.force_flush().map_err(|e| TelemetryError::Exporter(e.to_string()));
        spans.and(metrics)
    }

    /// Flushes and stops both pipelines.
    pub fn shutdown(self) -> Result<(), TelemetryError> {
        // `Drop` does the same; this form reports a failure.
        let spans = self.tracer.shutdown().map_err(|e| TelemetryError::Exporter(e.to_string()));
        let metrics = self.meter.shutdown().map_err(|e| TelemetryError::Exporter(e.to_string()));
        spans.and(metrics)
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // Shutting down twice (after `shutdown`) only reports that it already was.
        let _ = self.tracer.shutdown();
        let _ = self.meter.shutdown();
    }
}

/// OTLP over HTTP (protobuf) from the process environment; `None` (and nothing built) when
/// no `OTEL_EXPORTER_OTLP_*ENDPOINT` variable is set or `OTEL_SDK_DISABLED=true`. See
/// [`from_vars`] for the variables read.
pub fn from_env() -> Result<Option<Telemetry>, TelemetryError> {
    from_vars(|name| std::env::var(name).ok())
}

/// OTLP over HTTP (protobuf), configured by the standard variables as `lookup` answers them:
///
/// - `OTEL_SDK_DISABLED=true`: nothing is built.
/// - `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base URL; `/v1/traces` and `/v1/metrics`
///   are appended) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `..._METRICS_ENDPOINT` (used as
///   they are). Without any of them nothing is built: telemetry is off.
/// - `OTEL_EXPORTER_OTLP_PROTOCOL` (and the per-signal forms): only `http/protobuf` (the
///   default); `grpc` and `http/json` are refused with an error saying so.
/// - `OTEL_SERVICE_NAME`: the `service.name` resource attribute (default `agents`).
///
/// The exporter itself reads `OTEL_EXPORTER_OTLP_HEADERS`, `..._TIMEOUT` and
/// `..._COMPRESSION` from the process environment, and the SDK reads
/// `OTEL_METRIC_EXPORT_INTERVAL` and `OTEL_BSP_*`.
pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Telemetry>, TelemetryError> {
    let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let base = var("OTEL_EXPORTER_OTLP_ENDPOINT");
    let endpoint = |signal_var: &str, path: &str| {
        var(signal_var).or_else(|| base.as_ref().map(|b| format!("{}{path}", b.trim_end_matches('/'))))
    };
    let traces = endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces");
    let metrics = endpoint("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics");
    if traces.is_none() && metrics.is_none() {
        return Ok(None);
    }
    for name in
        ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"]
    {
        if let Some(value) = var(name)
            && value.trim() != "http/protobuf"
        {
            return Err(TelemetryError::Unsupported {
                var: name,
                value,
                why: "this build exports OTLP over HTTP with protobuf bodies only; set it to `http/protobuf` or unset it",
            });
        }
    }
    let service = var("OTEL_SERVICE_NAME").unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
    let timeout = match var("OTEL_EXPORTER_OTLP_TIMEOUT") {
        None => DEFAULT_EXPORT_TIMEOUT,
        Some(ms) => Duration::from_millis(ms.trim().parse().map_err(|_| TelemetryError::Unsupported {
            var: "OTEL_EXPORTER_OTLP_TIMEOUT",
            value: ms.clone(),
            why: "it is a whole number of milliseconds, such as `10000`",
        })?),
    };
    let client = http_client(timeout)?;
    let built = |e: opentelemetry_otlp::ExporterBuildError| TelemetryError::Exporter(e.to_string());
    let spans = match traces {
        Some(url) => Some(
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(url)
                .with_timeout(timeout)
                .with_http_client(client.clone())
                .build()
                .map_err(built)?,
        ),
        None => None,
    };
    let metrics = match metrics {
        Some(url) => Some(
            opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(url)
                .with_timeout(timeout)
                .with_http_client(client.clone())
                .build()
                .map_err(built)?,
        ),
        None => None,
    };
    Ok(Some(Telemetry::build(&service, spans, metrics)))
}
/// How long one export may take when `OTEL_EXPORTER_OTLP_TIMEOUT` does not say (the
/// specification's default).
pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The exporters' HTTP client: rustls with the `ring` provider and the platform's verifier,
/// no redirects. Built (and later used) on threads of its own: a blocking client must not be
/// built inside an async runtime's worker.
fn http_client(timeout: Duration) -> Result<reqwest::blocking::Client, TelemetryError> {
    let build = move || {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
            .map_err(|e| format!("the system's TLS certificate verifier could not be loaded: {e}"))?;
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS could not be configured: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        reqwest::blocking::Client::builder()
            .tls_backend_preconfigured(tls)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()
            .map_err(|e| format!("the HTTP client could not be built: {e}"))
    };
    std::thread::spawn(build)
        .join()
        .map_err(|_| TelemetryError::Exporter("building the HTTP client panicked".into()))?
        .map_err(TelemetryError::Exporter)
}

/// The one call an application (or an example, or `agents serve`) makes at start: when the
/// `OTEL_*` variables ask for export ([`from_env`]), installs a global `tracing` subscriber
/// with the OpenTelemetry layer ([`Telemetry::layer`]) and a `fmt` layer filtered by
/// `RUST_LOG` (default `info`), and returns the pipelines to keep alive until exit (dropping
/// them flushes). When they do not, it installs nothing and returns `Ok(None)`.
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), agents_telemetry::TelemetryError> {
/// let _telemetry = agents_telemetry::init_from_env()?;
/// // ... start the runtime and serve ...
/// # Ok(())
/// # }
/// ```
pub fn init_from_env() -> Result<Option<Telemetry>, TelemetryError> {
    let Some(telemetry) = from_env()? else { return Ok(None) };
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(rust_log());
    tracing_subscriber::registry()
        .with(telemetry.layer())
        .with(fmt)
        .try_init()
        .map_err(|_| TelemetryError::SubscriberAlreadySet)?;
    Ok(Some(telemetry))
}

/// `RUST_LOG` as a `target=level` list (`info` when unset or unreadable).
fn rust_log() -> Targets {
    std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO))
}

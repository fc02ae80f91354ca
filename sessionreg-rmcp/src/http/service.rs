//! [`StreamableHttpService`]: an rmcp handler's endpoint as a tower
//! service, mountable where rmcp's is; [`Config`], what rmcp's config says
//! that applies here.

use super::app::{Factory, HandlerApp};
use rmcp::ServerHandler;
use sessionreg::http::{Body, Builder, ConfigError, Publisher, SendBody, SessionManager};
use std::fmt;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

/// The settings most servers change; everything else (bounds, shares,
/// bearer or OAuth authentication, the bus, the node id, keep-alives...)
/// is the layer's [`Builder`], from [`StreamableHttpService::builder`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Legacy sessions with nothing in flight for this long end (default:
    /// 5 minutes, rmcp's `keep_alive`); `None`: they end only by `DELETE`
    /// or shutdown.
    pub idle_timeout: Option<Duration>,
    /// Hosts let in besides the loopback names (default: none: loopback
    /// only, as rmcp's default allows `localhost`, `127.0.0.1` and `::1`).
    pub allowed_hosts: Vec<String>,
    /// Origins let in (default: none: a request with a foreign `Origin`
    /// gets 403).
    pub allowed_origins: Vec<String>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            idle_timeout: Some(Duration::from_secs(300)),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
        }
    }
}

impl Config {
    /// `config` applied to `builder`.
    fn apply<S: ServerHandler>(self, builder: Builder<HandlerApp<S>>) -> Builder<HandlerApp<S>> {
        let mut builder = builder.idle_timeout(self.idle_timeout);
        for host in self.allowed_hosts {
            builder = builder.allow_host(host);
        }
        for origin in self.allowed_origins {
            builder = builder.allow_origin(origin);
        }
        builder
    }
}

/// An rmcp [`ServerHandler`]'s MCP endpoint, served by
/// [`sessionreg::http`]: a `tower_service::Service<http::Request<B>>`, cheap
/// to clone, mountable in axum as rmcp's `StreamableHttpService` is
/// (`Router::new().nest_service("/mcp", service)`) or on hyper.
pub struct StreamableHttpService<S: ServerHandler> {
    manager: SessionManager<HandlerApp<S>>,
}

impl<S: ServerHandler> StreamableHttpService<S> {
    /// Serves the handlers `factory` makes (one per legacy session, one
    /// per 2026-07-28 request), with `config`.
    ///
    /// # Panics
    ///
    /// If the factory fails when first called (it is called once, for the
    /// handler that describes the server), or `config` is out of range
    /// (an idle timeout of zero): [`try_new`](Self::try_new) says so instead.
    pub fn new<F>(factory: F, config: Config) -> StreamableHttpService<S>
    where
        F: Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
    {
        match StreamableHttpService::try_new(factory, config) {
            Ok(service) => service,
            Err(error) => panic!("StreamableHttpService::new: {error}"),
        }
    }

    /// As [`new`](Self::new), with what fails as an error.
    pub fn try_new<F>(factory: F, config: Config) -> Result<StreamableHttpService<S>, ServiceError>
    where
        F: Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
    {
        let builder = StreamableHttpService::builder(factory).map_err(ServiceError::Factory)?;
        let manager = config
            .apply(builder)
            .build()
            .map_err(ServiceError::Config)?;
        Ok(StreamableHttpService { manager })
    }

    /// The layer's builder over the handlers `factory` makes, for
    /// everything [`Config`] does not say; build it and make the service
    /// with [`From`]. Calls the factory once (the handler that describes
    /// the server) and fails as it does. Its publisher is set: what the
    /// handlers publish goes through it (replacing it with
    /// [`Builder::publisher`] would leave their changes unheard).
    pub fn builder<F>(factory: F) -> Result<Builder<HandlerApp<S>>, std::io::Error>
    where
        F: Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
    {
        let factory: Box<Factory<S>> = Box::new(factory);
        let publisher = Publisher::new();
        let app = HandlerApp::new(factory, publisher.clone())?;
        // A handler whose `supported_protocol_versions` leaves 2026-07-28
        // out is served the legacy era only, as rmcp's service would.
        let modern = app.serves_modern();
        Ok(SessionManager::builder(app)
            .publisher(publisher)
            .serve_modern(modern))
    }

    /// The manager that serves the endpoint: its metrics, stats, drain and
    /// graceful shutdown, its [`Publisher`](sessionreg::http::Publisher).
    pub fn manager(&self) -> &SessionManager<HandlerApp<S>> {
        &self.manager
    }
}

impl<S: ServerHandler> From<SessionManager<HandlerApp<S>>> for StreamableHttpService<S> {
    fn from(manager: SessionManager<HandlerApp<S>>) -> StreamableHttpService<S> {
        StreamableHttpService { manager }
    }
}

impl<S: ServerHandler> Clone for StreamableHttpService<S> {
    fn clone(&self) -> Self {
        StreamableHttpService {
            manager: self.manager.clone(),
        }
    }
}

impl<S: ServerHandler> fmt::Debug for StreamableHttpService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttpService")
            .field("manager", &self.manager)
            .finish()
    }
}

impl<S: ServerHandler, B: SendBody> tower_service::Service<http::Request<B>>
    for StreamableHttpService<S>
{
    type Response = http::Response<Body>;
    type Error = std::convert::Infallible;
    type Future = sessionreg::http::ResponseFuture;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        tower_service::Service::<http::Request<B>>::poll_ready(&mut self.manager, cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        tower_service::Service::call(&mut self.manager, request)
    }
}

/// Why [`StreamableHttpService::try_new`] made no service.
#[derive(Debug)]
pub enum ServiceError {
    /// The handler factory failed.
    Factory(std::io::Error),
    /// A setting is out of range.
    Config(ConfigError),
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceError::Factory(error) => write!(f, "the handler factory failed: {error}"),
            ServiceError::Config(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ServiceError {}

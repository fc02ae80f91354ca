//! The HTTP surface both rmcp examples serve: rmcp's MCP service at `/mcp`
//! behind the [`StatusLayer`], and `GET /metrics`. Included by each
//! example's `app.rs` with `#[path = "../common/endpoint.rs"] mod endpoint;`
//! (so the tests that include an `app.rs` get it too).

use axum::routing::get;
use axum::Router;
use sessionreg_rmcp::StatusLayer;

/// `/mcp` served by `mcp` and `GET /metrics` by whatever `metrics`
/// renders (Prometheus text), behind the [`StatusLayer`].
pub fn endpoint<S>(mcp: S, metrics: impl Fn() -> String + Clone + Send + Sync + 'static) -> Router
where
    S: tower_service::Service<axum::extract::Request, Error = std::convert::Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Response: axum::response::IntoResponse,
    S::Future: Send + 'static,
{
    Router::new()
        .nest_service("/mcp", mcp)
        .route(
            "/metrics",
            get(move || {
                let text = metrics();
                async move {
                    (
                        [(
                            http::header::CONTENT_TYPE,
                            sessionreg::metrics::CONTENT_TYPE,
                        )],
                        text,
                    )
                }
            }),
        )
        .layer(StatusLayer::new())
}

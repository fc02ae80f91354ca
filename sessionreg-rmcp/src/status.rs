//! [`StatusLayer`]: the HTTP statuses rmcp's tower service cannot give for a
//! session manager.
//!
//! rmcp's `StreamableHttpService` turns every manager error into a 500 and
//! answers a `DELETE` with 202 whenever the manager does not fail. The
//! manager cannot reach the response, so it leaves a note instead: the layer
//! opens a request-scoped slot (a tokio task-local) around the inner
//! service's future, the manager writes why it refused into it (rmcp 3.11
//! calls the manager inline in that future), and the layer rewrites the
//! response the note explains. Without the layer (or if rmcp ever called the
//! manager from another task) no slot is open, nothing is written, and
//! rmcp's own answers stand.

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{Response, StatusCode};
use http_body_util::{Either, Full};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_layer::Layer;
use tower_service::Service;

/// Why the manager refused a request, noted for the [`StatusLayer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `create_session` at capacity.
    Full,
    /// `create_session` while shutting down.
    ShuttingDown,
    /// The request named no live session.
    Gone,
}

tokio::task_local! {
    static REFUSAL: Cell<Option<Refusal>>;
}

/// Notes `refusal` for the [`StatusLayer`] around the current request;
/// returns whether one is listening (otherwise rmcp's answer stands and
/// the caller must fail the way rmcp expects).
pub(crate) fn report(refusal: Refusal) -> bool {
    REFUSAL.try_with(|slot| slot.set(Some(refusal))).is_ok()
}

/// Withdraws a note left earlier in the current request: rmcp restored the
/// session that `has_session` did not find, and the request goes on.
pub(crate) fn withdraw() {
    let _ = REFUSAL.try_with(|slot| slot.set(None));
}

/// JSON-RPC code of a transport-level refusal (as `sessionreg::http` uses).
const SERVER_ERROR: i64 = -32000;
/// JSON-RPC code for a session id that names no live session (as
/// `sessionreg::http` uses).
const SESSION_NOT_FOUND: i64 = -32001;

/// A tower [`Layer`] for rmcp's `StreamableHttpService` that answers what a
/// [`RegistrySessionManager`](crate::RegistrySessionManager) refused with the
/// status the MCP transport rules ask for, where rmcp would say 500 or 202:
///
/// | the manager found | rmcp alone | behind this layer |
/// |---|---|---|
/// | the registry at capacity on `initialize`, or on a restore from rmcp's session store | 500 | 503, `Retry-After` |
/// | the manager shutting down on `initialize` | 500 | 503 |
/// | a `DELETE` of an unknown or ended id | 202 | 404 |
/// | a session that ended under the request (a `DELETE` or the idle timeout between rmcp's check and its use) | 500 | 404 |
/// | an unknown id on `POST`/`GET` | 404, plain text | 404, JSON-RPC body |
///
/// Every rewritten answer has a JSON-RPC error body (`-32000` for 503,
/// `-32001` for 404). Everything else passes through untouched, so the layer
/// may wrap a whole router (it only ever rewrites a request the manager saw).
/// One caveat: rmcp logs a manager error at ERROR before the layer sees it,
/// so each 503 leaves one such line (`Internal server error when create
/// session: the session registry is at capacity ...`).
///
/// ```no_run
/// # use std::sync::Arc;
/// use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
/// use sessionreg_rmcp::{RegistrySessionManager, StatusLayer};
/// use tower_layer::Layer;
/// # #[derive(Clone)] struct Server;
/// # impl rmcp::ServerHandler for Server {}
///
/// let service = StreamableHttpService::new(
///     || Ok(Server),
///     Arc::new(RegistrySessionManager::default()),
///     StreamableHttpServerConfig::default(),
/// );
/// let service = StatusLayer::new().layer(service); // mount this one
/// ```
#[derive(Clone, Copy, Debug)]
pub struct StatusLayer {
    retry_after: u64,
}

impl Default for StatusLayer {
    fn default() -> Self {
        StatusLayer::new()
    }
}

impl StatusLayer {
    /// A layer whose 503s say `Retry-After: 1`.
    pub fn new() -> StatusLayer {
        StatusLayer { retry_after: 1 }
    }

    /// The `Retry-After` of a 503 at capacity (whole seconds, at least 1).
    pub fn retry_after(mut self, after: Duration) -> StatusLayer {
        self.retry_after = after.as_secs().max(1);
        self
    }
}

impl<S> Layer<S> for StatusLayer {
    type Service = StatusService<S>;

    fn layer(&self, inner: S) -> StatusService<S> {
        StatusService {
            inner,
            retry_after: self.retry_after,
        }
    }
}

/// The service [`StatusLayer`] makes.
#[derive(Clone, Debug)]
pub struct StatusService<S> {
    inner: S,
    retry_after: u64,
}

/// A response of the inner service, or one this layer wrote.
pub type StatusBody<B> = Either<B, Full<Bytes>>;

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for StatusService<S>
where
    S: Service<http::Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<StatusBody<ResBody>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let retry_after = self.retry_after;
        let answer = self.inner.call(request);
        Box::pin(REFUSAL.scope(Cell::new(None), async move {
            let response = answer.await?;
            let refusal = REFUSAL.with(Cell::take);
            Ok(rewrite(response, refusal, retry_after))
        }))
    }
}

/// The answer for `response`, given what the manager noted while making it.
fn rewrite<B>(
    response: Response<B>,
    refusal: Option<Refusal>,
    retry_after: u64,
) -> Response<StatusBody<B>> {
    let failed = response.status() == StatusCode::INTERNAL_SERVER_ERROR;
    match refusal {
        Some(Refusal::Gone) => rpc_error(
            StatusCode::NOT_FOUND,
            SESSION_NOT_FOUND,
            "Session not found",
        ),
        Some(Refusal::Full) if failed => {
            let mut response = rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                SERVER_ERROR,
                "the server is at its session capacity; retry later",
            );
            response
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(retry_after));
            response
        }
        Some(Refusal::ShuttingDown) if failed => rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            SERVER_ERROR,
            "the server is shutting down",
        ),
        _ => response.map(Either::Left),
    }
}

fn rpc_error<B>(status: StatusCode, code: i64, message: &str) -> Response<StatusBody<B>> {
    // `message` is one of the fixed texts above: nothing to escape.
    let body = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{{\"code\":{code},\"message\":\"{message}\"}}}}"
    );
    let mut response = Response::new(Either::Right(Full::new(Bytes::from(body))));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_note_is_seen_only_inside_the_scope() {
        assert!(!report(Refusal::Gone), "no layer, nobody listening");
        let seen = REFUSAL
            .scope(Cell::new(None), async {
                tokio::task::yield_now().await;
                assert!(report(Refusal::Full));
                REFUSAL.with(Cell::take)
            })
            .await;
        assert_eq!(seen, Some(Refusal::Full));
    }

    #[test]
    fn only_the_noted_failures_are_rewritten() {
        let plain = |status: StatusCode| {
            let mut r = Response::new(());
            *r.status_mut() = status;
            r
        };
        let status = |r: Response<StatusBody<()>>| r.status();
        let ise = StatusCode::INTERNAL_SERVER_ERROR;
        let full = rewrite(plain(ise), Some(Refusal::Full), 7);
        assert_eq!(full.headers()[RETRY_AFTER], "7");
        assert_eq!(status(full), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            status(rewrite(plain(ise), Some(Refusal::ShuttingDown), 1)),
            StatusCode::SERVICE_UNAVAILABLE
        );
        assert_eq!(
            status(rewrite(plain(StatusCode::ACCEPTED), Some(Refusal::Gone), 1)),
            StatusCode::NOT_FOUND
        );
        // A 500 nobody explained, and a note that does not explain the
        // answer, pass through.
        assert_eq!(status(rewrite(plain(ise), None, 1)), ise);
        assert_eq!(
            status(rewrite(plain(StatusCode::OK), Some(Refusal::Full), 1)),
            StatusCode::OK
        );
    }
}

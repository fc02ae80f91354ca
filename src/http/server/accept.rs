//! The accept loop ([`serve`], [`serve_with`]): its cap on open connections
//! (a semaphore), its back-off on accept errors, each connection spawned
//! with its bounds (`connection.rs`), and the graceful shutdown that ends
//! it (`stop.rs`).

use super::connection::{self, ServeMode, Watch};
use super::connections::Connections;
use super::protocol::Protocols;
use super::stop;
use crate::http::app::App;
use crate::http::endpoint::shutdown::ShutdownReport;
use crate::http::wire::body::SendBody;
use crate::http::wire::keyed_rate_limit::ClientAddr;
use crate::http::SessionManager;
use http::{Request, Response};
use hyper::body::Incoming;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;

/// The first pause after an accept error that is not about one connection
/// (out of descriptors, out of memory); it doubles while they go on.
pub(crate) const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
/// The longest pause after accept errors.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// At most one log line per this period about accept errors.
const ACCEPT_LOG_PERIOD: Duration = Duration::from_secs(10);

/// Serves `manager` on `listener` (HTTP/1.1 and HTTP/2) until `signal`
/// resolves, then shuts down gracefully, waiting at most `deadline` for
/// requests in flight; with the default [`Connections`] bounds (see
/// [`serve_with`] to set them).
///
/// `service` answers each request; pass `manager.clone()` to serve only the
/// MCP endpoint, or a router that calls [`SessionManager::handle`] for it:
/// a hyper service of any body type, such as an axum `Router` through
/// `hyper_util::service::TowerToHyperService` (see `examples/axum_server`),
/// which then gets the same connection bounds.
pub async fn serve<A, S, F, B>(
    listener: TcpListener,
    manager: SessionManager<A>,
    service: S,
    signal: impl Future<Output = ()>,
    deadline: Duration,
) -> io::Result<ShutdownReport>
where
    A: App,
    S: hyper::service::Service<
            Request<Incoming>,
            Response = Response<B>,
            Error = Infallible,
            Future = F,
        > + Clone
        + Send
        + 'static,
    F: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: SendBody,
{
    let defaults = Connections::default();
    serve_with(listener, manager, service, signal, deadline, defaults).await
}

/// [`serve`] with these connection bounds: starts the idle reaper, tells
/// the manager the address it is bound to (see
/// [`SessionManager::set_bind_address`]), and gives each connection the
/// bounds of `connections` (header and idle timeouts, HTTP/2 keep-alive
/// and streams) and the manager's stalled-write timeout
/// ([`Builder::stall_timeout`](crate::http::Builder::stall_timeout)). At most
/// [`Connections::max_connections`] are open at once; past it `serve`
/// stops accepting until one closes. An accept error that is not about one
/// connection (out of file descriptors, say) pauses the loop, 10 ms at
/// first and doubling up to 1 s while the errors go on, so it never spins.
///
/// A setting of `connections` out of its range is refused before anything
/// is served: an `InvalidInput` error whose inner error is the
/// [`ConfigError`](crate::http::ConfigError) naming it.
pub async fn serve_with<A, S, F, B>(
    listener: TcpListener,
    manager: SessionManager<A>,
    service: S,
    signal: impl Future<Output = ()>,
    deadline: Duration,
    connections: Connections,
) -> io::Result<ShutdownReport>
where
    A: App,
    S: hyper::service::Service<
            Request<Incoming>,
            Response = Response<B>,
            Error = Infallible,
            Future = F,
        > + Clone
        + Send
        + 'static,
    F: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: SendBody,
{
    connections
        .validate()
        .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error))?;
    manager.set_bind_address(listener.local_addr()?);
    manager.start_reaper();
    let hub = manager.hub();
    let protocols = Arc::new(Protocols::new(&connections));
    let watch = Watch::new(&connections, hub.config.stall_timeout);
    let max_connections = connections.max_connections.min(u32::MAX as usize);
    let slots = Arc::new(Semaphore::new(max_connections));
    let (phase, phase_rx) = watch::channel(ServeMode::Serving);
    let mut errors = AcceptErrors::default();
    // Each request's `ClientAddr`, only where a keyed rate limit may read it.
    let wants_peer = !hub.config.keyed_rate_limits.is_empty();
    tokio::pin!(signal);
    loop {
        // At the cap, wait for a connection to close before accepting: the
        // kernel's backlog holds new clients meanwhile.
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut signal => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut signal => break,
        };
        let (stream, peer) = match accepted {
            Ok((stream, peer)) => {
                errors.streak_ended();
                (stream, peer)
            }
            Err(error) if is_per_connection(&error) => continue,
            Err(error) => {
                let pause = errors.failed(&error);
                drop(slot);
                tokio::select! {
                    () = tokio::time::sleep(pause) => continue,
                    () = &mut signal => break,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection::drive(
            stream,
            service.clone(),
            Arc::clone(&protocols),
            watch,
            phase_rx.clone(),
            Arc::clone(&hub.counters),
            slot,
            wants_peer.then_some(ClientAddr(peer)),
        ));
    }
    drop(listener);
    let report = stop::finish(hub, phase, &slots, max_connections as u32, deadline).await;
    Ok(ShutdownReport {
        accept_errors: errors.total,
        ..report
    })
}

/// An accept error about one connection (it was reset before it was
/// accepted, say): the next accept goes on at once.
fn is_per_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// The accept loop's back-off and its rate-limited log.
#[derive(Default)]
struct AcceptErrors {
    total: u64,
    streak: u32,
    unlogged: u64,
    logged_at: Option<Instant>,
}

impl AcceptErrors {
    /// Counts an error; returns how long to pause.
    fn failed(&mut self, error: &io::Error) -> Duration {
        self.total += 1;
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .logged_at
            .is_none_or(|at| now.duration_since(at) >= ACCEPT_LOG_PERIOD)
        {
            tracing::warn!(%error, errors = self.unlogged, "accept failed; pausing the accept loop");
            self.logged_at = Some(now);
            self.unlogged = 0;
        }
        let pause = ACCEPT_BACKOFF_MIN
            .saturating_mul(1 << self.streak.min(16))
            .min(ACCEPT_BACKOFF_MAX);
        self.streak += 1;
        pause
    }

    fn streak_ended(&mut self) {
        self.streak = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_back_off_doubles_to_its_ceiling_and_resets() {
        let mut errors = AcceptErrors::default();
        let emfile = io::Error::from_raw_os_error(24);
        let pauses: Vec<_> = (0..10).map(|_| errors.failed(&emfile)).collect();
        assert_eq!(pauses[0], ACCEPT_BACKOFF_MIN);
        assert_eq!(pauses[1], ACCEPT_BACKOFF_MIN * 2);
        assert_eq!(*pauses.last().unwrap(), ACCEPT_BACKOFF_MAX);
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]));
        errors.streak_ended();
        assert_eq!(errors.failed(&emfile), ACCEPT_BACKOFF_MIN);
        assert_eq!(errors.total, 11);
        assert!(!is_per_connection(&emfile));
        assert!(is_per_connection(&io::Error::from(
            io::ErrorKind::ConnectionAborted
        )));
    }
}

//! The transport rmcp serves a session over: rmcp's own worker transport,
//! plus the session's end when that worker exits on its own.

use crate::entry::Entry;
use crate::state::State;
use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionWorker, LocalSessionWorkerError,
};
use rmcp::transport::{Transport, WorkerTransport};
use rmcp::RoleServer;
use sessionreg::{InFlight, Reason, Session};
use std::future::Future;
use std::sync::Weak;
use tokio_util::either::Either;

/// The transport [`RegistrySessionManager`](crate::RegistrySessionManager)
/// gives rmcp for each session: rmcp's own [`WorkerTransport`] over the
/// [`LocalSessionWorker`] it made with
/// [`create_local_session`](rmcp::transport::streamable_http_server::session::local::create_local_session),
/// with three additions:
///
/// * **The worker's exit ends the session.** rmcp serves a session until
///   its worker stops, then closes (or drops) this transport. If the
///   session is still live then, nothing else ended it: the worker failed,
///   or the server's cancellation token stopped it. The session is
///   terminated here, once, with [`Reason::Failed`] (or
///   [`Reason::Rejected`] if it never answered `initialize`,
///   [`Reason::Shutdown`] if the manager is shutting down).
/// * **The `initialize` request is in flight** from `create_session` until
///   its answer is sent, so the reaper cannot end a session before its
///   first request is done, however the threads are scheduled (from then
///   on `initialize_session`'s own request holds it, until the worker has
///   taken the answer).
/// * **Nothing is sent to an ended session.** rmcp drains handlers that
///   were still running when a session ended and sends their answers on;
///   they go nowhere (the client ended the session, or it expired), so they
///   are dropped here instead of failing as errors in rmcp's log.
pub struct SessionTransport {
    worker: Option<WorkerTransport<LocalSessionWorker>>,
    /// Keeps the session's value, and with it the worker's event channel,
    /// until the worker has exited: a worker that loses its channel before
    /// it sees its cancellation logs an error.
    session: Option<Session<Entry>>,
    creating: Option<InFlight<Entry>>,
    answered: bool,
    exited: bool,
    /// The manager's state, to end the session with when the worker exits.
    state: Weak<State>,
}

impl SessionTransport {
    pub(crate) fn new(
        worker: WorkerTransport<LocalSessionWorker>,
        creating: InFlight<Entry>,
        state: Weak<State>,
    ) -> SessionTransport {
        SessionTransport {
            worker: Some(worker),
            session: Some((*creating).clone()),
            creating: Some(creating),
            answered: false,
            exited: false,
            state,
        }
    }

    /// The worker has stopped (or rmcp let go of it): if the session is
    /// still live, nothing else ended it, and its end is counted here.
    fn worker_exited(&mut self) {
        self.creating = None;
        if std::mem::replace(&mut self.exited, true) {
            return;
        }
        let Some(session) = &self.session else { return };
        // Checked on the handle we hold, so that the usual case (the
        // session ended first, which is what stopped the worker) costs no
        // lookup, and is not counted as a stale one.
        if session.is_terminated() {
            return;
        }
        let Some(state) = self.state.upgrade() else {
            return;
        };
        let reason = if state.closing() {
            Reason::Shutdown
        } else if self.answered {
            Reason::Failed
        } else {
            Reason::Rejected
        };
        let _ = state.registry().terminate_session(session, reason);
    }
}

impl Transport<RoleServer> for SessionTransport {
    type Error = LocalSessionWorkerError;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // The first message out is the answer to `initialize` (a handler
        // runs only once `initialize_session` has handed the worker its
        // request): `initialize_session` holds that request in flight
        // until the worker has taken the answer, so the creation's count
        // can go now. (The worker's own future is returned as it is: a
        // wrapper holding the count would carry the message twice in every
        // serve loop's state.)
        self.creating = None;
        // A result sent means the handshake went through (the first one is
        // `initialize`'s): a later exit of the worker is a failure, not a
        // rejected first request.
        if matches!(item, JsonRpcMessage::Response(_)) {
            self.answered = true;
        }
        let ended = self.session.as_ref().is_none_or(Session::is_terminated);
        match &mut self.worker {
            Some(worker) if !ended => Either::Left(worker.send(item)),
            _ => {
                tracing::debug!("dropped a message for a session that has ended");
                Either::Right(std::future::ready(Ok(())))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        match self.worker.as_mut() {
            Some(worker) => Either::Left(worker.receive()),
            None => Either::Right(std::future::ready(None)),
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let closed = match self.worker.as_mut() {
            // Cancels the worker and waits for it to exit.
            Some(worker) => worker.close().await,
            None => Ok(()),
        };
        self.worker = None;
        self.worker_exited();
        closed
    }
}

impl Drop for SessionTransport {
    fn drop(&mut self) {
        self.worker_exited();
        // Dropped without `close` (rmcp does so when the handshake fails):
        // the worker is being cancelled but may still run. Keep its event
        // channel open until it has exited, as `close` would have.
        if let (Some(mut worker), Some(session)) = (self.worker.take(), self.session.take()) {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = worker.close().await;
                    drop(session);
                });
            }
        }
    }
}

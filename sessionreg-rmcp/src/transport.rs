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
        // can go now. (Not held by the future returned: a future made to
        // hold it would carry the message twice in every serve loop's
        // state; the one returned holds the worker's, and the stop token.)
        self.creating = None;
        // A result sent means the handshake went through (the first one is
        // `initialize`'s): a later exit of the worker is a failure, not a
        // rejected first request.
        if matches!(item, JsonRpcMessage::Response(_)) {
            self.answered = true;
        }
        match (&mut self.worker, &self.session) {
            (Some(worker), Some(session)) if !session.is_terminated() => {
                let sent = worker.send(item);
                let stop = session.worker.clone();
                Either::Left(async move {
                    // The worker answers each message on a oneshot that its
                    // exit is meant to drop; a message pushed as it exits
                    // can outlive it unanswered (see `Entry::ask`), and
                    // rmcp's serve loop would wait for this future until
                    // its drain gives up (5 s). Once the session has ended
                    // the message goes nowhere anyway: stop waiting.
                    tokio::select! {
                        biased;
                        sent = sent => sent,
                        () = stop.cancelled() => Ok(()),
                    }
                })
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::transport::streamable_http_server::session::local::{
        create_local_session, SessionConfig,
    };
    use sessionreg::Registry;
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    use tokio_util::sync::CancellationToken;

    #[tokio::test(flavor = "current_thread")]
    async fn a_message_the_worker_holds_is_let_go_when_the_session_ends() {
        // A worker still waiting for `initialize` takes a message from the
        // serve loop but never answers it until it exits.
        let (handle, worker) = create_local_session("s", SessionConfig::default());
        let stop = CancellationToken::new();
        let registry = Registry::builder()
            .on_close(|_, entry: &Entry, _| entry.worker.cancel())
            .build()
            .unwrap();
        let state = Arc::new(State::new(registry, None));
        let creating = state
            .registry()
            .insert_in_flight(Entry {
                handle,
                worker: stop.clone(),
                restored: false,
            })
            .ok()
            .unwrap();
        let session = (*creating).clone();
        let worker = WorkerTransport::spawn_with_ct(worker, stop);
        let mut transport = SessionTransport::new(worker, creating, Arc::downgrade(&state));
        let answer = serde_json::from_value(serde_json::json!(
            {"jsonrpc": "2.0", "id": 1, "result": {}}
        ))
        .unwrap();
        let mut sent = pin!(transport.send(answer));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(sent.as_mut().poll(&mut cx).is_pending());
        let _ = state
            .registry()
            .terminate_session(&session, Reason::Deleted);
        // Polled before the worker's task could run (one thread, no
        // yield): only the stop token can end the wait here.
        assert!(matches!(sent.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
    }
}

//! How a session's rmcp worker is made: rmcp's own per-session worker
//! ([`create_local_session`]), configured by the manager's `SessionConfig`,
//! and, if the manager has an event store, persisting every SSE event in it
//! as rmcp's `LocalSessionManager` does.

use crate::error::Error;
use rmcp::transport::streamable_http_server::session::local::{
    create_local_session, LocalSessionHandle, LocalSessionManager, LocalSessionWorker,
    SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, SessionId as RmcpSessionId, SessionManager,
};
use rmcp::transport::WorkerTransport;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use tokio_util::sync::CancellationToken;

/// Makes the workers of one manager.
pub(crate) struct Workers {
    config: SessionConfig,
    store: Option<Stored>,
}

/// The event store, and the one maker of workers that write to it.
struct Stored {
    events: Arc<dyn EventStore>,
    /// rmcp 3.11 gives a worker an event store only inside its
    /// `LocalSessionManager` (the constructor it uses is private), whose
    /// `restore_session` makes and starts a worker named as asked. This
    /// one makes the workers and keeps none: each handle is taken back out
    /// of its map at once. The lock makes the maker's own (async) lock
    /// uncontended, so that making a worker completes in one poll.
    maker: Mutex<LocalSessionManager>,
}

/// A worker just made, with the handle and the token its session's entry
/// keeps.
pub(crate) struct Made {
    pub(crate) handle: LocalSessionHandle,
    /// Cancelling it stops the worker.
    pub(crate) stop: CancellationToken,
    pub(crate) worker: Worker,
}

/// A worker that is not running yet, or one rmcp's maker started already.
// Made and started within one `create_session`, never stored: boxing the
// idle worker would cost every session an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Worker {
    Idle(LocalSessionWorker),
    Running(WorkerTransport<LocalSessionWorker>),
}

impl Worker {
    /// The worker running, stopped by `made.stop`.
    pub(crate) fn start(self, stop: CancellationToken) -> WorkerTransport<LocalSessionWorker> {
        match self {
            Worker::Idle(worker) => WorkerTransport::spawn_with_ct(worker, stop),
            Worker::Running(running) => running,
        }
    }
}

impl fmt::Debug for Workers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workers")
            .field("config", &self.config)
            .field("event_store", &self.store.is_some())
            .finish()
    }
}

impl Workers {
    /// Workers configured by `config` (its `keep_alive` is not theirs: the
    /// registry's idle timeout replaces it), without an event store.
    pub(crate) fn new(mut config: SessionConfig) -> Workers {
        config.keep_alive = None;
        Workers {
            config,
            store: None,
        }
    }

    /// From now on, every worker writes its events to `events`.
    pub(crate) fn set_event_store(&mut self, events: Arc<dyn EventStore>) {
        let mut maker = LocalSessionManager::default().with_event_store(events.clone());
        maker.session_config = self.config.clone();
        self.store = Some(Stored {
            events,
            maker: Mutex::new(maker),
        });
    }

    /// The event store, if any.
    pub(crate) fn event_store(&self) -> Option<&Arc<dyn EventStore>> {
        self.store.as_ref().map(|store| &store.events)
    }

    /// A worker named `name` (the id its client sends). Without an event
    /// store it is not running yet; with one it is (rmcp's maker starts
    /// it), and an error says that the maker did not finish in one poll,
    /// which rmcp 3.11 always does.
    pub(crate) fn make(&self, name: RmcpSessionId) -> Result<Made, Error> {
        let Some(store) = &self.store else {
            let (handle, worker) = create_local_session(name, self.config.clone());
            return Ok(Made {
                handle,
                stop: CancellationToken::new(),
                worker: Worker::Idle(worker),
            });
        };
        let maker = store.maker.lock().unwrap_or_else(PoisonError::into_inner);
        let made = now_or_never(tokio::task::unconstrained(
            maker.restore_session(name.clone()),
        ));
        let Some(Ok(RestoreOutcome::Restored(running))) = made else {
            return Err(Error::WorkerNotMade);
        };
        let handle = maker
            .sessions
            .try_write()
            .ok()
            .and_then(|mut sessions| sessions.remove(&name));
        let Some(handle) = handle else {
            // Not where rmcp 3.11 puts it: stop the worker made for nothing.
            running.cancel_token().cancel();
            return Err(Error::WorkerNotMade);
        };
        Ok(Made {
            handle,
            stop: running.cancel_token(),
            worker: Worker::Running(running),
        })
    }
}

/// `future`'s output if it completes in one poll.
fn now_or_never<F: Future>(future: F) -> Option<F::Output> {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(future).poll(&mut cx) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

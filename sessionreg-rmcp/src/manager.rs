//! [`RegistrySessionManager`]: rmcp's `SessionManager` on the registry.

use crate::entry::Entry;
use crate::error::Error;
use crate::reaper::Reaper;
use crate::state::State;
use crate::status::{report, Refusal};
use crate::stream::InFlightStream;
use crate::transport::SessionTransport;
use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    create_local_session, EventId, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId as RmcpSessionId, SessionManager,
};
use rmcp::transport::WorkerTransport;
use sessionreg::{InFlight, Reason, Session, Stats};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// An rmcp [`SessionManager`] whose sessions live in a
/// [`sessionreg::Registry`]: the drop-in replacement for rmcp's
/// `LocalSessionManager` (see the [crate docs](crate)).
///
/// Each session is rmcp's own per-session worker
/// ([`create_local_session`]), named by a registry id (48 lowercase hex
/// digits, the first two the node id). What it adds:
///
/// * **One end per session.** Every way a session ends — `DELETE`, the idle
///   timeout, its worker exiting, [`shutdown`](Self::shutdown) or the
///   manager's drop — goes through
///   [`Registry::terminate`](sessionreg::Registry::terminate) (or the sweeps
///   `reap_idle` / `terminate_all`): one CAS picks the winner, whose close
///   callback stops the worker, once, and counts the reason. rmcp calls
///   `close_session` again after every worker exit; those calls find the
///   session over and change nothing.
/// * **Idle means idle.** rmcp's `keep_alive` timer is off; the registry's
///   reaper ends sessions that had nothing in flight for the idle timeout
///   (default 300 s, rmcp's default). A request is in flight from the moment
///   the manager takes it until its answer stream ends (or the client drops
///   it); an open GET stream is in flight while it is open. A tool call that
///   is silent for longer than the timeout keeps its session.
/// * **A capacity** (default 65,536): at it, `create_session` fails at once
///   ([`Error::AtCapacity`]; 503 behind a [`StatusLayer`](crate::StatusLayer)).
/// * **Metrics**: [`stats`](Self::stats), and [`metrics`](Self::metrics) in
///   Prometheus text with sessionreg's stable names.
///
/// Cloning is not needed: rmcp takes it as `Arc<RegistrySessionManager>`.
pub struct RegistrySessionManager {
    state: Arc<State>,
    config: SessionConfig,
    reaper: Reaper,
}

impl fmt::Debug for RegistrySessionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistrySessionManager")
            .field("live", &self.state.registry().len())
            .field("capacity", &self.state.registry().capacity())
            .field("closing", &self.state.closing())
            .finish_non_exhaustive()
    }
}

impl RegistrySessionManager {
    /// The manager over `state`, its sessions' workers configured by
    /// `config`, its reaper sweeping `reap_every` so often (`None`: never).
    pub(crate) fn from_parts(
        state: State,
        config: SessionConfig,
        reap_every: Option<Duration>,
    ) -> RegistrySessionManager {
        RegistrySessionManager {
            state: Arc::new(state),
            config,
            reaper: Reaper::new(reap_every),
        }
    }

    /// A snapshot of the registry's counters.
    pub fn stats(&self) -> Stats {
        self.state.registry().stats()
    }

    /// The registry's counters in Prometheus text (serve it with
    /// [`sessionreg::metrics::CONTENT_TYPE`] on a route of your own): the
    /// stable `sessionreg_*` names of [`sessionreg::metrics`].
    pub fn metrics(&self) -> String {
        sessionreg::metrics::render(&self.stats())
    }

    /// Live sessions.
    pub fn len(&self) -> usize {
        self.state.registry().len()
    }

    /// Whether no session is live.
    pub fn is_empty(&self) -> bool {
        self.state.registry().is_empty()
    }

    /// Starts shutting down: creates no more sessions (`initialize` fails
    /// with [`Error::ShuttingDown`], 503 behind a
    /// [`StatusLayer`](crate::StatusLayer)) and ends every live session with
    /// [`Reason::Shutdown`] (each worker stops; its streams end). Returns
    /// how many sessions this call ended.
    ///
    /// Call it when the server stops (or give the manager the server's
    /// cancellation token with
    /// [`Builder::cancellation_token`](crate::Builder::cancellation_token));
    /// dropping the manager ends what is left the same way.
    pub fn shutdown(&self) -> usize {
        self.state.begin_shutdown();
        self.state.registry().terminate_all(Reason::Shutdown)
    }

    /// The live session named by rmcp's id (the header value), if any. A
    /// malformed id is unknown (and counted as such).
    fn lookup(&self, id: &RmcpSessionId) -> Option<Session<Entry>> {
        let registry = &self.state.registry();
        let id = registry.parse_id(id.as_bytes()).ok()?;
        registry.get(&id)
    }

    /// Starts a request on the session named by `id`, if it is live.
    fn begin(&self, id: &RmcpSessionId) -> Option<InFlight<Entry>> {
        self.lookup(id)?.begin()
    }

    /// What to answer for a session that is not live: a note for the
    /// [`StatusLayer`](crate::StatusLayer) (404) and a stand-in answer it
    /// replaces, or, with no layer, the error rmcp turns into its 500.
    fn gone<T>(&self, stand_in: T) -> Result<T, Error> {
        if report(Refusal::Gone) {
            Ok(stand_in)
        } else {
            Err(Error::SessionNotFound)
        }
    }

    /// A worker call failed: if the session ended meanwhile (the worker was
    /// told to stop), it is gone; otherwise the worker's error stands.
    fn failed<T>(&self, request: &InFlight<Entry>, error: Error, stand_in: T) -> Result<T, Error> {
        if request.is_terminated() {
            self.gone(stand_in)
        } else {
            Err(error)
        }
    }
}

impl SessionManager for RegistrySessionManager {
    type Error = Error;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(RmcpSessionId, SessionTransport), Error> {
        if self.state.closing() {
            report(Refusal::ShuttingDown);
            return Err(Error::ShuttingDown);
        }
        self.reaper.start(&self.state, "idle sessions", |state| {
            state.registry().reap_idle()
        });
        let stop = CancellationToken::new();
        let mut worker = None;
        let created = self.state.registry().insert_in_flight_with(|id| {
            // rmcp's worker is named by the id's text form, the header value
            // (encoded on the stack: one allocation, the Arc's).
            let mut text = [0; sessionreg::SessionId::TEXT_LEN];
            let name: Arc<str> = Arc::from(id.encode(&mut text));
            let (handle, made) = create_local_session(name, self.config.clone());
            worker = Some(made);
            Entry {
                handle,
                worker: stop.clone(),
            }
        });
        let Ok(creating) = created else {
            report(Refusal::Full);
            return Err(Error::AtCapacity {
                capacity: self.state.registry().capacity(),
            });
        };
        let worker = worker.expect("made with the session");
        if self.state.closing() {
            // A shutdown sweep may have run before this session was visible:
            // end it here (the worker never starts).
            let _ = self
                .state
                .registry()
                .terminate(&creating.id(), Reason::Shutdown);
            report(Refusal::ShuttingDown);
            return Err(Error::ShuttingDown);
        }
        let id = creating.handle.id().clone();
        let worker = WorkerTransport::spawn_with_ct(worker, stop);
        let transport = SessionTransport::new(worker, creating, Arc::downgrade(&self.state));
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &RmcpSessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Error> {
        // The session was created by this request a moment ago; rmcp has no
        // 404 for `initialize`, so a session gone already is a plain error.
        let request = self.begin(id).ok_or(Error::SessionNotFound)?;
        request
            .handle
            .initialize(message)
            .await
            .map_err(Error::Session)
    }

    async fn has_session(&self, id: &RmcpSessionId) -> Result<bool, Error> {
        match self.lookup(id) {
            Some(session) => {
                // A request for it has arrived: restart its idle clock, so it
                // does not expire between this check and rmcp's next call.
                session.touch();
                Ok(true)
            }
            None => {
                report(Refusal::Gone);
                Ok(false)
            }
        }
    }

    async fn close_session(&self, id: &RmcpSessionId) -> Result<(), Error> {
        let registry = &self.state.registry();
        let won = match registry.parse_id(id.as_bytes()) {
            Ok(id) => registry.terminate(&id, Reason::Deleted).is_won(),
            Err(_) => false,
        };
        if !won {
            // Already ended (rmcp's own call after the worker exits, or a
            // second DELETE), or never a session: rmcp answers 202 whatever
            // happens; behind the StatusLayer a DELETE gets 404.
            report(Refusal::Gone);
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &RmcpSessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Error> {
        let Some(request) = self.begin(id) else {
            return self.gone(InFlightStream::ended());
        };
        let answers = match request.handle.establish_request_wise_channel().await {
            Ok(answers) => answers,
            Err(e) => return self.failed(&request, Error::Session(e), InFlightStream::ended()),
        };
        if let Err(e) = request
            .handle
            .push_message(message, answers.http_request_id)
            .await
        {
            return self.failed(&request, Error::Session(e), InFlightStream::ended());
        }
        Ok(InFlightStream::new(answers.inner, request))
    }

    async fn accept_message(
        &self,
        id: &RmcpSessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Error> {
        let Some(request) = self.begin(id) else {
            return self.gone(());
        };
        match request.handle.push_message(message, None).await {
            Ok(()) => Ok(()),
            Err(e) => self.failed(&request, Error::Session(e), ()),
        }
    }

    async fn create_standalone_stream(
        &self,
        id: &RmcpSessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Error> {
        let Some(request) = self.begin(id) else {
            return self.gone(InFlightStream::ended());
        };
        match request.handle.establish_common_channel().await {
            Ok(stream) => Ok(InFlightStream::new(stream.inner, request)),
            Err(e) => self.failed(&request, Error::Session(e), InFlightStream::ended()),
        }
    }

    async fn resume(
        &self,
        id: &RmcpSessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Error> {
        let Some(request) = self.begin(id) else {
            return self.gone(InFlightStream::ended());
        };
        let last: EventId = last_event_id.parse().map_err(Error::InvalidEventId)?;
        match request.handle.resume(last).await {
            Ok(stream) => Ok(InFlightStream::new(stream.inner, request)),
            Err(e) => self.failed(&request, Error::Session(e), InFlightStream::ended()),
        }
    }

    // `restore_session` keeps rmcp's default, `NotSupported`: a registry id
    // names a slot and generation of this process, so a session cannot be
    // re-created under the same id elsewhere (the fleet routes each id to
    // the node that made it instead).
}

//! [`RegistrySessionManager`]: rmcp's `SessionManager` on the registry.

use crate::aliases::Aliases;
use crate::entry::Entry;
use crate::error::Error;
use crate::reaper::Reaper;
use crate::state::State;
use crate::status::{report, withdraw, Refusal};
use crate::stream::InFlightStream;
use crate::transport::SessionTransport;
use crate::workers::Workers;
use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{EventId, LocalSessionHandle};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId as RmcpSessionId, SessionManager,
};
use sessionreg::{InFlight, Reason, Session, Stats};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// An rmcp [`SessionManager`] whose sessions live in a
/// [`sessionreg::Registry`]: the drop-in replacement for rmcp's
/// `LocalSessionManager` (see the [crate docs](crate)).
///
/// Each session is rmcp's own per-session worker
/// ([`create_local_session`](rmcp::transport::streamable_http_server::session::local::create_local_session)),
/// named by a registry id (48 lowercase hex digits, the first two the node
/// id), or, for a session restored from rmcp's session store, by the id its
/// client holds. What it adds:
///
/// * **One end per session.** Every way a session ends — `DELETE`, the idle
///   timeout, its worker exiting, [`shutdown`](Self::shutdown) or the
///   manager's drop — goes through
///   [`Registry::terminate`](sessionreg::Registry::terminate) (or the sweeps
///   `reap_idle` / `terminate_all`): one CAS picks the winner, whose close
///   callback stops the worker, once, and counts the reason. rmcp calls
///   `close_session` again after every worker exit; those calls find the
///   session over and change nothing.
/// * **Idle means idle.** rmcp's `keep_alive` timer is off in the workers;
///   the registry's reaper ends sessions that had nothing in flight for the
///   idle timeout (the `SessionConfig`'s `keep_alive`, or
///   [`Builder::idle_timeout`](crate::Builder::idle_timeout); default 300 s,
///   rmcp's default). A request is in flight from the moment the manager
///   takes it until its answer stream ends (or the client drops it); an open
///   GET stream is in flight while it is open. A tool call that is silent
///   for longer than the timeout keeps its session.
/// * **A capacity** (default 65,536): at it, `create_session` and
///   `restore_session` fail at once ([`Error::AtCapacity`]; 503 behind a
///   [`StatusLayer`](crate::StatusLayer)).
/// * **Metrics**: [`stats`](Self::stats), and [`metrics`](Self::metrics) in
///   Prometheus text with sessionreg's stable names.
///
/// And what rmcp's manager has: restores from rmcp's session store, an
/// event store ([`with_event_store`](Self::with_event_store)), rmcp's
/// session handles ([`session`](Self::session), [`sessions`](Self::sessions)).
///
/// Cloning is not needed: rmcp takes it as `Arc<RegistrySessionManager>`.
pub struct RegistrySessionManager {
    state: Arc<State>,
    aliases: Arc<Aliases>,
    workers: Workers,
    idle_timeout: Option<Duration>,
    reaper: Reaper,
}

impl fmt::Debug for RegistrySessionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistrySessionManager")
            .field("live", &self.state.registry().len())
            .field("capacity", &self.state.registry().capacity())
            .field("closing", &self.state.closing())
            .field("restored", &self.aliases.len())
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl RegistrySessionManager {
    /// The manager over `state`, its restored sessions' ids in `aliases`,
    /// its sessions' workers made by `workers`, its reaper sweeping
    /// `reap_every` so often (`None`: never) for `idle_timeout`.
    pub(crate) fn from_parts(
        state: State,
        aliases: Arc<Aliases>,
        workers: Workers,
        idle_timeout: Option<Duration>,
    ) -> RegistrySessionManager {
        // A quarter of the timeout, within 10 ms .. 1 s: as sessionreg's
        // HTTP layer sweeps.
        let reap_every =
            idle_timeout.map(|t| (t / 4).clamp(Duration::from_millis(10), Duration::from_secs(1)));
        RegistrySessionManager {
            state: Arc::new(state),
            aliases,
            workers,
            idle_timeout,
            reaper: Reaper::new(reap_every),
        }
    }

    /// How long a session may have nothing in flight before it ends
    /// ([`Builder::idle_timeout`](crate::Builder::idle_timeout), or the
    /// session config's `keep_alive`); `None`: sessions never expire.
    pub fn idle_timeout(&self) -> Option<Duration> {
        self.idle_timeout
    }

    /// This manager with an SSE event store, as rmcp's
    /// `LocalSessionManager::with_event_store`: see
    /// [`Builder::event_store`](crate::Builder::event_store).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use rmcp::transport::streamable_http_server::session::EventStore;
    /// # fn store() -> Arc<dyn EventStore> { unimplemented!() }
    /// # fn f() {
    /// use sessionreg_rmcp::RegistrySessionManager;
    ///
    /// // was: LocalSessionManager::default().with_event_store(store())
    /// let manager = RegistrySessionManager::default().with_event_store(store());
    /// # }
    /// ```
    #[must_use]
    pub fn with_event_store(mut self, store: Arc<dyn EventStore>) -> Self {
        self.workers.set_event_store(store);
        self
    }

    /// rmcp's handle to the live session its client calls `id` (the
    /// `Mcp-Session-Id` value), as `LocalSessionManager::sessions` holds
    /// them: to close an SSE stream of it (SEP-1699:
    /// `close_sse_stream`, `close_standalone_sse_stream`; the client
    /// reconnects with `Last-Event-ID`), or anything else rmcp's handle
    /// offers.
    ///
    /// End a session with `close_session` (rmcp's `DELETE`) rather than the
    /// handle's `close`: the handle stops the worker, which ends the session
    /// as [`Reason::Failed`].
    ///
    /// What the handle asks of the worker waits for the worker's answer:
    /// bound it (`tokio::time::timeout`) if the session may end meanwhile.
    /// rmcp's handle can miss the worker's exit when the two meet (an ask
    /// sent as the worker drops its channel is never answered); the
    /// manager's own asks also end when the worker is told to stop.
    pub fn session(&self, id: &str) -> Option<LocalSessionHandle> {
        Some(self.lookup(id)?.handle.clone())
    }

    /// rmcp's handles to every live session, as `LocalSessionManager`'s
    /// `sessions` map holds them; each one's `id()` is the id its client
    /// sends. A snapshot: sessions created or ended while it is taken may
    /// or may not be in it. It takes no lock, and nobody waits for it.
    pub fn sessions(&self) -> Vec<LocalSessionHandle> {
        self.state
            .registry()
            .live()
            .map(|session| session.handle.clone())
            .collect()
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
    /// Call it when the server stops, or give the manager the server's
    /// cancellation token
    /// ([`Builder::cancellation_token`](crate::Builder::cancellation_token)):
    /// under rmcp the manager outlives its sessions (each session's task
    /// holds it), so it is not dropped while any session lives. (A manager
    /// that is dropped does end what is left the same way.)
    pub fn shutdown(&self) -> usize {
        self.state.begin_shutdown();
        self.state.registry().terminate_all(Reason::Shutdown)
    }

    /// The live session whose client calls it `id` (the header value), if
    /// any: a registry id, or a restored session's alias. A malformed id is
    /// unknown (and counted as such).
    fn lookup(&self, id: &str) -> Option<Session<Entry>> {
        let registry = self.state.registry();
        if let Some(restored) = self.aliases.get(id) {
            return registry.get(&restored);
        }
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
        self.open(None)
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
            .ask(|handle| handle.initialize(message))
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
        let registry = self.state.registry();
        let entry = match self.aliases.get(id) {
            Some(restored) => Ok(restored),
            None => registry.parse_id(id.as_bytes()),
        };
        let won = match entry {
            Ok(entry) => registry.terminate(&entry, Reason::Deleted).is_won(),
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
        let answers = match request
            .ask(|handle| handle.establish_request_wise_channel())
            .await
        {
            Ok(answers) => answers,
            Err(e) => return self.failed(&request, Error::Session(e), InFlightStream::ended()),
        };
        if let Err(e) = request
            .ask(|handle| handle.push_message(message, answers.http_request_id))
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
        match request
            .ask(|handle| handle.push_message(message, None))
            .await
        {
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
        match request
            .ask(|handle| handle.establish_common_channel())
            .await
        {
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
        if let Some(store) = self.workers.event_store() {
            // The store's own ids: it finds the stream, as rmcp's manager
            // lets it do, also for events an earlier process stored.
            return match store.replay_events_after(&last_event_id).await {
                Ok(events) => Ok(InFlightStream::stored(events, request)),
                Err(e) => Err(Error::EventStore(e)),
            };
        }
        let last: EventId = last_event_id.parse().map_err(Error::InvalidEventId)?;
        match request.ask(|handle| handle.resume(last)).await {
            Ok(stream) => Ok(InFlightStream::new(stream.inner, request)),
            Err(e) => self.failed(&request, Error::Session(e), InFlightStream::ended()),
        }
    }

    async fn restore_session(
        &self,
        id: RmcpSessionId,
    ) -> Result<RestoreOutcome<SessionTransport>, Error> {
        // rmcp asks only after `has_session` found nothing (and lets one
        // request at a time restore an id), so a live alias means a restore
        // raced this one.
        if let Some(restored) = self.aliases.get(&id) {
            if self.state.registry().get(&restored).is_some() {
                return Ok(RestoreOutcome::AlreadyPresent);
            }
        }
        let (_, transport) = self.open(Some(id))?;
        // `has_session` left a 404 note for the StatusLayer; the request
        // goes on, on the restored session.
        withdraw();
        Ok(RestoreOutcome::Restored(transport))
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.workers.event_store().cloned()
    }
}

impl RegistrySessionManager {
    /// A new session, with a fresh entry: a new slot, a registry id with
    /// this node's prefix, rmcp's worker. `restoring` is the id a restored
    /// session's client already holds: the worker is named by it (so its
    /// events keep their stream, and rmcp's logs their id), and it leads to
    /// the entry until the session ends. Otherwise the id is the entry's.
    /// The `initialize` request (for a restore, rmcp's replay of it) is in
    /// flight from here until its answer is sent.
    fn open(
        &self,
        restoring: Option<RmcpSessionId>,
    ) -> Result<(RmcpSessionId, SessionTransport), Error> {
        if self.state.closing() {
            report(Refusal::ShuttingDown);
            return Err(Error::ShuttingDown);
        }
        self.reaper.start(&self.state, "idle sessions", |state| {
            state.registry().reap_idle()
        });
        let restored = restoring.is_some();
        let mut made = None;
        let created = self.state.registry().insert_in_flight_with(|id| {
            let name: RmcpSessionId = match restoring {
                Some(client) => {
                    // Before the session is visible: whatever ends it finds
                    // the alias to remove.
                    self.aliases.insert(client.clone(), id);
                    client
                }
                // rmcp's worker is named by the id's text form, the header
                // value (encoded on the stack: one allocation, the Arc's).
                None => Arc::from(id.encode(&mut [0; sessionreg::SessionId::TEXT_LEN])),
            };
            let (entry, worker) = match self.workers.make(name.clone()) {
                Ok(worker) => (
                    Entry {
                        handle: worker.handle.clone(),
                        worker: worker.stop.clone(),
                        restored,
                    },
                    Ok(worker),
                ),
                Err(e) => {
                    // A stand-in entry, ended below.
                    let stand_in = Workers::new(Default::default())
                        .make(name)
                        .expect("a worker without an event store is always made");
                    (
                        Entry {
                            handle: stand_in.handle,
                            worker: stand_in.stop,
                            restored,
                        },
                        Err(e),
                    )
                }
            };
            made = Some(worker);
            entry
        });
        let Ok(creating) = created else {
            report(Refusal::Full);
            return Err(Error::AtCapacity {
                capacity: self.state.registry().capacity(),
            });
        };
        let made = made.expect("made with the session");
        let refused = match (&made, self.state.closing()) {
            (Err(_), _) => Some(Reason::Rejected),
            // A shutdown sweep may have run before this session was visible:
            // end it here (a worker not running yet never starts).
            (Ok(_), true) => Some(Reason::Shutdown),
            (Ok(_), false) => None,
        };
        if let Some(reason) = refused {
            let _ = self.state.registry().terminate_session(&creating, reason);
            return match made {
                Err(e) => Err(e),
                Ok(_) => {
                    report(Refusal::ShuttingDown);
                    Err(Error::ShuttingDown)
                }
            };
        }
        let made = made.expect("checked above");
        let id = made.handle.id().clone();
        let worker = made.worker.start(made.stop);
        let transport = SessionTransport::new(worker, creating, Arc::downgrade(&self.state));
        Ok((id, transport))
    }
}

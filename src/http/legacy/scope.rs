//! What a request's work is in a session ([`InSession`], the session era's
//! [`Scope`]): held in flight on its session while it runs; cancelled by
//! the session's end or `notifications/cancelled`; a failure ends the
//! session; a streamed reply is logged for resumption where the client can
//! resume (2025-11-25 and later, with the event log on), else sent straight
//! to its connection.

use crate::http::app::{App, HandlerError};
use crate::http::run::dispatch::{Scope, Stop};
use crate::http::run::hub::Hub;
use crate::http::session::entry::SessionEntry;
use crate::http::session::running::Listed;
use crate::http::sse::{Out, Outlet};
use crate::{InFlight, Reason};
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A request's work in its session: the session held in flight (under its
/// cap) for as long as the work runs.
pub(super) struct InSession<A: App> {
    pub(super) hub: Arc<Hub<A>>,
    pub(super) request: InFlight<SessionEntry<A::Session>>,
    /// The number of the request's reply stream, drawn before the handler
    /// runs when the stream would be resumable (so the handler can close its
    /// connection early: `LegacyRequest::close_sse_stream`).
    pub(super) logged: Option<u64>,
    /// Whether the request is the session's `initialize`.
    pub(super) initialize: bool,
}

impl<A: App> Scope for InSession<A> {
    type Owned = Self;

    fn into_owned(self) -> Self {
        self
    }

    // A session's request goes on when its client disconnects (its answer
    // waits in the session's event log, or is dropped): its own task. Not
    // `initialize`: a client that goes before its answer never learns the
    // session's id, and the session, unused, idles out.
    fn outlives_connection(&self) -> bool {
        !self.initialize
    }

    fn list(&self, id: &Value, cancel: &CancellationToken) -> Option<Listed<'_>> {
        Some(self.request.running.list(id, cancel.clone()))
    }

    fn stopped(&self) -> Stop {
        match self.request.running.ended() {
            Some(reason) => Stop::SessionEnded(reason),
            None => Stop::Cancelled,
        }
    }

    fn failed(&self, error: &HandlerError) {
        // Through the handle it holds, so it can only ever reach its own
        // session. `?`: the Debug form of the id names the session without
        // its secret.
        tracing::warn!(session = ?self.request.id(), %error, "handler failed; ending the session");
        let _ = self
            .hub
            .registry
            .terminate_session(&self.request, Reason::Failed);
    }

    fn open_stream(&self) -> (Arc<Outlet>, Out<'_>) {
        let streams = &self.request.streams;
        match self.logged {
            Some(number) => {
                // Resumable: pumped (and logged) even if this connection
                // goes, for the client to resume.
                let outlet = streams
                    .lock()
                    .open_post(number, Some(self.hub.config.sse_retry));
                (outlet, Out::logged(streams, number))
            }
            None => {
                let outlet = self.hub.new_outlet();
                let number = streams.next_stream();
                (Arc::clone(&outlet), Out::direct(outlet, number))
            }
        }
    }

    fn outgoing(&self, message: Value) -> Option<Value> {
        Some(message)
    }
}

impl<A: App> Drop for InSession<A> {
    fn drop(&mut self) {
        // However the work ended (answered without a stream, failed,
        // stopped), a close the handler asked for before its stream opened
        // has nothing left to close.
        if let Some(number) = self.logged {
            self.request.streams.lock().forget(number);
        }
    }
}

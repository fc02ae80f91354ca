//! What a 2026-07-28 request's work is ([`Standalone`], the modern era's
//! [`Scope`]): no session holds it or ends with its failure; closing its
//! stream (or the connection before the answer) is its cancel; and every
//! message of a streamed reply goes through the request's envelope.

use super::envelope::Envelope;
use crate::http::app::HandlerError;
use crate::http::counters::HttpCounters;
use crate::http::run::dispatch::{Scope, Stop};
use crate::http::session::running::Listed;
use crate::http::sse::{Out, Outlet, QueueLimits};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A 2026-07-28 request's work.
pub(super) struct Standalone<'e> {
    /// The envelope its streamed answer's messages go through (`None` for a
    /// notification, which has no answer): borrowed from the request's
    /// frame while the handler runs there; a copy of it held by a streamed
    /// reply's pump, which runs past that frame.
    pub(super) envelope: Option<Cow<'e, Envelope>>,
    pub(super) limits: QueueLimits,
    pub(super) counters: Arc<HttpCounters>,
}

impl<'e> Scope for Standalone<'e> {
    type Owned = Standalone<'static>;

    fn into_owned(self) -> Standalone<'static> {
        Standalone {
            envelope: self.envelope.map(|e| Cow::Owned(e.into_owned())),
            limits: self.limits,
            counters: self.counters,
        }
    }

    // Closing the stream is the cancel: the work runs on the request's own
    // task until it answers.
    fn outlives_connection(&self) -> bool {
        false
    }

    fn list(&self, _: &Value, _: &CancellationToken) -> Option<Listed<'_>> {
        // Nothing cancels by id at 2026-07-28: the client closes the stream.
        None
    }

    fn stopped(&self) -> Stop {
        Stop::Cancelled
    }

    fn failed(&self, error: &HandlerError) {
        tracing::warn!(%error, "handler failed");
    }

    fn open_stream(&self) -> (Arc<Outlet>, Out<'_>) {
        let outlet = Outlet::new(self.limits, Arc::clone(&self.counters));
        (Arc::clone(&outlet), Out::direct(outlet, 1))
    }

    fn outgoing(&self, message: Value) -> Option<Value> {
        match &self.envelope {
            Some(envelope) => envelope.outgoing(message),
            None => Some(message),
        }
    }
}

//! One message of a session handed to the application ([`run`]).

use super::scope::InSession;
use crate::http::app::{App, Context, LegacyRequest};
use crate::http::run::dispatch::{self, Dispatched};
use crate::http::run::hub::Hub;
use crate::http::session::entry::SessionEntry;
use crate::http::tasks::TaskChoice;
use crate::http::wire::jsonrpc::Message;
use crate::http::wire::protocol::Version;
use crate::{InFlight, Session};
use http::request::Parts;
use std::sync::Arc;

/// Runs the application on one message of a session, counted in flight on
/// it (`request`) for as long as its work runs, and waits for its outcome.
pub(super) async fn run<A: App>(
    hub: &Arc<Hub<A>>,
    request: InFlight<SessionEntry<A::Session>>,
    message: Message,
    version: &'static str,
    parts: Parts,
) -> Dispatched {
    // A request whose SSE reply is resumable gets its stream's number now,
    // so the handler can close the connection early
    // (`LegacyRequest::close_sse_stream`).
    let logged = (matches!(message, Message::Request(_))
        && hub.config.event_log_events > 0
        && Version::Legacy(version).resumes())
    .then(|| request.streams.next_stream());
    let legacy = LegacyRequest {
        session: Session::clone(&request),
        version,
        stream: logged,
    };
    let ctx = Context::for_legacy(parts, request.running.request(), legacy);
    let initialize = matches!(&message, Message::Request(r) if r.method == "initialize");
    let scope = InSession {
        hub: Arc::clone(hub),
        request,
        logged,
        initialize,
    };
    // Legacy clients know no tasks extension: a task's work answers the
    // call.
    let choice = TaskChoice::Inline {
        refuse_required: false,
    };
    dispatch::run(&hub.runner, scope, ctx, message, choice)
        .await
        .outcome()
        .await
}

//! What both eras do first with a `POST` once its one JSON-RPC message is
//! read (`wire/message.rs`: headers, body, parse): take the message's id
//! and admit a handler for it (`admission.rs`), before the era looks at
//! what it says; and, once the era knows the message is well formed, the
//! principal's rate limits, then (feature `oauth`) the scopes the call
//! itself needs (its tool's, prompt's, resource's or method's).

use crate::http::app::App;
use crate::http::run::hub::Hub;
use crate::http::wire::body::Body;
use crate::http::wire::jsonrpc::Message;
use crate::http::wire::reject::Reject;
use http::request::Parts;
use http::Response;
use serde_json::Value;

/// Admits a handler for `message` (its request's id, `None` for a
/// notification or a response); `Err` is the refusal, answered with the
/// id. A synchronous step: the handler is spawned (if it must be) in the
/// same stretch of the caller's poll (see `admission.rs`).
// The refusal is a response, large beside the id; it is the rare path, and
// boxing it would cost the answer an allocation.
#[allow(clippy::result_large_err)]
pub(crate) fn admit<A: App>(
    hub: &Hub<A>,
    message: &Message,
) -> Result<Option<Value>, Response<Body>> {
    let id = message.request_id();
    match hub.runner.handlers.admit(hub.config.max_handlers) {
        Ok(()) => Ok(id),
        Err(reject) => Err(reject.respond(id.as_ref(), &hub.config)),
    }
}

/// The principal's rate limits (`access/rates/`), for a request; then the
/// scopes `message` needs beyond the required ones, checked against the
/// request's token (see the resource server's `needs.rs`; none without a
/// resource server). With a fleet's rate limits, the decision is Redis's:
/// a round trip, bounded by the bus's timeout.
pub(crate) async fn authorize<A: App>(
    hub: &Hub<A>,
    parts: &Parts,
    message: &Message,
) -> Result<(), Reject> {
    if let Some(rates) = &hub.rates {
        rates.check(parts, message).await?;
    }
    #[cfg(feature = "oauth")]
    if let Some(server) = &hub.resource_server {
        return server.authorize_call(parts, message);
    }
    let _ = (hub, parts, message);
    Ok(())
}

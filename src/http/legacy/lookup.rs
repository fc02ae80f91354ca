//! A session found by its header, for its principal only ([`find`]).

use crate::http::app::App;
use crate::http::run::hub::Hub;
use crate::http::session::entry::SessionEntry;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use crate::Session;

/// The live session a header names, if it belongs to the request's
/// principal; else [`Reject::SessionNotFound`], the same for every cause
/// (another principal's session is no more visible than an unknown one).
///
/// The binding holds whenever a principal is present, however it got into
/// the request (the authenticator, or a middleware in front): a session
/// opened by one principal, or by none, is found only by the same.
pub(super) fn find<A: App>(
    hub: &Hub<A>,
    header: &[u8],
    principal: Option<&Principal>,
) -> Result<Session<SessionEntry<A::Session>>, Reject> {
    let id = hub
        .registry
        .parse_id(header)
        .map_err(|_| Reject::SessionNotFound)?;
    // Its public part on the request's span: never the secret.
    crate::http::observe::span::record_session(id);
    hub.registry
        .lookup_if(&id, |entry| entry.owner.as_ref() == principal)
        .map_err(|_| Reject::SessionNotFound)
}

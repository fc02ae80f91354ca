//! The answer that more input is required ([`input_required`]): the
//! client's input requests, and the application's state sealed for the
//! retry, bound to this principal and this request ([`binding_of`]).

use super::envelope::Envelope;
use crate::http::input::sealing::{self, Binding, Sealer};
use crate::http::input::InputRequired;
use crate::http::observe;
use crate::http::wire::body::{self, Body};
use crate::http::wire::config::Config;
use crate::http::wire::jsonrpc::RpcError;
use crate::http::wire::meta::META_SERVER_INFO;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use http::Response;
use serde_json::{json, Value};

/// The binding of a request (see `Binding::new`), from its params' text.
pub(super) fn binding_of(
    principal: Option<&str>,
    method: &str,
    params: Option<&str>,
) -> Result<Binding, RpcError> {
    let params: Value = match params {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))?,
        None => Value::Null,
    };
    Ok(Binding::new(principal, method, &params))
}

/// What an answer's sealed state is bound to: the binding a retry's state
/// was opened with, or the request's params' text to compute it from (kept
/// for the methods that may answer `input_required`, shared with the
/// handler's view of a call; computed only when the application seals a
/// state, so no other request pays for the digest).
pub(super) struct Binds {
    pub(super) binding: Option<Binding>,
    pub(super) params: Option<crate::http::wire::jsonrpc::Params>,
}

/// The answer "input required": the input requests, and the
/// application's state sealed for this request's retry.
pub(super) fn input_required(
    sealer: &Sealer,
    config: &Config,
    envelope: &Envelope,
    binds: Binds,
    owner: Option<&Principal>,
    asked: InputRequired,
) -> Response<Body> {
    let principal = owner.map(Principal::as_str);
    let asked = *asked.0;
    let mut result = json!({ "resultType": "input_required" });
    if !asked.requests.is_empty() {
        result["inputRequests"] = Value::Object(asked.requests);
    }
    if let Some(app_state) = &asked.state {
        let binding = match binds.binding {
            Some(binding) => binding,
            None => match binding_of(
                principal,
                &envelope.method,
                binds.params.as_ref().map(|p| p.get()),
            ) {
                Ok(binding) => binding,
                Err(error) => return Reject::Malformed(error).respond(Some(&envelope.id), config),
            },
        };
        // The asking request's span (current here), for the retry's link.
        let origin = observe::retry_link::origin();
        match sealer.seal(
            &binding,
            app_state,
            asked.single_use,
            owner,
            origin.as_ref(),
        ) {
            Ok(token) => result["requestState"] = token.into(),
            Err(refused) => return single_use_refused(refused).respond(Some(&envelope.id), config),
        }
    }
    if let Some(info) = &envelope.server_info {
        result["_meta"] = json!({ META_SERVER_INFO: info.value });
    }
    body::result(&envelope.id, &result)
}

/// The refusal of an answer whose single-use state could not be recorded:
/// the principal past its share (429), or the record full (503), each
/// naming its bound, with a `Retry-After` of when a record expires.
fn single_use_refused(refused: sealing::Refused) -> Reject {
    const STORE: &str = "single-use requestState";
    const HELD: &str = "unused single-use states";
    match refused {
        sealing::Refused::OverShare { limit, retry_after } => {
            tracing::debug!(
                limit,
                retry_after,
                "a principal is past its single-use share: 429"
            );
            Reject::OverShare {
                bound: "single_use_share",
                store: STORE,
                held: HELD,
                limit,
                retry_after,
            }
        }
        sealing::Refused::Full { limit, retry_after } => {
            tracing::debug!(limit, retry_after, "the single-use record is full: 503");
            Reject::StoreFull {
                bound: "single_use_states",
                store: STORE,
                held: HELD,
                limit,
                retry_after,
            }
        }
    }
}

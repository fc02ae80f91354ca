//! The answer that more input is required ([`input_required`]): the
//! client's input requests, and the application's state sealed for the
//! retry, bound to this principal and this request ([`binding_of`]).

use super::envelope::Envelope;
use crate::http::body::{self, Body};
use crate::http::config::Config;
use crate::http::jsonrpc::RpcError;
use crate::http::meta::META_SERVER_INFO;
use crate::http::mrtr::sealing::{Binding, Full, Sealer};
use crate::http::mrtr::InputRequired;
use crate::http::reject::Reject;
use http::Response;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// The binding of a request (see `Binding::new`), from its raw params.
pub(super) fn binding_of(
    principal: Option<&str>,
    method: &str,
    params: Option<&RawValue>,
) -> Result<Binding, RpcError> {
    let params: Value = match params {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))?,
        None => Value::Null,
    };
    Ok(Binding::new(principal, method, &params))
}

/// What an answer's sealed state is bound to: the binding a retry's state
/// was opened with, or the request's params to compute it from (kept for
/// the methods that may answer `input_required`; computed only when the
/// application seals a state, so no other request pays for the digest).
pub(super) struct Binds {
    pub(super) binding: Option<Binding>,
    pub(super) params: Option<Box<RawValue>>,
}

/// The answer "input required": the input requests, and the
/// application's state sealed for this request's retry.
pub(super) fn input_required(
    sealer: &Sealer,
    config: &Config,
    envelope: &Envelope,
    binds: Binds,
    principal: Option<&str>,
    asked: InputRequired,
) -> Response<Body> {
    let asked = *asked.0;
    let mut result = json!({ "resultType": "input_required" });
    if !asked.requests.is_empty() {
        result["inputRequests"] = Value::Object(asked.requests);
    }
    if let Some(app_state) = &asked.state {
        let binding = match binds.binding {
            Some(binding) => binding,
            None => match binding_of(principal, &envelope.method, binds.params.as_deref()) {
                Ok(binding) => binding,
                Err(error) => return Reject::Malformed(error).respond(Some(&envelope.id), config),
            },
        };
        match sealer.seal(&binding, app_state, asked.single_use) {
            Ok(token) => result["requestState"] = token.into(),
            Err(Full) => return Reject::Overloaded.respond(Some(&envelope.id), config),
        }
    }
    if let Some(info) = &envelope.server_info {
        result["_meta"] = json!({ META_SERVER_INFO: **info });
    }
    body::result(&envelope.id, &result)
}

//! Reading a 2026-07-28 request for its handler ([`read`]): the
//! [`ModernRequest`] it sees (its `_meta`, and on a retry its input
//! responses and its verified hub), with the tool's mirrored parameters
//! checked on the way.

use super::input_required;
use super::validate;
use crate::http::app::{App, ModernRequest};
use crate::http::input;
use crate::http::input::sealing::{Binding, Opening, Redeem, StateRejection};
use crate::http::observe;
use crate::http::run::hub::Hub;
use crate::http::wire::jsonrpc::{Request, RpcError};
use crate::http::wire::meta::LogLevel;
use crate::http::wire::principal::Principal;
use crate::http::wire::raw_text::RawText;
use crate::http::wire::reject::Reject;
use serde_json::Value;

/// What a handler knows of a request: its `_meta`, and on a retry its input
/// responses and its verified hub; also a tool's mirrored parameters,
/// checked here. Read from the members `fields` borrowed out of the body:
/// only what the handler is given is built. On a retry that carries a
/// hub, the binding it was opened with comes back too; and if that hub
/// is a single-use one of the fleet's record, what [`redeem`] must record
/// before the handler may see it.
pub(super) fn read<A: App>(
    hub: &Hub<A>,
    request: &Request,
    fields: &validate::Fields<'_>,
    parts: &http::request::Parts,
) -> Result<(ModernRequest, Option<Binding>, Option<Redeem>), Reject> {
    let bad = Reject::Malformed;
    let value = |raw: RawText<'_>| -> Result<Value, Reject> {
        serde_json::from_str(raw.get())
            .map_err(|e| bad(RpcError::invalid_params(format!("invalid params: {e}"))))
    };
    let meta = &fields.meta;
    // `check_meta` saw an object here.
    let capabilities = meta
        .capabilities
        .map(value)
        .transpose()?
        .unwrap_or(Value::Null);
    let log_level = match meta.log_level {
        None => None,
        Some(raw) => match raw.string() {
            Some(level) => Some(LogLevel::named(&level).ok_or_else(|| {
                bad(RpcError::invalid_params(format!(
                    "unknown log level: {level}"
                )))
            })?),
            None => {
                return Err(bad(RpcError::invalid_params(
                    "the log level must be a string",
                )))
            }
        },
    };
    let progress_token = meta.progress_token.map(value).transpose()?;
    let params = &fields.params;
    if request.method == "tools/call" {
        if let Some(mirrored) = params
            .name
            .and_then(RawText::string)
            .and_then(|name| hub.app().mirrored_params(&name))
        {
            let arguments = params.arguments.map(value).transpose()?;
            mirrored
                .check(&parts.headers, arguments.as_ref())
                .map_err(bad)?;
        }
    }
    let input = input::INPUT_METHODS.contains(&request.method.as_str());
    let input_responses = match params.input_responses.filter(|_| input) {
        Some(responses) => Some(input::input_responses(value(responses)?).map_err(bad)?),
        // Elsewhere the parameter means nothing: ignored.
        None => None,
    };
    let (state_bytes, binding, redeem) = match params.request_state.filter(|_| input) {
        None => (None, None, None),
        Some(sealed) => {
            let Some(token) = sealed.string() else {
                return Err(bad(RpcError::invalid_params(
                    "requestState must be a string",
                )));
            };
            let principal = Principal::of(parts).map(Principal::as_str);
            let binding =
                input_required::binding_of(principal, &request.method, request.params_text())
                    .map_err(bad)?;
            match hub.sealer.open(&token, &binding) {
                Ok(Opening::Opened(opened)) => {
                    observe::retry_link::link(opened.link.as_ref());
                    (Some(opened.state), Some(binding), None)
                }
                Ok(Opening::Redeem(redeem)) => (None, Some(binding), Some(redeem)),
                Err(cause) => return Err(refused(hub, cause)),
            }
        }
    };
    let modern = ModernRequest {
        method: request.method.clone().into_cow(),
        capabilities,
        log_level,
        progress_token,
        input_responses,
        request_state: state_bytes,
        call: None,
    };
    Ok((modern, binding, redeem))
}

/// Records a fleet's single-use hub as used (the one step of a request
/// that waits for the fleet's record, taken only by a retry that carries
/// such a hub) and gives it to the handler's view; or the refusal.
pub(super) async fn redeem<A: App>(
    hub: &Hub<A>,
    redeem: Redeem,
    modern: &mut ModernRequest,
) -> Result<(), Reject> {
    match hub.sealer.redeem(redeem).await {
        Ok(opened) => {
            observe::retry_link::link(opened.link.as_ref());
            modern.request_state = Some(opened.state);
            Ok(())
        }
        Err(cause) => Err(refused(hub, cause)),
    }
}

/// A refused hub: counted by cause, and answered 400 (`-32602`), or 503
/// with `Retry-After` when the fleet's record could not say (the hub is
/// still unused: the same retry may succeed later).
fn refused<A: App>(hub: &Hub<A>, cause: StateRejection) -> Reject {
    hub.counters.state_rejected(cause);
    tracing::debug!(%cause, "requestState refused");
    match cause {
        StateRejection::Unavailable => Reject::BusUnavailable(STATE_NEEDS_BUS),
        _ => Reject::RequestStateInvalid,
    }
}

/// Why a single-use hub is refused while the fleet's record is away.
const STATE_NEEDS_BUS: &str =
    "single-use requestStates are recorded through the fleet's bus, which is down";

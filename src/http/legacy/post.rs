//! `POST` in the session era: one JSON-RPC message, in the session its
//! `MCP-Session-Id` names, run by the application and answered with JSON,
//! 202 or an SSE stream (`respond.rs`); an `initialize` without a session
//! id opens a session (`initialize.rs`).

use super::initialize;
use super::respond::respond;
use crate::http::app::App;
use crate::http::observe;
use crate::http::run::admission;
use crate::http::run::hub::Hub;
use crate::http::run::opening;
use crate::http::wire::body::{self, Body, SendBody};
use crate::http::wire::headers;
use crate::http::wire::jsonrpc::{self, Message, RpcError};
use crate::http::wire::message;
use crate::http::wire::one_walk::Find;
use crate::http::wire::principal::Principal;
use crate::http::wire::reject::Reject;
use crate::http::wire::request_headers::PostHeaders;
use http::request::Parts;
use http::{Response, StatusCode};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

/// Serves one `POST` at legacy version `version` (`headers`: what the
/// router found of its headers).
#[allow(clippy::manual_async_fn)] // on purpose: see `modern::serve::serve`
pub(super) fn serve<'a, A, B>(
    hub: &'a Arc<Hub<A>>,
    request: http::Request<B>,
    version: &'static str,
    headers: PostHeaders,
) -> impl Future<Output = Response<Body>> + 'a
where
    A: App,
    B: SendBody,
{
    async move {
        let config = &hub.config;
        let (parts, body) = request.into_parts();
        let message = match message::read(config, headers, body, Find::Message).await {
            Ok((message, _)) => message,
            Err(reject) => return reject.respond(None, config),
        };
        // The request's span and timer from here on, at the version it is
        // served at: an `initialize`'s is the one it negotiates.
        let asked = match &message {
            Message::Request(request) if request.method == "initialize" => {
                Some(initialize::Asked::of(request))
            }
            _ => None,
        };
        let served_at = asked.as_ref().map_or(version, initialize::Asked::served_at);
        let span = observe::span::open(&message, served_at, &parts);
        let timer = observe::span::timer(&hub.durations, &message, served_at);
        let answering = pin!(answer(hub, parts, message, version, asked));
        let response = observe::span::polled_in(&span, answering).await;
        span.in_scope(|| observe::span::finish(timer, response))
    }
}

/// Answers one message of the session era, read (`asked`: what an
/// `initialize`'s params say, read already).
#[allow(clippy::manual_async_fn)] // on purpose: see `modern::serve::serve`
fn answer<'a, A: App>(
    hub: &'a Arc<Hub<A>>,
    parts: Parts,
    message: Message,
    version: &'static str,
    asked: Option<initialize::Asked>,
) -> impl Future<Output = Response<Body>> + 'a {
    async move {
        let config = &hub.config;
        let id = match opening::admit(hub, &message) {
            Ok(id) => id,
            Err(refused) => return refused,
        };
        // Before the session is looked up, on purpose: the token is judged
        // before what the request names (a 403 or 429 says nothing of whether
        // a session id exists), and requests naming unknown sessions count
        // against the principal's rate like any other.
        if let Err(reject) = opening::authorize(hub, &parts, &message).await {
            return reject.respond(id.as_ref(), config);
        }
        let session_header = parts.headers.get(headers::name::SESSION_ID).cloned();
        let modern_meta = match &asked {
            Some(asked) => asked.modern_meta,
            None => carries_modern_meta(&message),
        };
        if session_header.is_none() && modern_meta {
            // A 2026-07-28 request that forgot its version header: a modern
            // error, so that a dual-era client does not fall back to
            // `initialize` (the transport page: the header is required).
            let error = RpcError::new(
                jsonrpc::RpcError::HEADER_MISMATCH,
                "Header mismatch: MCP-Protocol-Version header is required",
            );
            return Reject::Malformed(error).respond(id.as_ref(), config);
        }
        match (session_header, message) {
            (None, Message::Request(request)) if request.method == "initialize" => {
                let version = match asked {
                    Some(asked) => asked.version,
                    None => initialize::Asked::of(&request).version,
                };
                initialize::open(hub, request, version, parts).await
            }
            (None, _) => Reject::MissingSessionId.respond(None, config),
            (Some(_), message) if message.is_initialize() => {
                Reject::InitializeInSession.respond(None, config)
            }
            (Some(header), message) => {
                let session = match super::find(hub, header.as_bytes(), Principal::of(&parts)) {
                    Ok(session) => session,
                    Err(reject) => return reject.respond(None, config),
                };
                // Counted in flight from here, so the reaper cannot take the
                // session while the handler is being scheduled.
                let max = config.max_requests_per_session;
                let request = match admission::begin(&session, max) {
                    Ok(request) => request,
                    Err(reject @ Reject::TooManyRequests) => {
                        return reject.respond(id.as_ref(), config)
                    }
                    Err(reject) => return reject.respond(None, config),
                };
                match &message {
                    Message::Notification(note) if note.method == "notifications/cancelled" => {
                        request.running.cancel_notified(note);
                    }
                    // An answer to one of the session's own requests goes to
                    // the handler that asked, not to the application.
                    Message::Response(response) if request.asks.answer(response) => {
                        return body::status(StatusCode::ACCEPTED);
                    }
                    // The session hears the resource's updates from now on (the
                    // application answers the request as before), unless a bound
                    // refuses it here.
                    Message::Request(call) => {
                        let subscribed = super::subscriptions::subscribe(
                            &hub.listeners,
                            || request.id(),
                            &request,
                            call,
                            config,
                        );
                        if let Err(reject) = subscribed {
                            return reject.respond(id.as_ref(), config);
                        }
                    }
                    _ => {}
                }
                let outcome = super::run(hub, request, message, version, parts).await;
                respond(outcome, id.as_ref(), &hub.sse, config)
            }
        }
    }
}

/// Whether a message carries the per-request `_meta` of 2026-07-28 (its
/// protocol version): a modern request, whatever its headers say.
fn carries_modern_meta(message: &Message) -> bool {
    let Message::Request(request) = message else {
        return false;
    };
    // Only the request's own `_meta.protocolVersion` is looked at; the rest
    // of the params is skipped, not built.
    #[derive(serde::Deserialize)]
    struct MetaParams {
        #[serde(rename = "_meta", default)]
        meta: Option<initialize::VersionMeta>,
    }
    request
        .params_as::<Option<MetaParams>>()
        .ok()
        .flatten()
        .is_some_and(|params| initialize::VersionMeta::names_it(params.meta))
}

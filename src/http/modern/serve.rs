//! One 2026-07-28 request served ([`serve`]): its message read and
//! checked, the removed methods and `server/discover` answered by the layer,
//! `subscriptions/listen` opened, anything else handed to the application
//! and its outcome answered.

use super::envelope::Envelope;
use super::input_required::Binds;
use super::respond::{AbortOnDrop, Answering};
use super::scope::Standalone;
use super::{request, respond, validate};
use crate::http::access::validity::{Term, Validity};
use crate::http::app::{App, CallText, Context, ModernRequest};
use crate::http::input;
use crate::http::observe;
use crate::http::observe::durations::OperationTimer;
use crate::http::run::dispatch;
use crate::http::run::hub::Hub;
use crate::http::run::opening;
use crate::http::tasks::{self, TaskChoice};
use crate::http::wire::answered::within;
use crate::http::wire::body::{self, Body, SendBody};
use crate::http::wire::jsonrpc::{Message, Request};
use crate::http::wire::message;
use crate::http::wire::one_walk::{Find, MemberExtents};
use crate::http::wire::principal::Principal;
use crate::http::wire::protocol::MODERN_VERSION;
use crate::http::wire::raw_text::RawText;
use crate::http::wire::reject::Reject;
use crate::http::wire::request_headers::{McpHeaders, PostHeaders};
use http::request::Parts;
use http::Response;
use std::borrow::Cow;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

/// The methods 2026-07-28 removed (and the tasks extension's), answered
/// 404 with `-32601` whatever the application serves.
const REMOVED: [&str; 7] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "tasks/result",
    "tasks/list",
];

/// Serves one 2026-07-28 request: `POST` only (there is no session to
/// `GET` or `DELETE`).
///
/// A function returning an async block, not an `async fn`, as is every
/// future a request is served through (`router::route` and
/// `authenticated`, `answer`, `dispatch::run_here`, the legacy era's
/// `serve`s, `answer` and `open`): an `async fn` moves each argument into a
/// local of its own at its first poll, and its future keeps room for both
/// (the request's 264 bytes here; `answer`'s parts and message, 296); the
/// block uses each where it captured it.
#[allow(clippy::manual_async_fn)] // on purpose: the doc says why
pub(crate) fn serve<'a, A, B>(
    hub: &'a Arc<Hub<A>>,
    request: http::Request<B>,
    post: Option<PostHeaders>,
    mcp: &'a McpHeaders,
) -> impl Future<Output = Response<Body>> + 'a
where
    A: App,
    B: SendBody,
{
    async move {
        let config = &hub.config;
        // What the router found of a `POST`'s headers; `None` for any
        // other method.
        let Some(headers) = post else {
            return Reject::MethodNotAllowed("POST").respond(None, config);
        };
        let (parts, body) = request.into_parts();
        let (message, found) = match message::read(config, headers, body, Find::ParamMembers).await
        {
            Ok(read) => read,
            Err(reject) => return reject.respond(None, config),
        };
        // The request's span from here on; its timer from when its name is read.
        let span = observe::span::open(&message, MODERN_VERSION, &parts);
        let mut timer = None;
        let response = {
            let answering = pin!(answer(hub, parts, mcp, message, found, &mut timer));
            observe::span::polled_in(&span, answering).await
        };
        span.in_scope(|| observe::span::finish(timer, response))
    }
}

/// Answers one 2026-07-28 message, read (with where its params' members
/// are, if the read found them; `mcp`: its `Mcp-Method` and `Mcp-Name`, as
/// the router found them); `timer` gets the request's timer once its name
/// is read (before any refusal).
#[allow(clippy::manual_async_fn)] // on purpose: see `serve`
fn answer<'a, A: App>(
    hub: &'a Arc<Hub<A>>,
    parts: Parts,
    mcp: &'a McpHeaders,
    message: Message,
    extents: Option<MemberExtents>,
    timer: &'a mut Option<OperationTimer>,
) -> impl Future<Output = Response<Body>> + 'a {
    async move {
        let config = &hub.config;
        let fields = validate::fields(&message, extents.as_ref());
        if let Some(method) = message.method() {
            let name = fields.as_ref().ok().and_then(|f| f.params.name);
            let name = name.map(RawText::get);
            *timer = Some(observe::span::timer_named(
                &hub.durations,
                method,
                name,
                MODERN_VERSION,
            ));
        }
        let id = match opening::admit(hub, &message) {
            Ok(id) => id,
            Err(refused) => return refused,
        };
        // "Server Validation", in the order the conformance suite pins: the
        // per-request fields, then the headers against the body. The members
        // both read (and the handler's view below) are read out of the body once.
        let fields = match fields.and_then(|fields| {
            validate::check_meta(&message, &fields)?;
            validate::check_headers(&parts.headers, mcp, &message, &fields)?;
            Ok(fields)
        }) {
            Ok(fields) => fields,
            Err(error) => return Reject::Malformed(error).respond(id.as_ref(), config),
        };
        if let Err(reject) = opening::authorize(hub, &parts, &message).await {
            return reject.respond(id.as_ref(), config);
        }
        let Message::Request(request) = &message else {
            // Notifications (this revision defines none over HTTP) are
            // accepted and passed on; responses were refused above.
            let ctx = Context::for_modern(
                parts,
                Default::default(),
                ModernRequest::of_notification(&message),
            );
            let scope = standalone(hub, None);
            let choice = TaskChoice::Inline {
                refuse_required: true,
            };
            let handler = pin!(dispatch::handling(&hub.runner, ctx, message, choice));
            return match dispatch::run_here(&hub.runner, scope, handler)
                .await
                .outcome
            {
                dispatch::Dispatched::Failed => {
                    Reject::HandlerFailed { in_session: false }.respond(None, config)
                }
                _ => body::status(http::StatusCode::ACCEPTED),
            };
        };
        if REMOVED.contains(&request.method.as_str()) {
            return Reject::NoSuchMethod(request.method.to_string()).respond(id.as_ref(), config);
        }
        let discovery = &hub.discovery;
        if request.method == "server/discover" {
            return body::result(&request.id, &discovery.answer);
        }
        if request.method == "subscriptions/listen" {
            return listen(hub, request, &parts);
        }
        let (mut modern, opened, redeem) = match request::read(hub, request, &fields, &parts) {
            Ok(read) => read,
            Err(reject) => return reject.respond(id.as_ref(), config),
        };
        if let Some(redeem) = redeem {
            if let Err(reject) = request::redeem(hub, redeem, &mut modern).await {
                return reject.respond(id.as_ref(), config);
            }
        }
        // What a sealed answer will be bound to: the binding the retry's hub
        // was opened with, else (only if the application seals a hub) one
        // computed from the params' text kept here; which is also where the
        // handler reads a call's name and arguments, as the checks read them.
        let kept = input::INPUT_METHODS
            .contains(&request.method.as_str())
            .then(|| request.params.clone())
            .flatten();
        if let (Some(params), "tools/call" | "prompts/get") = (&kept, request.method.as_str()) {
            modern.call = CallText::new(
                params,
                fields.params.name.map(RawText::get),
                fields.params.arguments.map(RawText::get),
            );
        }
        let binds = Binds {
            binding: opened,
            params: kept,
        };
        let envelope = Envelope {
            id: request.id.clone(),
            method: request.method.clone().into_cow(),
            log_level: modern.log_level,
            server_info: discovery.server_info.clone(),
        };
        let owner = Principal::of(&parts).cloned();
        let declares_tasks = modern.declares_extension(tasks::TASKS_EXTENSION);
        if let Some(tasks) = hub
            .tasks
            .as_ref()
            .filter(|_| tasks::METHODS.contains(&&*request.method))
        {
            return match tasks::serve_method(tasks, request, declares_tasks, owner.as_ref()) {
                Ok(result) => body::result(&envelope.id, &envelope.result(result)),
                Err(reject) => reject.respond(id.as_ref(), config),
            };
        }
        // Whether a `Reply::Task` may become a task: a `tools/call` whose
        // client declared the extension on it, to a manager serving it.
        let takes_task = declares_tasks && request.method == "tools/call";
        let choice = match hub.tasks.is_some() && takes_task {
            true => TaskChoice::Task,
            false => TaskChoice::Inline {
                refuse_required: true,
            },
        };
        // The tool a task's span names, read only for a call that may become
        // a task.
        let tool = matches!(choice, TaskChoice::Task)
            .then(|| fields.params.name.and_then(RawText::string))
            .flatten()
            .map(|name| within(&name, tasks::TOOL_BYTES).into());
        let ctx = Context::for_modern(parts, Default::default(), modern);
        let scope = standalone(hub, Some(Cow::Borrowed(&envelope)));
        // The work runs here until it answers (dropping this future, the
        // client gone, drops it and cancels its token); what goes on past the
        // answer (a streamed reply's pump) is held by the SSE body, whose drop
        // aborts it.
        let handler = pin!(dispatch::handling(&hub.runner, ctx, message, choice));
        let settled = dispatch::run_here(&hub.runner, scope, handler).await;
        let cancel = settled
            .spawned
            .map(|task| AbortOnDrop(task, settled.cancel));
        let answering = Answering {
            envelope,
            binds,
            owner,
            cancel,
            tool,
            takes_task,
        };
        respond::respond(hub, settled.outcome, answering)
    }
}

/// `subscriptions/listen`: the listen stream, acknowledgement first (see
/// `crate::http::listen`); refused while the node drains or shuts down, or
/// while the fleet's bus is down (a listener would miss what other nodes
/// publish).
fn listen<A: App>(hub: &Hub<A>, request: &Request, parts: &Parts) -> Response<Body> {
    let config = &hub.config;
    let id = Some(&request.id);
    let closing = || {
        if hub.phase.is_shutting_down() {
            Some(crate::Reason::Shutdown)
        } else if hub.phase.is_draining() {
            Some(crate::Reason::Drained)
        } else if !hub.publisher.bus_ready() {
            Some(crate::Reason::Unavailable)
        } else {
            None
        }
    };
    match closing() {
        Some(crate::Reason::Shutdown) => return Reject::ShuttingDown.respond(id, config),
        Some(crate::Reason::Unavailable) => {
            return Reject::BusUnavailable(LISTEN_NEEDS_BUS).respond(id, config)
        }
        Some(_) => return Reject::Draining.respond(id, config),
        None => {}
    }
    let owner = Principal::of(parts).cloned();
    // The stream lasts as long as the credential it is opened with.
    let term = Term::of(Validity::of(parts));
    let narrow = |filter| hub.app().listen_filter(filter, parts);
    match hub.listeners.open(
        &request.id,
        request.params_text(),
        owner,
        term,
        closing,
        narrow,
    ) {
        Ok(body) => hub.sse.listen(body),
        Err(reject) => reject.respond(id, config),
    }
}

/// Why a listen is refused while the fleet's bus is down.
const LISTEN_NEEDS_BUS: &str = "listen streams need the fleet's bus, which is down";

/// The scope of a 2026-07-28 request's work, its streamed answer through
/// `envelope`.
fn standalone<'e, A: App>(hub: &Hub<A>, envelope: Option<Cow<'e, Envelope>>) -> Standalone<'e> {
    Standalone {
        envelope,
        limits: hub.queue_limits(),
        counters: Arc::clone(&hub.counters),
    }
}

//! `POST`: one JSON-RPC message, checked against the transport's rules, run
//! by the application (on the connection's task if it answers at once, in a
//! task of its own if not) and answered with JSON, 202 or an SSE stream; an
//! `initialize` without a session id creates the session.

use super::app::{App, Context, HandlerError, Reply};
use super::auth::Principal;
use super::body::{self, Body};
use super::counters::HttpCounters;
use super::drain;
use super::entry::Entry;
use super::jsonrpc::{self, Message, Request, RpcError};
use super::manager::Inner;
use super::outlet::Outlet;
use super::request_body::{self, BodyError};
use super::responses::{
    body_timeout, internal_error, not_found, overloaded, session_ended, shutting_down, too_large,
    too_many_requests, unavailable,
};
use super::resume;
use super::rules::{self, Version};
use super::sse::Streams;
use super::work::Cancelled;
use super::SessionManager;
use crate::{InFlight, NotBegun, Reason, Session};
use futures_util::future::OptionFuture;
use futures_util::{FutureExt, StreamExt};
use http::header::{HeaderValue, CONTENT_LENGTH};
use http::request::Parts;
use http::{Response, StatusCode};
use hyper::body::Body as HttpBody;
use serde_json::Value;
use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub(super) enum Head {
    Reply(Reply),
    Stream(Arc<Outlet>),
    /// The handler failed; the session was terminated with `Failed`.
    Failed,
    /// The work stopped before it answered.
    Stopped(Stop),
}

/// Counts one handler in `sessionreg_http_handlers_in_flight` while alive.
struct Counted<'a>(&'a HttpCounters);

impl<'a> Counted<'a> {
    fn new(counters: &'a HttpCounters) -> Self {
        counters.handler_started();
        Counted(counters)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.handler_finished();
    }
}

impl<A: App> SessionManager<A> {
    pub(super) async fn post<B>(
        &self,
        request: http::Request<B>,
        version: Version,
    ) -> Response<Body>
    where
        B: HttpBody + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        let headers = &parts.headers;
        if !(rules::accepts(headers, "application/json")
            && rules::accepts(headers, "text/event-stream"))
        {
            return body::refuse(
                StatusCode::NOT_ACCEPTABLE,
                jsonrpc::SERVER_ERROR,
                "Accept must list application/json and text/event-stream",
            );
        }
        if !rules::is_json(headers) {
            return body::refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                jsonrpc::SERVER_ERROR,
                "Content-Type must be application/json",
            );
        }
        let limits = &self.inner.config.limits;
        let declared = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let read = request_body::read(
            body,
            declared,
            self.inner.config.max_body,
            limits.body_read_timeout,
        )
        .await;
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(BodyError::TooLarge) => return too_large(),
            Err(BodyError::TimedOut) => return body_timeout(),
            Err(BodyError::Batch) => {
                return body::refuse(
                    StatusCode::BAD_REQUEST,
                    jsonrpc::INVALID_REQUEST,
                    "JSON-RPC batches are not supported: send one message per POST",
                )
            }
            Err(BodyError::Unreadable) => {
                return body::refuse(
                    StatusCode::BAD_REQUEST,
                    jsonrpc::SERVER_ERROR,
                    "could not read the request body",
                )
            }
        };
        let message = match Message::from_slice(&bytes) {
            Ok(message) => message,
            Err(error) => return body::rpc_error(StatusCode::BAD_REQUEST, None, &error),
        };
        // The message holds copies of what it needs (params as raw text):
        // let the body go before the handler runs, however long.
        drop(bytes);
        // Checked here, and the handler spawned (if it must be) in the same
        // synchronous stretch of this poll: see `admission.rs`.
        if !self.inner.tasks.has_room(limits.max_handlers) {
            return overloaded(&self.inner, message.request_id().as_ref());
        }
        if version == Version::Stateless {
            return self.stateless(parts, message).await;
        }
        let session_header = parts.headers.get(rules::SESSION_HEADER).cloned();
        match (session_header, message) {
            (None, Message::Request(request)) if request.method == "initialize" => {
                let requested = match check_initialize(&request) {
                    Ok(requested) => requested,
                    Err(error) => {
                        return body::rpc_error(StatusCode::BAD_REQUEST, Some(&request.id), &error)
                    }
                };
                self.initialize(request, &requested, version, parts).await
            }
            (None, _) => body::refuse(
                StatusCode::BAD_REQUEST,
                jsonrpc::SERVER_ERROR,
                "missing MCP-Session-Id (only initialize starts a session)",
            ),
            (Some(_), message) if message.is_initialize() => body::refuse(
                StatusCode::BAD_REQUEST,
                jsonrpc::INVALID_REQUEST,
                "initialize must not carry an MCP-Session-Id",
            ),
            (Some(header), message) => {
                let session = match self.find(header.as_bytes(), Principal::of(&parts)) {
                    Ok(session) => session,
                    Err(response) => return response,
                };
                // Counted in flight from here, so the reaper cannot take the
                // session while the handler is being scheduled; refused if
                // it ended (or is being expired) since the lookup, or if it
                // has as many requests in flight as it may (the check and
                // the count are one atomic step in the registry).
                let id = message.request_id();
                let max = self.inner.config.limits.max_requests_per_session;
                let request = match session.begin_at_most(max as u64) {
                    Ok(request) => request,
                    Err(NotBegun::Full) => return too_many_requests(&self.inner, id.as_ref()),
                    Err(_) => return not_found(),
                };
                if let Message::Notification(note) = &message {
                    if note.method == "notifications/cancelled" {
                        cancel_named(&request, note);
                    }
                }
                let started = self.run(Some(request), message, version, parts).await;
                self.answer(started.head, id.as_ref()).await
            }
        }
    }

    async fn initialize(
        &self,
        request: Request,
        requested: &str,
        version: Version,
        parts: Parts,
    ) -> Response<Body> {
        let inner = &self.inner;
        if inner.shutting_down.load(Ordering::SeqCst) {
            return shutting_down();
        }
        if inner.drain.is_on() {
            return unavailable(inner, &request.id, drain::REFUSAL);
        }
        let opened =
            std::panic::catch_unwind(AssertUnwindSafe(|| inner.app.open(&request, &parts)));
        let state = match opened {
            Ok(Ok(state)) => state,
            Ok(Err(error)) => {
                return body::rpc_error(StatusCode::BAD_REQUEST, Some(&request.id), &error)
            }
            Err(panic) => {
                tracing::error!(panic = panic_message(&*panic), "App::open panicked");
                return internal_error(Some(&request.id));
            }
        };
        let streams = Streams::new(
            inner.config.log_bounds.clone(),
            inner.config.queue_limits(),
            Arc::clone(&inner.counters),
        );
        let entry = Entry::new(state, streams, Principal::of(&parts).cloned());
        // Created with this request already in flight: it cannot idle out
        // before its handler has even started.
        let Ok(first) = inner.registry.insert_in_flight(entry) else {
            return unavailable(inner, &request.id, "too many sessions; retry later");
        };
        let id = first.id();
        // The Debug form: index, generation, node; never the secret.
        tracing::Span::current().record("session", tracing::field::debug(id));
        if inner.shutting_down.load(Ordering::SeqCst) {
            // Inserted while `shutdown` swept: end it ourselves.
            let _ = inner.registry.terminate_session(&first, Reason::Shutdown);
            return shutting_down();
        }
        let request_id = request.id.clone();
        // The version the session will speak (no header on initialize:
        // the body asks), e.g. for the priming event of a streamed answer.
        let version = match version {
            Version::Sessions(_) => Version::Sessions(rules::negotiate(Some(requested))),
            stateless => stateless,
        };
        let started = self
            .run(Some(first), Message::Request(request), version, parts)
            .await;
        let mut response = match started.head.await {
            Ok(Head::Reply(Reply::Result(result))) => body::json(
                StatusCode::OK,
                &jsonrpc::result_message(&request_id, result),
            ),
            Ok(Head::Stream(outlet)) => self.sse(outlet),
            Ok(Head::Reply(Reply::Error(error))) => {
                // The application rejected the first request: the session
                // ends, and its id is never shown.
                let _ = inner.registry.terminate(&id, Reason::Rejected);
                return body::rpc_error(StatusCode::BAD_REQUEST, Some(&request_id), &error);
            }
            Ok(Head::Reply(Reply::Stream(_) | Reply::Accepted)) => {
                let _ = inner.registry.terminate(&id, Reason::Rejected);
                return internal_error(Some(&request_id));
            }
            Ok(Head::Failed) => return internal_error(Some(&request_id)),
            Ok(Head::Stopped(stop)) => {
                // Ended under it, or timed out: either way no session.
                let _ = inner.registry.terminate(&id, Reason::Rejected);
                return self.stopped(stop, Some(&request_id));
            }
            Err(_) => return shutting_down(),
        };
        let mut text = [0u8; 32];
        let value =
            HeaderValue::from_str(id.encode(&mut text)).expect("session ids are visible ASCII");
        response.headers_mut().insert(rules::SESSION_HEADER, value);
        response
    }

    /// Runs the application on one message, holding the request's
    /// in-flight guard (its place under the session's cap) for as long
    /// as its work (the handler, then its SSE reply) runs.
    ///
    /// The work is first polled here, on the connection's task: most
    /// handlers answer at once, and then no task is spawned, no timer set,
    /// no other worker thread woken. Work still pending after that poll
    /// goes on in a task of its own, counted against the manager's cap on
    /// handler tasks, so a client that disconnects does not cancel it (the
    /// spawned task's first poll registers its own wakers); its abort
    /// handle is returned, for requests that a disconnect must cancel
    /// (2026-07-28). From then on it is listed in its session's
    /// [`Work`](super::work::Work) by JSON-RPC id, and it stops when its
    /// token is cancelled (the session's end, `notifications/cancelled`) or
    /// the handler timeout passes: its future is dropped, and the request
    /// is answered with the [`Stop`].
    pub(super) async fn run(
        &self,
        guard: Option<InFlight<Entry<A::Session>>>,
        message: Message,
        version: Version,
        request: Parts,
    ) -> Started {
        let (head_tx, head_rx) = oneshot::channel();
        let inner = Arc::clone(&self.inner);
        let cancel = match guard.as_deref() {
            Some(session) => session.work.request(),
            None => CancellationToken::new(),
        };
        let token = cancel.clone();
        let task = async move {
            let _counted = Counted::new(&inner.counters);
            // The guard derefs to the session and lives to the end of this
            // task: the application gets the one clone it must own.
            let session = guard.as_deref();
            let request_id = message.request_id();
            let mut head_tx = Some(head_tx);
            let mut out = None;
            let stop = {
                let work = work(
                    &inner,
                    session,
                    message,
                    version,
                    request,
                    &cancel,
                    &mut head_tx,
                    &mut out,
                );
                tokio::pin!(work);
                let first = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await;
                if first.is_ready() {
                    None
                } else {
                    let _listed = match (session, &request_id) {
                        (Some(s), Some(id)) => {
                            Some(s.work.list(jsonrpc::id_key(id), cancel.clone()))
                        }
                        _ => None,
                    };
                    let limit = inner.config.limits.handler_timeout;
                    let deadline = limit.and_then(|l| tokio::time::Instant::now().checked_add(l));
                    let timeout = OptionFuture::from(deadline.map(tokio::time::sleep_until));
                    tokio::select! {
                        biased;
                        () = &mut work => None,
                        () = cancel.cancelled() => Some(match session.and_then(|s| s.work.ended()) {
                            Some(reason) => Stop::SessionEnded(reason),
                            None => Stop::Cancelled,
                        }),
                        Some(()) = timeout => Some(Stop::TimedOut(limit.unwrap_or_default())),
                    }
                }
                // The work is dropped here: the handler's future where it
                // waits, or its reply stream.
            };
            if let Some(stop) = stop {
                // For work the handler handed elsewhere (a timeout has not
                // cancelled the token yet).
                cancel.cancel();
                if let Stop::TimedOut(limit) = stop {
                    tracing::warn!(
                        limit_ms = limit.as_millis() as u64,
                        "handler timed out; its work is dropped"
                    );
                }
                match (head_tx.take(), out.take()) {
                    (Some(head), _) => {
                        let _ = head.send(Head::Stopped(stop));
                    }
                    (None, Some(mut out)) => {
                        // Streaming already: a timed-out request still gets
                        // its error, a cancelled one nothing more.
                        if let (Stop::TimedOut(_), Some(id)) = (stop, &request_id) {
                            out.try_send(&jsonrpc::error_message(Some(id), &stop.error()));
                        }
                        out.finish();
                    }
                    (None, None) => {}
                }
            }
            // Whatever borrowed the session goes before its guard.
            drop(out);
            drop(guard);
        };
        let mut task = Box::pin(task.in_current_span());
        let first = std::future::poll_fn(|cx| Poll::Ready(task.as_mut().poll(cx))).await;
        let spawned = first.is_pending().then(|| {
            let counted = self.inner.tasks.enter();
            tokio::spawn(async move {
                task.await;
                drop(counted);
            })
            .abort_handle()
        });
        Started {
            head: head_rx,
            task: spawned,
            cancel: token,
        }
    }

    /// Turns a handler's outcome into the response to a non-initialize POST.
    async fn answer(&self, head: oneshot::Receiver<Head>, id: Option<&Value>) -> Response<Body> {
        self.reply(head.await, id)
    }

    /// The response for a handler's outcome (`Err`: the task was dropped).
    pub(super) fn reply(
        &self,
        head: Result<Head, oneshot::error::RecvError>,
        id: Option<&Value>,
    ) -> Response<Body> {
        match head {
            Ok(Head::Failed) => internal_error(id),
            Ok(Head::Stream(outlet)) => self.sse(outlet),
            Ok(Head::Stopped(stop)) => self.stopped(stop, id),
            Ok(Head::Reply(reply)) => match (id, reply) {
                (None, _) => body::status(StatusCode::ACCEPTED),
                (Some(id), Reply::Result(result)) => {
                    body::json(StatusCode::OK, &jsonrpc::result_message(id, result))
                }
                (Some(id), Reply::Error(error)) => {
                    body::json(StatusCode::OK, &jsonrpc::error_message(Some(id), &error))
                }
                (Some(id), Reply::Accepted | Reply::Stream(_)) => body::json(
                    StatusCode::OK,
                    &jsonrpc::error_message(
                        Some(id),
                        &RpcError::new(jsonrpc::INTERNAL_ERROR, "the handler gave no response"),
                    ),
                ),
            },
            // The task was dropped unfinished: the runtime is going away.
            Err(_) => shutting_down(),
        }
    }

    /// The answer to a request whose work stopped before it answered.
    fn stopped(&self, stop: Stop, id: Option<&Value>) -> Response<Body> {
        match stop {
            Stop::SessionEnded(Reason::Shutdown) => shutting_down(),
            Stop::SessionEnded(_) => session_ended(id),
            // No response for a cancelled request (2025-11-25,
            // Cancellation): its stream ends with nothing in it.
            Stop::Cancelled => self.sse(Outlet::ended(Arc::clone(&self.inner.counters))),
            Stop::TimedOut(_) => match id {
                Some(id) => body::json(
                    StatusCode::OK,
                    &jsonrpc::error_message(Some(id), &stop.error()),
                ),
                None => body::status(StatusCode::ACCEPTED),
            },
        }
    }
}

/// What [`SessionManager::run`] started: where its outcome arrives, the
/// task it spawned (if it did), and the request's cancellation token.
pub(super) struct Started {
    pub(super) head: oneshot::Receiver<Head>,
    pub(super) task: Option<tokio::task::AbortHandle>,
    pub(super) cancel: CancellationToken,
}

/// Why a request's work stopped before it was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// Its session ended, for this reason (any end path).
    SessionEnded(Reason),
    /// The client cancelled it (`notifications/cancelled`).
    Cancelled,
    /// It ran past the handler timeout (this long).
    TimedOut(std::time::Duration),
}

impl Stop {
    /// The JSON-RPC error a timed-out request is answered with (-32603,
    /// as for any other failure to answer; the data says the limit).
    fn error(self) -> RpcError {
        let mut error = RpcError::new(
            jsonrpc::INTERNAL_ERROR,
            "the request ran past the server's handler timeout",
        );
        if let Stop::TimedOut(limit) = self {
            error.data = Some(serde_json::json!({ "timeoutMs": limit.as_millis() as u64 }));
        }
        error
    }
}

/// A request's work: the application's handler, then, for a streamed
/// reply, the pump that carries it. Its outcome goes to `head` (taken when
/// sent); a streamed reply's [`Out`] is kept in `out` while it is pumped,
/// so that a stop can still end it properly.
#[allow(clippy::too_many_arguments)]
async fn work<'a, A: App>(
    inner: &Inner<A>,
    session: Option<&'a Session<Entry<A::Session>>>,
    message: Message,
    version: Version,
    request: Parts,
    cancel: &CancellationToken,
    head: &mut Option<oneshot::Sender<Head>>,
    out: &mut Option<Out<'a>>,
) {
    let is_request = matches!(message, Message::Request(_));
    // A request whose SSE reply is resumable gets its stream's number now,
    // so the handler can close the connection early
    // (`Context::close_sse_stream`).
    let logged = session
        .filter(|_| is_request && inner.config.event_log > 0 && resume::resumes(version))
        .map(|s| s.streams.next_stream());
    let ctx = Context {
        session: session.cloned(),
        version,
        request,
        stream: logged,
        cancel: cancel.clone(),
    };
    let outcome = AssertUnwindSafe(inner.app.handle(ctx, message))
        .catch_unwind()
        .await;
    let send = |head: &mut Option<oneshot::Sender<Head>>, what: Head| match head.take() {
        Some(tx) => tx.send(what).is_ok(),
        None => false,
    };
    match outcome {
        Ok(Ok(Reply::Stream(stream))) if is_request => {
            let opened = match (session, logged) {
                (Some(s), Some(number)) => {
                    // Resumable: pumped (and logged) even if this
                    // connection goes, for the client to resume.
                    let retry = inner.config.sse_retry;
                    let outlet = s.streams.lock().open_post(number, Some(retry));
                    send(head, Head::Stream(outlet));
                    Some(Out::logged(&s.streams, number))
                }
                _ => {
                    let outlet =
                        Outlet::new(inner.config.queue_limits(), Arc::clone(&inner.counters));
                    let number = session.map_or(1, |s| s.streams.next_stream());
                    let direct = Out::direct(Arc::clone(&outlet), number);
                    // Nobody waits for it any more: nothing to pump.
                    send(head, Head::Stream(outlet)).then_some(direct)
                }
            };
            if let Some(opened) = opened {
                let out = out.insert(opened);
                pump(inner, session, stream, out).await;
                out.finish();
            }
        }
        Ok(Ok(reply)) => {
            if let (Some(s), Some(number)) = (session, logged) {
                // Answered without a stream: a close the handler asked for
                // has nothing to close.
                s.streams.lock().forget(number);
            }
            let reply = if is_request { reply } else { Reply::Accepted };
            send(head, Head::Reply(reply));
        }
        Ok(Err(error)) => {
            fail(inner, session, &error);
            send(head, Head::Failed);
        }
        Err(panic) => {
            let error = HandlerError::msg(format!("handler panicked: {}", panic_message(&*panic)));
            fail(inner, session, &error);
            send(head, Head::Failed);
        }
    }
}

/// Where a reply stream's messages go.
struct Out<'a> {
    to: To<'a>,
    /// Set once the stream has been finished (by the pump, a stop, or the
    /// drop of a task dropped unfinished).
    finished: bool,
}

enum To<'a> {
    /// Straight to the one connection; the stream ends when it goes (or
    /// stalls: a client that takes nothing for the stall timeout).
    Direct {
        outlet: Arc<Outlet>,
        number: u64,
        seq: u64,
    },
    /// Through the session's log of stream `number`, to whichever
    /// connection carries it now (none while the client reconnects).
    Logged { streams: &'a Streams, number: u64 },
}

impl<'a> Out<'a> {
    fn direct(outlet: Arc<Outlet>, number: u64) -> Out<'a> {
        Out {
            to: To::Direct {
                outlet,
                number,
                seq: 0,
            },
            finished: false,
        }
    }

    fn logged(streams: &'a Streams, number: u64) -> Out<'a> {
        Out {
            to: To::Logged { streams, number },
            finished: false,
        }
    }

    /// Resolves when nobody can receive the stream any more (ending it if
    /// it stalls while the handler is quiet).
    async fn gone(&self) {
        match &self.to {
            To::Direct { outlet, .. } => outlet.watch().await,
            To::Logged { .. } => std::future::pending().await,
        }
    }

    /// Sends one message, waiting for room in the connection's queue
    /// (bounded in messages and bytes); `false` if the stream should stop.
    async fn send(&mut self, message: &Value) -> bool {
        match &mut self.to {
            To::Direct {
                outlet,
                number,
                seq,
            } => {
                *seq += 1;
                let id = resume::EventId {
                    stream: *number,
                    seq: *seq,
                };
                outlet.send(resume::event(id, message)).await.is_ok()
            }
            To::Logged { streams, number } => {
                let (frame, sink) = streams.lock().record(*number, message);
                if let Some(outlet) = sink {
                    // A connection that goes (or stalls) meanwhile loses
                    // nothing: the frame is logged for the resume.
                    let _ = outlet.send(frame).await;
                }
                true
            }
        }
    }

    /// Sends one last message without waiting (dropped if there is no
    /// room; kept in the log of a logged stream).
    fn try_send(&mut self, message: &Value) {
        match &mut self.to {
            To::Direct {
                outlet,
                number,
                seq,
            } => {
                *seq += 1;
                let id = resume::EventId {
                    stream: *number,
                    seq: *seq,
                };
                let _ = outlet.try_push(resume::event(id, message));
            }
            To::Logged { streams, number } => {
                let (frame, sink) = streams.lock().record(*number, message);
                if let Some(outlet) = sink {
                    let _ = outlet.try_push(frame);
                }
            }
        }
    }

    /// Ends the stream: its connection delivers what is queued, then ends
    /// (a logged stream's log is kept for a late resume). Once only.
    fn finish(&mut self) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        match &self.to {
            To::Direct { outlet, .. } => outlet.finish(),
            To::Logged { streams, number } => streams.lock().finish(*number),
        }
    }
}

impl Drop for Out<'_> {
    fn drop(&mut self) {
        // A task dropped unfinished (its runtime going away, a 2026-07-28
        // client gone) leaves no stream open behind it.
        self.finish();
    }
}

/// Streams a handler's SSE reply until it ends or nobody can receive it
/// any more. (The session's end, a cancel and the handler timeout stop it
/// from outside, by dropping it.)
async fn pump<A: App>(
    inner: &Inner<A>,
    session: Option<&Session<Entry<A::Session>>>,
    mut stream: futures_util::stream::BoxStream<'static, serde_json::Value>,
    out: &mut Out<'_>,
) {
    loop {
        let next = AssertUnwindSafe(stream.next()).catch_unwind();
        let item = tokio::select! {
            _ = out.gone() => break,
            item = next => item,
        };
        match item {
            Ok(Some(message)) => {
                if !out.send(&message).await {
                    break;
                }
            }
            Ok(None) => break,
            Err(panic) => {
                let error =
                    HandlerError::msg(format!("reply stream panicked: {}", panic_message(&*panic)));
                fail(inner, session, &error);
                break;
            }
        }
    }
}

/// The shape an `initialize` request must have before a session is made
/// for it: params with the protocol version the client asks for (any
/// string: an unknown one is negotiated down by the application, see
/// [`rules::negotiate`]).
fn check_initialize(request: &Request) -> Result<String, RpcError> {
    /// Only the member checked here is read out of the raw params; the rest
    /// is walked over, not built.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Initialize {
        protocol_version: String,
    }
    match request.params_as::<Initialize>() {
        Ok(params) => Ok(params.protocol_version),
        Err(_) => Err(RpcError::invalid_params(
            "initialize needs params.protocolVersion (a string)",
        )),
    }
}

/// `notifications/cancelled` (2025-11-25, Cancellation): stops the running
/// request of this session it names by `requestId`, if there is one. The
/// notification still goes to the application, as any other.
fn cancel_named<S: Send + Sync + 'static>(
    session: &Session<Entry<S>>,
    note: &jsonrpc::Notification,
) {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cancel {
        request_id: Value,
    }
    let Ok(cancel) = note.params_as::<Cancel>() else {
        return;
    };
    if let Cancelled::Requests(n) = session.work.cancel(&jsonrpc::id_key(&cancel.request_id)) {
        tracing::debug!(requests = n, "cancelled by the client");
    }
}

/// A handler failed: end its session with `Failed`, through the handle it
/// holds (so it can only ever reach its own session).
fn fail<A: App>(
    inner: &Inner<A>,
    session: Option<&Session<Entry<A::Session>>>,
    error: &HandlerError,
) {
    match session {
        Some(session) => {
            // `?`: the Debug form of the id names the session without its
            // secret.
            tracing::warn!(session = ?session.id(), %error, "handler failed; ending the session");
            let _ = inner.registry.terminate_session(session, Reason::Failed);
        }
        None => tracing::warn!(%error, "stateless handler failed"),
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic>")
}

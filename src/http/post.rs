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
    body_timeout, internal_error, not_found, overloaded, shutting_down, too_large,
    too_many_requests, unavailable,
};
use super::resume;
use super::rules::{self, Version};
use super::sse::Streams;
use super::SessionManager;
use crate::{InFlight, NotBegun, Reason, Session};
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
use tracing::Instrument;

pub(super) enum Head {
    Reply(Reply),
    Stream(Arc<Outlet>),
    /// The handler failed; the session was terminated with `Failed`.
    Failed,
}

/// Counts one handler in `sessionreg_http_handlers_in_flight` while alive.
struct Running<'a>(&'a HttpCounters);

impl<'a> Running<'a> {
    fn new(counters: &'a HttpCounters) -> Self {
        counters.handler_started();
        Running(counters)
    }
}

impl Drop for Running<'_> {
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
                let (head, _) = self.run(Some(request), message, version, parts).await;
                self.answer(head, id.as_ref()).await
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
            inner.config.event_log,
            inner.config.limits.event_log_bytes,
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
        let (head, _) = self
            .run(Some(first), Message::Request(request), version, parts)
            .await;
        let mut response = match head.await {
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
            Err(_) => return shutting_down(),
        };
        let mut text = [0u8; crate::SessionId::TEXT_LEN];
        let value =
            HeaderValue::from_str(id.encode(&mut text)).expect("session ids are visible ASCII");
        response.headers_mut().insert(rules::SESSION_HEADER, value);
        response
    }

    /// Runs the application on one message, holding the request's
    /// in-flight guard (its place under the session's cap) for as long
    /// as the handler (and its SSE reply) runs.
    ///
    /// The handler is polled once here, on the connection's task: most
    /// handlers answer at once, and then no task is spawned and no other
    /// worker thread is woken. One that is still pending after that poll
    /// goes on in a task of its own, counted against the manager's cap on
    /// handler tasks, so a client that disconnects does not cancel it (the spawned task's first poll registers its own wakers);
    /// its abort handle is returned, for requests that a disconnect must
    /// cancel (2026-07-28).
    pub(super) async fn run(
        &self,
        guard: Option<InFlight<Entry<A::Session>>>,
        message: Message,
        version: Version,
        request: Parts,
    ) -> (oneshot::Receiver<Head>, Option<tokio::task::AbortHandle>) {
        let (head_tx, head_rx) = oneshot::channel();
        let inner = Arc::clone(&self.inner);
        let task = async move {
            let _running = Running::new(&inner.counters);
            // The guard derefs to the session and lives to the end of this
            // task: the application gets the one clone it must own.
            let session = guard.as_deref();
            let is_request = matches!(message, Message::Request(_));
            // A request whose SSE reply is resumable gets its stream's
            // number now, so the handler can close the connection early
            // (`Context::close_sse_stream`).
            let logged = session
                .filter(|_| is_request && inner.config.event_log > 0 && resume::resumes(version))
                .map(|s| s.streams.next_stream());
            let ctx = Context {
                session: session.cloned(),
                version,
                request,
                stream: logged,
            };
            let outcome = AssertUnwindSafe(inner.app.handle(ctx, message))
                .catch_unwind()
                .await;
            match outcome {
                Ok(Ok(Reply::Stream(stream))) if is_request => match (session, logged) {
                    (Some(s), Some(number)) => {
                        // Resumable: pumped (and logged) even if this
                        // connection goes, for the client to resume.
                        let retry = inner.config.sse_retry;
                        let outlet = s.streams.lock().open_post(number, Some(retry));
                        let _ = head_tx.send(Head::Stream(outlet));
                        let out = Out::Logged {
                            streams: &s.streams,
                            number,
                        };
                        pump(&inner, session, stream, out).await;
                    }
                    _ => {
                        let outlet =
                            Outlet::new(inner.config.queue_limits(), Arc::clone(&inner.counters));
                        if head_tx.send(Head::Stream(Arc::clone(&outlet))).is_ok() {
                            let number = session.map_or(1, |s| s.streams.next_stream());
                            let out = Out::Direct {
                                outlet,
                                number,
                                seq: 0,
                            };
                            pump(&inner, session, stream, out).await;
                        } else {
                            outlet.finish();
                        }
                    }
                },
                Ok(Ok(reply)) => {
                    let reply = if is_request { reply } else { Reply::Accepted };
                    let _ = head_tx.send(Head::Reply(reply));
                }
                Ok(Err(error)) => {
                    fail(&inner, session, &error);
                    let _ = head_tx.send(Head::Failed);
                }
                Err(panic) => {
                    let error =
                        HandlerError::msg(format!("handler panicked: {}", panic_message(&*panic)));
                    fail(&inner, session, &error);
                    let _ = head_tx.send(Head::Failed);
                }
            }
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
        (head_rx, spawned)
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
}

/// Where a reply stream's messages go.
enum Out<'a> {
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

impl Out<'_> {
    /// Resolves when nobody can receive the stream any more (ending it if
    /// it stalls while the handler is quiet).
    async fn gone(&self) {
        match self {
            Out::Direct { outlet, .. } => outlet.watch().await,
            Out::Logged { .. } => std::future::pending().await,
        }
    }

    /// Sends one message, waiting for room in the connection's queue
    /// (bounded in messages and bytes); `false` if the stream should stop.
    async fn send(&mut self, message: &Value) -> bool {
        match self {
            Out::Direct {
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
            Out::Logged { streams, number } => {
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

    fn finish(self) {
        match self {
            Out::Direct { outlet, .. } => outlet.finish(),
            Out::Logged { streams, number } => streams.lock().finish(number),
        }
    }
}

/// Streams a handler's SSE reply until it ends, nobody can receive it any
/// more, or the session ends.
async fn pump<A: App>(
    inner: &Inner<A>,
    session: Option<&Session<Entry<A::Session>>>,
    mut stream: futures_util::stream::BoxStream<'static, serde_json::Value>,
    mut out: Out<'_>,
) {
    let closed = async {
        match session {
            Some(s) => s.streams.closed().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(closed);
    loop {
        let next = AssertUnwindSafe(stream.next()).catch_unwind();
        let item = tokio::select! {
            _ = &mut closed => break,
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
    out.finish();
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

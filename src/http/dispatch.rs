//! Running the application on one message ([`App::handle`]), and its
//! reply: JSON, 202, or an SSE stream pumped from the handler's stream; and
//! what becomes of a request whose work stops before it answers. Both eras
//! run their messages here (`legacy/`, `modern/`).

use super::admission::Counted;
use super::app::{App, HandlerError, Reply};
use super::body::{self, Body};
use super::context::Context;
use super::jsonrpc::{self, Message, RpcError};
use super::modern::envelope::Envelope;
use super::modern::request::Modern;
use super::protocol::Version;
use super::reject::Reject;
use super::session::SessionEntry;
use super::sse::resume;
use super::sse::{Outlet, Streams};
use super::state::State;
use super::tasks;
use super::work::Cancelled;
use crate::{InFlight, Reason, Session};
use futures_util::future::OptionFuture;
use futures_util::{FutureExt, StreamExt};
use http::request::Parts;
use http::{Response, StatusCode};
use serde_json::Value;
use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// What a run carries for its era beyond the message.
pub(crate) enum Extra {
    /// Nothing: a request in a session.
    None,
    /// A 2026-07-28 message: what it carries (for the handler's
    /// [`Context::modern`]), and the envelope its streamed answer's messages
    /// go through (`None` for a notification, which has no answer).
    Modern {
        request: Box<Modern>,
        envelope: Option<Arc<Envelope>>,
    },
}

/// A handler's outcome, as the request waiting for it learns it.
pub(crate) enum Head {
    Reply(Reply),
    Stream(Arc<Outlet>),
    /// The handler failed; its session, if it had one, was terminated
    /// with `Failed`.
    Failed {
        in_session: bool,
    },
    /// The work stopped before it answered.
    Stopped(Stop),
}

/// Runs the application on one message, holding the request's in-flight
/// guard (its place under the session's cap) for as long as its work (the
/// handler, then its SSE reply) runs.
///
/// The work is first polled here, on the connection's task: most handlers
/// answer at once, and then no task is spawned, no timer set, no other
/// worker thread woken. Work still pending after that poll goes on in a
/// task of its own, counted against the manager's cap on handler tasks, so
/// a client that disconnects does not cancel it (the spawned task's first
/// poll registers its own wakers); its abort handle is returned, for
/// requests that a disconnect must cancel (2026-07-28). From then on it is
/// listed in its session's [`Work`](super::work::Work) by JSON-RPC id, and
/// it stops when its token is cancelled (the session's end,
/// `notifications/cancelled`) or the handler timeout passes: its future is
/// dropped, and the request is answered with the [`Stop`].
pub(crate) async fn run<A: App>(
    state: &Arc<State<A>>,
    guard: Option<InFlight<SessionEntry<A::Session>>>,
    message: Message,
    version: Version,
    request: Parts,
    extra: Extra,
) -> Started {
    let (head_tx, head_rx) = oneshot::channel();
    let shared = Arc::clone(state);
    let cancel = match guard.as_deref() {
        Some(session) => session.work.request(),
        None => CancellationToken::new(),
    };
    let token = cancel.clone();
    let task = async move {
        let state = &*shared;
        let _counted = Counted::new(state.counters());
        // The guard derefs to the session and lives to the end of this
        // task: the application gets the one clone it must own.
        let session = guard.as_deref();
        let request_id = message.request_id();
        let mut head_tx = Some(head_tx);
        let mut out = None;
        let stop = {
            let work = work(
                state,
                session,
                message,
                version,
                request,
                extra,
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
                    (Some(s), Some(id)) => Some(s.work.list(jsonrpc::id_key(id), cancel.clone())),
                    _ => None,
                };
                let limit = state.config().handler_timeout;
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
        let counted = state.handlers().enter();
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

/// The response to a request for its handler's outcome (`Err`: the task
/// was dropped unfinished, so the runtime is going away).
pub(crate) fn reply<A: App>(
    state: &State<A>,
    head: Result<Head, oneshot::error::RecvError>,
    id: Option<&Value>,
) -> Response<Body> {
    match head {
        Ok(Head::Failed { in_session }) => state.refuse(Reject::HandlerFailed { in_session }, id),
        Ok(Head::Stream(outlet)) => state.sse(outlet),
        Ok(Head::Stopped(stop)) => stopped(state, stop, id),
        Ok(Head::Reply(reply)) => match (id, reply) {
            (None, _) => body::status(StatusCode::ACCEPTED),
            (Some(id), Reply::Result(result)) => body::result(id, &result),
            (Some(id), Reply::Error(error)) => {
                body::json(StatusCode::OK, &jsonrpc::error_message(Some(id), &error))
            }
            (
                Some(id),
                Reply::Accepted | Reply::Stream(_) | Reply::InputRequired(_) | Reply::Task(_),
            ) => body::json(
                StatusCode::OK,
                &jsonrpc::error_message(
                    Some(id),
                    &RpcError::new(jsonrpc::INTERNAL_ERROR, "the handler gave no response"),
                ),
            ),
        },
        Err(_) => state.refuse(Reject::ShuttingDown, id),
    }
}

/// The answer to a request whose work stopped before it answered.
pub(crate) fn stopped<A: App>(state: &State<A>, stop: Stop, id: Option<&Value>) -> Response<Body> {
    match stop {
        Stop::SessionEnded(Reason::Shutdown) => state.refuse(Reject::ShuttingDown, id),
        Stop::SessionEnded(_) => state.refuse(Reject::SessionEnded, id),
        // No response for a cancelled request (2025-11-25, Cancellation):
        // its stream ends with nothing in it.
        Stop::Cancelled => state.ended_sse(),
        Stop::TimedOut(_) => match id {
            Some(id) => body::json(
                StatusCode::OK,
                &jsonrpc::error_message(Some(id), &stop.error()),
            ),
            None => body::status(StatusCode::ACCEPTED),
        },
    }
}

/// What [`run`] started: where its outcome arrives, the
/// task it spawned (if it did), and the request's cancellation token.
pub(crate) struct Started {
    pub(crate) head: oneshot::Receiver<Head>,
    pub(crate) task: Option<tokio::task::AbortHandle>,
    pub(crate) cancel: CancellationToken,
}

/// Why a request's work stopped before it was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
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
    state: &State<A>,
    session: Option<&'a Session<SessionEntry<A::Session>>>,
    message: Message,
    version: Version,
    request: Parts,
    extra: Extra,
    cancel: &CancellationToken,
    head: &mut Option<oneshot::Sender<Head>>,
    out: &mut Option<Out<'a>>,
) {
    let (modern, envelope) = match extra {
        Extra::None => (None, None),
        Extra::Modern { request, envelope } => (Some(request), envelope),
    };
    let is_request = matches!(message, Message::Request(_));
    // Whether a `Reply::Task` may become a task: a 2026-07-28 `tools/call`
    // whose client declared the extension on it, to a manager serving it.
    let task_wanted = modern
        .as_ref()
        .is_some_and(|m| m.declares_extension(tasks::TASKS_EXTENSION));
    let may_task = task_wanted
        && state.tasks().is_some()
        && matches!(&message, Message::Request(r) if r.method == "tools/call");
    // A request whose SSE reply is resumable gets its stream's number now,
    // so the handler can close the connection early
    // (`Context::close_sse_stream`).
    let logged = session
        .filter(|_| is_request && state.config().event_log_events > 0 && version.resumes())
        .map(|s| s.streams.next_stream());
    // However the work ends (answered without a stream, failed, stopped),
    // a close the handler asked for before its stream opened is forgotten.
    let _forget = logged
        .zip(session)
        .map(|(number, s)| Forget(&s.streams, number));
    let ctx = Context {
        session: session.cloned(),
        version,
        request,
        stream: logged,
        cancel: cancel.clone(),
        modern,
    };
    let outcome = AssertUnwindSafe(state.app().handle(ctx, message))
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
                    let retry = state.config().sse_retry;
                    let outlet = s.streams.lock().open_post(number, Some(retry));
                    send(head, Head::Stream(outlet));
                    Some(Out::logged(&s.streams, number))
                }
                _ => {
                    let outlet = state.new_outlet();
                    let number = session.map_or(1, |s| s.streams.next_stream());
                    let direct = Out::direct(Arc::clone(&outlet), number);
                    // Nobody waits for it any more: nothing to pump.
                    send(head, Head::Stream(outlet)).then_some(direct)
                }
            };
            if let Some(opened) = opened {
                let out = out.insert(opened);
                pump(state, session, stream, envelope.as_deref(), out).await;
                out.finish();
            }
        }
        Ok(Ok(Reply::Task(work))) if is_request && !may_task => {
            // No task for this client: the work is the call's answer, run
            // here (under the request's cancellation and timeout), unless
            // it may only run as a task.
            let reply = if work.required && version == Version::Modern {
                Reply::Error(tasks::extension_required())
            } else {
                match tasks::inline(work, cancel.clone()).await {
                    Ok(result) => Reply::Result(result),
                    Err(error) => Reply::Error(error),
                }
            };
            send(head, Head::Reply(reply));
        }
        Ok(Ok(reply)) => {
            let reply = if is_request { reply } else { Reply::Accepted };
            send(head, Head::Reply(reply));
        }
        Ok(Err(error)) => {
            fail(state, session, &error);
            send(
                head,
                Head::Failed {
                    in_session: session.is_some(),
                },
            );
        }
        Err(panic) => {
            let error = HandlerError::msg(format!("handler panicked: {}", panic_message(&*panic)));
            fail(state, session, &error);
            send(
                head,
                Head::Failed {
                    in_session: session.is_some(),
                },
            );
        }
    }
}

/// Forgets an early close of reply stream `.1` when dropped (see
/// [`work`]).
struct Forget<'a>(&'a Streams, u64);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.0.lock().forget(self.1);
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
    state: &State<A>,
    session: Option<&Session<SessionEntry<A::Session>>>,
    mut stream: futures_util::stream::BoxStream<'static, serde_json::Value>,
    envelope: Option<&Envelope>,
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
                let message = match envelope {
                    Some(envelope) => match envelope.outgoing(message) {
                        Some(message) => message,
                        None => continue,
                    },
                    None => message,
                };
                if !out.send(&message).await {
                    break;
                }
            }
            Ok(None) => break,
            Err(panic) => {
                let error =
                    HandlerError::msg(format!("reply stream panicked: {}", panic_message(&*panic)));
                fail(state, session, &error);
                break;
            }
        }
    }
}

/// `notifications/cancelled` (2025-11-25, Cancellation): stops the running
/// request of this session it names by `requestId`, if there is one. The
/// notification still goes to the application, as any other.
pub(crate) fn cancel_named<S: Send + Sync + 'static>(
    session: &Session<SessionEntry<S>>,
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
    state: &State<A>,
    session: Option<&Session<SessionEntry<A::Session>>>,
    error: &HandlerError,
) {
    match session {
        Some(session) => {
            // `?`: the Debug form of the id names the session without its
            // secret.
            tracing::warn!(session = ?session.id(), %error, "handler failed; ending the session");
            let _ = state.registry().terminate_session(session, Reason::Failed);
        }
        None => tracing::warn!(%error, "handler failed"),
    }
}

pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic>")
}

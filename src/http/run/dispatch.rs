//! Runs the application on one message ([`App::handle`]), in either era:
//! the handler, then the pump of a streamed reply, under the request's
//! cancellation and the handler timeout; in a task of its own when it may
//! outlive its connection ([`run`]), else in the caller's future until it
//! answers ([`run_here`]). What it returns is a typed [`Dispatched`]; each
//! era turns it into its response (`legacy/respond.rs`,
//! `modern/respond.rs`). What differs between the eras (where a streamed
//! reply goes, what a cancelled request was stopped by, what a failure
//! ends) is the era's [`Scope`]: this module knows no era.

use crate::http::app::Context;
use crate::http::app::{App, HandlerError, Reply};
use crate::http::counters::HttpCounters;
use crate::http::observe;
use crate::http::run::admission::{HandlerCount, HandlerGuard, HandlerTasks};
use crate::http::run::in_place;
use crate::http::session::running::Listed;
use crate::http::sse::{Out, Outlet};
use crate::http::tasks::{Chosen, TaskChoice};
use crate::http::wire::caught::panic_message;
use crate::http::wire::jsonrpc::{self, Message, RpcError};
use crate::Reason;
use futures_util::future::{BoxFuture, CatchUnwind, OptionFuture};
use futures_util::stream::BoxStream;
use futures_util::FutureExt;
use pin_project_lite::pin_project;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// What every run of a handler needs, whatever the era: the application,
/// the gauges it is counted in, the cap on handler tasks and the handler
/// timeout. Shared by the endpoint and every spawned handler task.
pub(crate) struct Runner<A> {
    pub(crate) app: Arc<A>,
    pub(crate) counters: Arc<HttpCounters>,
    pub(crate) handlers: Arc<HandlerTasks>,
    /// How long a request's work may run; `None`: no bound.
    pub(crate) timeout: Option<Duration>,
}

/// What a request's work needs from the era it runs in.
pub(crate) trait Scope: Send + Sync {
    /// The scope a streamed reply's pump holds on a task of its own, past
    /// the frame of the request that began it: this scope when it owns
    /// what it holds; else one that does, made by [`Scope::into_owned`].
    type Owned: Scope + 'static;

    /// This scope, owning what it borrowed (for a streamed reply's pump).
    fn into_owned(self) -> Self::Owned;

    /// Whether the work outlives the connection that brought it: if so,
    /// work still pending after its first poll leaves for a task of its
    /// own at once (a legacy session's request goes on when its client
    /// disconnects); if not, it runs on the request's own task until it
    /// answers (a 2026-07-28 request: closing the stream is the cancel; a
    /// session's `initialize`, whose session nobody learns of if its client
    /// goes), and only a streamed answer's pump leaves for a task of its
    /// own.
    fn outlives_connection(&self) -> bool;

    /// Lists the request (JSON-RPC id `id`) as running past its first poll,
    /// so that a `notifications/cancelled` naming it can stop it: listed
    /// while the returned guard lives. `None` where nothing can cancel by
    /// id (2026-07-28: closing the stream is the cancel).
    fn list(&self, id: &Value, cancel: &CancellationToken) -> Option<Listed<'_>>;

    /// Why the request's token was cancelled (its session ended, or the
    /// client cancelled it).
    fn stopped(&self) -> Stop;

    /// The handler (or its reply stream) failed.
    fn failed(&self, error: &HandlerError);

    /// Opens the SSE stream a streamed reply goes to: the outlet the
    /// response carries, and the sender the pump writes through.
    fn open_stream(&self) -> (Arc<Outlet>, Out<'_>);

    /// One message of a streamed reply as the client may get it, or `None`
    /// when it may not be sent.
    fn outgoing(&self, message: Value) -> Option<Value>;
}

/// A handler's outcome, as the request waiting for it learns it.
pub(crate) enum Dispatched {
    /// The handler's reply (never [`Reply::Stream`], which becomes
    /// [`Dispatched::Streaming`]; a [`Reply::Task`] only where the request may
    /// become a task: see [`TaskChoice`]).
    Reply(Reply),
    /// The reply is being streamed into this outlet.
    Streaming(Arc<Outlet>),
    /// The handler failed (or panicked); [`Scope::failed`] has run.
    Failed,
    /// The work stopped before it answered.
    Stopped(Stop),
    /// The work was dropped unfinished: the runtime is going away.
    Lost,
}

/// Why a request's work stopped before it was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Its session ended, for this reason (any end path).
    SessionEnded(Reason),
    /// The client cancelled it (`notifications/cancelled`; at 2026-07-28,
    /// by going away).
    Cancelled,
    /// It ran past the handler timeout (this long).
    TimedOut(Duration),
}

impl Stop {
    /// The JSON-RPC error a timed-out request is answered with (-32603, as
    /// for any other failure to answer; the data says the limit).
    pub(crate) fn error(self) -> RpcError {
        let mut error = RpcError::new(
            jsonrpc::RpcError::INTERNAL_ERROR,
            "the request ran past the server's handler timeout",
        );
        if let Stop::TimedOut(limit) = self {
            error.data = Some(serde_json::json!({ "timeoutMs": limit.as_millis() as u64 }));
        }
        error
    }
}

/// What [`run`] started: where its outcome arrives, where its work is,
/// and the request's cancellation token.
pub(crate) struct Started {
    outcome: oneshot::Receiver<Dispatched>,
    work: Work,
    cancel: CancellationToken,
}

/// Where a request's work is once its first poll has returned.
enum Work {
    /// Done at its first poll (or gone): nothing runs.
    Done,
    /// In a task of its own.
    Spawned(tokio::task::AbortHandle),
    /// Still here, pending, counted as a handler task: whoever awaits the
    /// outcome drives it (a scope whose work ends with its connection).
    Here(Pin<Box<dyn Future<Output = ()> + Send>>, HandlerGuard),
}

/// A handler's outcome, and the work that goes on after it (a streamed
/// answer's pump) if any, with the token that cancels it.
pub(crate) struct Handled {
    pub(crate) outcome: Dispatched,
    /// The task still running the work, if it is not done.
    pub(crate) spawned: Option<tokio::task::AbortHandle>,
    pub(crate) cancel: CancellationToken,
}

impl Started {
    /// The handler's outcome; work that goes on after it keeps running
    /// in its own task.
    pub(crate) async fn outcome(self) -> Dispatched {
        self.settle().await.outcome
    }

    /// The handler's outcome, driving the work here if it is still here:
    /// until it answers, it runs on this task (no task spawned, no other
    /// worker woken); if it goes on past its answer (a streamed reply), it
    /// leaves then for a task of its own, still counted. Dropped before the
    /// outcome, this drops the work where it waits and cancels the token
    /// (for work the handler handed elsewhere): the client went away.
    pub(crate) async fn settle(self) -> Handled {
        let Started {
            mut outcome,
            work,
            cancel,
        } = self;
        let (received, spawned) = match work {
            Work::Done => (outcome.try_recv().ok(), None),
            Work::Spawned(task) => ((&mut outcome).await.ok(), Some(task)),
            Work::Here(mut task, counted) => {
                let armed = CancelOnDrop(Some(&cancel));
                // `None`: the work is done (its outcome sent, or lost);
                // `Some`: the outcome came while the work goes on (a
                // streamed reply's pump).
                let early = std::future::poll_fn(|cx| {
                    if task.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(None);
                    }
                    Pin::new(&mut outcome).poll(cx).map(Some)
                })
                .await;
                armed.disarm();
                match early {
                    None => (outcome.try_recv().ok(), None),
                    Some(received) => (received.ok(), Some(spawn(task, counted))),
                }
            }
        };
        Handled {
            outcome: received.unwrap_or(Dispatched::Lost),
            spawned,
            cancel,
        }
    }
}

/// Cancels the token when dropped armed: the request's waiter went away
/// while the work ran here.
struct CancelOnDrop<'a>(Option<&'a CancellationToken>);

impl CancelOnDrop<'_> {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(token) = self.0 {
            token.cancel();
        }
    }
}

/// Runs the application on one message in `scope`, which lives (with
/// whatever it holds, such as the session's in-flight guard) for as long as
/// the work runs: the handler, then its streamed reply.
///
/// The work is first polled here, on the connection's task: most handlers
/// answer at once, and then no task is spawned, no timer set, no other
/// worker thread woken. Work still pending after that poll is counted
/// against the cap on handler tasks, and goes on where its scope says
/// ([`Scope::outlives_connection`]): in a task of its own at once, so a
/// client that disconnects does not cancel it (a legacy session's), or
/// here, driven by whoever awaits [`Started::settle`], until it answers
/// (a session's `initialize`: a handler that awaits I/O then wakes the
/// connection's task, not another worker's; a streamed answer's pump
/// leaves for a task of its own). A 2026-07-28 request's handler runs in
/// its request's own future instead ([`run_here`]), which hands only its
/// streamed reply's pump to `run`'s task. From then on it is listed by the scope,
/// and it stops when `cancel` is cancelled (the session's end,
/// `notifications/cancelled`, the client gone) or the handler timeout
/// passes: its future is dropped, and the request is answered with the
/// [`Stop`].
pub(crate) fn run<'r, A: App, S: Scope + 'static>(
    runner: &'r Arc<Runner<A>>,
    scope: S,
    ctx: Context<A::Session>,
    message: Message,
    choice: TaskChoice,
) -> impl Future<Output = Started> + Send + 'r {
    // Not an `async fn`: its arguments would be held in its future besides
    // `start`'s (a context is a few hundred bytes).
    let cancel = ctx.cancel.clone();
    let request_id = message.request_id();
    let begin = Begin::Call(ctx, message, choice);
    start(runner, scope, begin, cancel, request_id, None)
}

/// What a request's work begins with.
// Boxing the call would cost every request an allocation; the begin is
// moved once, into the work's own (boxed) future.
#[allow(clippy::large_enum_variant)]
enum Begin<S: Send + Sync + 'static> {
    /// The application's handler, to call on this message.
    Call(Context<S>, Message, TaskChoice),
    /// The stream the handler replied with, to pump.
    Stream(BoxStream<'static, Value>),
}

/// [`run`]'s body: the work `begin` starts, first polled here, under
/// `cancel` and the handler timeout (`deadline`, if the handler started it
/// already).
///
/// The work is boxed when this is called, not at the first poll: the
/// future returned holds only the box and the outcome's receiver, not
/// `begin` (a context and a message) and `scope`, 640 bytes in
/// `examples/mcp_server`, so the futures that await it (every 2026-07-28
/// request's, through `run_here`) are that much smaller.
fn start<'r, A: App, S: Scope + 'static>(
    runner: &'r Arc<Runner<A>>,
    scope: S,
    begin: Begin<A::Session>,
    cancel: CancellationToken,
    request_id: Option<Value>,
    deadline: Option<Instant>,
) -> impl Future<Output = Started> + Send + 'r {
    let (outcome_tx, outcome_rx) = oneshot::channel();
    let token = cancel.clone();
    let outlives = scope.outlives_connection();
    let shared = Arc::clone(runner);
    // Boxed where it is made (`in_place.rs`).
    let task = in_place::boxed(move || async move {
        let runner = &*shared;
        let _counted = HandlerCount::new(&runner.counters);
        let mut answer = Report {
            to: Some(outcome_tx),
            out: None,
        };
        let stop = {
            let work = work(runner, &scope, begin, &cancel, &mut answer);
            tokio::pin!(work);
            let first = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await;
            if first.is_ready() {
                None
            } else {
                let _listed = request_id.as_ref().and_then(|id| scope.list(id, &cancel));
                let bound = Bound::from(runner.timeout, deadline);
                bound.wait(work, &cancel, &scope).await.err()
            }
            // The work is dropped here: the handler's future where it
            // waits, or its reply stream.
        };
        if let Some(stop) = stop {
            stopped(stop, &cancel);
            answer.stopped(stop, request_id.as_ref());
        }
        // Whatever borrowed the scope (a logged stream) goes before it.
        drop(answer);
        drop(scope);
    });
    // Polled here, the work is in the request's span already (the
    // caller's); only a task it moves to is put in that span again, so a
    // poll enters the span once, not twice (with the OpenTelemetry layer an
    // enter and its exit cost about a thousand instructions).
    let mut task: Pin<Box<dyn Future<Output = ()> + Send>> = task;
    async move {
        let first = std::future::poll_fn(|cx| Poll::Ready(task.as_mut().poll(cx))).await;
        let work = if first.is_ready() {
            Work::Done
        } else {
            let counted = runner.handlers.enter();
            if outlives {
                Work::Spawned(spawn(task, counted))
            } else {
                Work::Here(task, counted)
            }
        };
        Started {
            outcome: outcome_rx,
            work,
            cancel: token,
        }
    }
}

/// Runs the application's `handler` here, on the caller's task, for a
/// scope whose work does not outlive its connection
/// ([`Scope::outlives_connection`] is false): the handler's future stays
/// where the caller pinned it (no task spawned, nothing boxed, no
/// channel), is counted as a handler task once its first poll is pending,
/// and stops as [`run`]'s work does: the token cancelled, the handler
/// timeout passed. Dropped before the reply, this cancels the token (the
/// client went away; the caller then drops the handler where it waits). A
/// streamed reply's pump leaves for a task of its own, [`run`]'s, begun
/// with the stream under the same deadline.
#[allow(clippy::manual_async_fn)] // on purpose: see `modern::serve::serve`
pub(crate) fn run_here<'a, A: App, S: Scope + 'a, F: Handler + 'a>(
    runner: &'a Arc<Runner<A>>,
    scope: S,
    mut handler: Pin<&'a mut Handling<F>>,
) -> impl Future<Output = Handled> + 'a {
    async move {
        debug_assert!(!scope.outlives_connection());
        let (cancel, request_id, is_request) = {
            let this = handler.as_mut().project();
            (
                this.cancel.clone(),
                this.request_id.take(),
                *this.is_request,
            )
        };
        let mut deadline = None;
        let reply = {
            let _counted = HandlerCount::new(&runner.counters);
            match std::future::poll_fn(|cx| Poll::Ready(handler.as_mut().poll(cx))).await {
                Poll::Ready(reply) => Ok(reply),
                Poll::Pending => {
                    let _running = runner.handlers.enter();
                    let _listed = request_id.as_ref().and_then(|id| scope.list(id, &cancel));
                    let armed = CancelOnDrop(Some(&cancel));
                    let bound = Bound::from(runner.timeout, None);
                    deadline = bound.deadline;
                    let reply = bound.wait(handler, &cancel, &scope).await;
                    armed.disarm();
                    reply
                }
            }
        };
        let outcome = match reply {
            Err(stop) => {
                stopped(stop, &cancel);
                Dispatched::Stopped(stop)
            }
            Ok(Err(error)) => {
                scope.failed(&error);
                Dispatched::Failed
            }
            Ok(Ok(_)) if !is_request => Dispatched::Reply(Reply::Accepted),
            Ok(Ok(Reply::Stream(stream))) => {
                let begin = Begin::Stream(stream);
                let scope = scope.into_owned();
                let started = start(runner, scope, begin, cancel, request_id, deadline).await;
                return started.settle().await;
            }
            Ok(Ok(reply)) => Dispatched::Reply(reply),
        };
        Handled {
            outcome,
            spawned: None,
            cancel,
        }
    }
}

/// The handler timeout of one request's work, as a deadline.
struct Bound {
    limit: Option<Duration>,
    deadline: Option<Instant>,
}

impl Bound {
    /// `limit` from now, or the `deadline` the work began under already.
    fn from(limit: Option<Duration>, deadline: Option<Instant>) -> Bound {
        let deadline = deadline.or_else(|| limit.and_then(|l| Instant::now().checked_add(l)));
        Bound { limit, deadline }
    }

    /// `work`'s output, or why it stopped first: `cancel` cancelled (as
    /// `scope` says), or the deadline passed.
    async fn wait<F: Future>(
        &self,
        work: Pin<&mut F>,
        cancel: &CancellationToken,
        scope: &impl Scope,
    ) -> Result<F::Output, Stop> {
        let timeout = OptionFuture::from(self.deadline.map(tokio::time::sleep_until));
        tokio::select! {
            biased;
            output = work => Ok(output),
            () = cancel.cancelled() => Err(scope.stopped()),
            Some(()) = timeout => Err(Stop::TimedOut(self.limit.unwrap_or_default())),
        }
    }
}

/// The work stopped before it was done: its token is cancelled, for work
/// the handler handed elsewhere (a timeout has not cancelled it yet).
fn stopped(stop: Stop, cancel: &CancellationToken) {
    cancel.cancel();
    if let Stop::TimedOut(limit) = stop {
        tracing::warn!(
            limit_ms = limit.as_millis() as u64,
            "handler timed out; its work is dropped"
        );
    }
}

/// Moves a request's work to a task of its own, in the request's span
/// (the current one), counted until it ends.
fn spawn(
    task: Pin<Box<dyn Future<Output = ()> + Send>>,
    counted: HandlerGuard,
) -> tokio::task::AbortHandle {
    let task = tokio::spawn(
        async move {
            task.await;
            drop(counted);
        }
        .in_current_span(),
    );
    task.abort_handle()
}

/// Where a request's work reports: its outcome, once (taken when sent),
/// then, for a streamed reply, the stream it pumps (kept so that a stop can
/// still end it properly).
struct Report<'a> {
    to: Option<oneshot::Sender<Dispatched>>,
    out: Option<Out<'a>>,
}

impl Report<'_> {
    /// Sends the outcome; whether the request still waits for it.
    fn send(&mut self, outcome: Dispatched) -> bool {
        match self.to.take() {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// The work stopped: the request gets the stop, or, streaming already,
    /// its stream ends (with the error of a timeout).
    fn stopped(&mut self, stop: Stop, request_id: Option<&Value>) {
        if self.send(Dispatched::Stopped(stop)) {
            return;
        }
        if let Some(out) = &mut self.out {
            // A timed-out request still gets its error, a cancelled one
            // nothing more.
            if let (Stop::TimedOut(_), Some(id)) = (stop, request_id) {
                out.try_send(&jsonrpc::error_message(Some(id), &stop.error()));
            }
            out.finish();
        }
    }
}

/// A request's work: the application's handler, then, for a streamed
/// reply, the pump that carries it; `cancel` is the request's token.
async fn work<'a, A: App, S: Scope>(
    runner: &Runner<A>,
    scope: &'a S,
    begin: Begin<A::Session>,
    cancel: &CancellationToken,
    answer: &mut Report<'a>,
) {
    let stream = match begin {
        Begin::Call(ctx, message, choice) => {
            // The token is the context's (`run` took it); the id is
            // `start`'s to use, not the handling's.
            let handling = handling_with(runner, ctx, message, choice, cancel.clone(), None);
            let is_request = handling.is_request;
            match handling.await {
                Err(error) => return fail(scope, answer, &error),
                Ok(_) if !is_request => {
                    answer.send(Dispatched::Reply(Reply::Accepted));
                    return;
                }
                Ok(Reply::Stream(stream)) => stream,
                Ok(reply) => {
                    answer.send(Dispatched::Reply(reply));
                    return;
                }
            }
        }
        Begin::Stream(stream) => stream,
    };
    let (outlet, out) = scope.open_stream();
    if !answer.send(Dispatched::Streaming(outlet)) && !out.is_logged() {
        // Nobody waits for it any more, and nobody can resume it:
        // nothing to pump.
        return;
    }
    let out = answer.out.insert(out);
    // What the handler sends carries its request's span as parent.
    let outgoing = |mut message| {
        observe::stamp(&mut message);
        scope.outgoing(message)
    };
    if let Err(panicked) = out.pump(stream, outgoing).await {
        scope.failed(&HandlerError::msg(panicked));
    }
    out.finish();
}

/// What [`App::handle`] returns, the future a [`Handling`] polls.
pub(crate) trait Handler: Future<Output = Result<Reply, HandlerError>> + Send {}

impl<F: Future<Output = Result<Reply, HandlerError>> + Send> Handler for F {}

/// The application's handler called on one message ([`App::handle`]), to
/// its reply: a panic is its failure, a tools list is filtered by the
/// token's scopes, and a [`Reply::Task`] the era does not take as a task is
/// run here as the call's answer (see [`TaskChoice`]).
pub(crate) fn handling<A: App>(
    runner: &Runner<A>,
    ctx: Context<A::Session>,
    message: Message,
    choice: TaskChoice,
) -> Handling<impl Handler + '_> {
    let cancel = ctx.cancel.clone();
    let request_id = message.request_id();
    handling_with(runner, ctx, message, choice, cancel, request_id)
}

/// [`handling`], with the request's token and JSON-RPC id taken already
/// (`start`'s work holds its own: its handling gets a clone of the token
/// and no id).
fn handling_with<A: App>(
    runner: &Runner<A>,
    ctx: Context<A::Session>,
    message: Message,
    choice: TaskChoice,
    cancel: CancellationToken,
    request_id: Option<Value>,
) -> Handling<impl Handler + '_> {
    #[cfg(feature = "oauth")]
    let filter = match &message {
        Message::Request(request) if request.method == "tools/list" => ctx
            .request
            .extensions
            .get::<crate::http::access::oauth::ToolListFilter>()
            .cloned(),
        _ => None,
    };
    #[cfg(not(feature = "oauth"))]
    let filter = ();
    Handling {
        cancel,
        request_id,
        is_request: matches!(message, Message::Request(_)),
        choice,
        filter,
        inline: None,
        call: AssertUnwindSafe(runner.app.handle(ctx, message)).catch_unwind(),
    }
}

/// The tools a `tools/list` answer may show (the resource server's filter
/// of the token's scopes), if any.
#[cfg(feature = "oauth")]
type ToolFilter = Option<crate::http::access::oauth::ToolListFilter>;
#[cfg(not(feature = "oauth"))]
type ToolFilter = ();

pin_project! {
    /// [`handling`]'s future: a plain future, not an `async` block, so
    /// that the handler's future is held once, where it is pinned (an
    /// `async` block would hold it, and the context and message it took,
    /// a second time), and whoever awaits it can read the request's id and
    /// token beside it.
    pub(crate) struct Handling<F> {
        // The request's token and JSON-RPC id; whether it is a request
        // (not a notification).
        cancel: CancellationToken,
        request_id: Option<Value>,
        is_request: bool,
        choice: TaskChoice,
        filter: ToolFilter,
        // A `Reply::Task`'s work, run inline as the call's answer.
        inline: Option<BoxFuture<'static, Result<Value, RpcError>>>,
        #[pin]
        call: CatchUnwind<AssertUnwindSafe<F>>,
    }
}

impl<F: Handler> Future for Handling<F> {
    type Output = Result<Reply, HandlerError>;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Some(inline) = this.inline {
            // The call has answered (it is not polled again): its task's
            // work runs to its answer.
            return inline.as_mut().poll(cx).map(answered);
        }
        let reply = match std::task::ready!(this.call.poll(cx)) {
            // The resource server hides the tools the token cannot call.
            #[cfg(feature = "oauth")]
            Ok(Ok(reply @ (Reply::Result(_) | Reply::Serialized(_)))) if this.filter.is_some() => {
                match (reply.into_tree(), &*this.filter) {
                    (Reply::Result(mut result), Some(filter)) => {
                        filter.apply(&mut result);
                        Reply::Result(result)
                    }
                    (other, _) => other,
                }
            }
            Ok(Ok(reply)) => reply,
            Ok(Err(error)) => return Poll::Ready(Err(error)),
            Err(panic) => {
                let message = format!("handler panicked: {}", panic_message(&*panic));
                return Poll::Ready(Err(HandlerError::msg(message)));
            }
        };
        // The era decided whether this call may become a task; if not, its
        // work is the call's answer, run here (under the request's
        // cancellation and timeout), or refused.
        let Reply::Task(work) = reply else {
            return Poll::Ready(Ok(reply));
        };
        match this.choice.chosen(work, this.cancel.clone()) {
            Chosen::Task(work) => Poll::Ready(Ok(Reply::Task(work))),
            Chosen::Refused(error) => Poll::Ready(Ok(Reply::Error(error))),
            Chosen::Inline(inline) => this.inline.insert(inline).as_mut().poll(cx).map(answered),
        }
    }
}

/// A task's work run inline, as the call's reply.
fn answered(answer: Result<Value, RpcError>) -> Result<Reply, HandlerError> {
    Ok(match answer {
        Ok(result) => Reply::Result(result),
        Err(error) => Reply::Error(error),
    })
}

/// The handler failed: the scope hears it (a session ends `Failed`), the
/// request gets [`Dispatched::Failed`].
fn fail<S: Scope>(scope: &S, answer: &mut Report<'_>, error: &HandlerError) {
    scope.failed(error);
    answer.send(Dispatched::Failed);
}

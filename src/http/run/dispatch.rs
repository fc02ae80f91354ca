//! RunningRequests the application on one message ([`App::handle`]), in either era:
//! the handler, then the pump of a streamed reply, under the request's
//! cancellation and the handler timeout. What it returns is a typed
//! [`Dispatched`]; each era turns it into its response (`legacy/respond.rs`,
//! `modern/respond.rs`). What differs between the eras (where a streamed
//! reply goes, what a cancelled request was stopped by, what a failure
//! ends) is the era's [`Scope`]: this module knows no era.

use crate::http::app::Context;
use crate::http::app::{App, HandlerError, Reply};
use crate::http::counters::HttpCounters;
use crate::http::observe;
use crate::http::run::admission::{HandlerCount, HandlerGuard, HandlerTasks};
use crate::http::session::running::Listed;
use crate::http::sse::{Out, Outlet};
use crate::http::tasks::{Chosen, TaskChoice};
use crate::http::wire::caught::panic_message;
use crate::http::wire::jsonrpc::{self, Message, RpcError};
use crate::Reason;
use futures_util::future::OptionFuture;
use futures_util::FutureExt;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::sync::oneshot;
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
pub(crate) trait Scope: Send + Sync + 'static {
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
/// (a 2026-07-28 request's: a handler that awaits I/O then wakes the
/// connection's task, not another worker's; a streamed answer's pump
/// leaves for a task of its own). From then on it is listed by the scope,
/// and it stops when `cancel` is cancelled (the session's end,
/// `notifications/cancelled`, the client gone) or the handler timeout
/// passes: its future is dropped, and the request is answered with the
/// [`Stop`].
pub(crate) async fn run<A: App, S: Scope>(
    runner: &Arc<Runner<A>>,
    scope: S,
    ctx: Context<A::Session>,
    message: Message,
    choice: TaskChoice,
) -> Started {
    let (outcome_tx, outcome_rx) = oneshot::channel();
    let cancel = ctx.cancel.clone();
    let token = cancel.clone();
    let outlives = scope.outlives_connection();
    let shared = Arc::clone(runner);
    let task = async move {
        let runner = &*shared;
        let _counted = HandlerCount::new(&runner.counters);
        let request_id = message.request_id();
        let mut answer = Report {
            to: Some(outcome_tx),
            out: None,
        };
        let stop = {
            let work = work(runner, &scope, ctx, message, choice, &mut answer);
            tokio::pin!(work);
            let first = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await;
            if first.is_ready() {
                None
            } else {
                let _listed = request_id.as_ref().and_then(|id| scope.list(id, &cancel));
                let limit = runner.timeout;
                let deadline = limit.and_then(|l| tokio::time::Instant::now().checked_add(l));
                let timeout = OptionFuture::from(deadline.map(tokio::time::sleep_until));
                tokio::select! {
                    biased;
                    () = &mut work => None,
                    () = cancel.cancelled() => Some(scope.stopped()),
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
            answer.stopped(stop, request_id.as_ref());
        }
        // Whatever borrowed the scope (a logged stream) goes before it.
        drop(answer);
        drop(scope);
    };
    // Polled here, the work is in the request's span already (the
    // caller's); only a task it moves to is put in that span again, so a
    // poll enters the span once, not twice (with the OpenTelemetry layer an
    // enter and its exit cost about a thousand instructions).
    let mut task: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(task);
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
/// reply, the pump that carries it.
async fn work<'a, A: App, S: Scope>(
    runner: &Runner<A>,
    scope: &'a S,
    ctx: Context<A::Session>,
    message: Message,
    choice: TaskChoice,
    answer: &mut Report<'a>,
) {
    let is_request = matches!(message, Message::Request(_));
    let cancel = ctx.cancel.clone();
    #[cfg(feature = "oauth")]
    let tool_filter = match &message {
        Message::Request(request) if request.method == "tools/list" => ctx
            .request
            .extensions
            .get::<crate::http::access::oauth::ToolListFilter>()
            .cloned(),
        _ => None,
    };
    let outcome = AssertUnwindSafe(runner.app.handle(ctx, message))
        .catch_unwind()
        .await;
    let reply = match outcome {
        // The resource server hides the tools the token cannot call.
        #[cfg(feature = "oauth")]
        Ok(Ok(reply @ (Reply::Result(_) | Reply::Serialized(_)))) if tool_filter.is_some() => {
            match (reply.into_tree(), &tool_filter) {
                (Reply::Result(mut result), Some(filter)) => {
                    filter.apply(&mut result);
                    Reply::Result(result)
                }
                (other, _) => other,
            }
        }
        Ok(Ok(reply)) => reply,
        Ok(Err(error)) => return fail(scope, answer, &error),
        Err(panic) => {
            let error = HandlerError::msg(format!("handler panicked: {}", panic_message(&*panic)));
            return fail(scope, answer, &error);
        }
    };
    if !is_request {
        answer.send(Dispatched::Reply(Reply::Accepted));
        return;
    }
    match reply {
        Reply::Stream(stream) => {
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
        Reply::Task(work) => {
            // The era decided whether this call may become a task; if not,
            // its work is the call's answer, run here (under the request's
            // cancellation and timeout), or refused.
            let reply = match choice.resolve(work, cancel).await {
                Chosen::Task(work) => Reply::Task(work),
                Chosen::Answered(Ok(result)) => Reply::Result(result),
                Chosen::Answered(Err(error)) => Reply::Error(error),
            };
            answer.send(Dispatched::Reply(reply));
        }
        reply => {
            answer.send(Dispatched::Reply(reply));
        }
    }
}

/// The handler failed: the scope hears it (a session ends `Failed`), the
/// request gets [`Dispatched::Failed`].
fn fail<S: Scope>(scope: &S, answer: &mut Report<'_>, error: &HandlerError) {
    scope.failed(error);
    answer.send(Dispatched::Failed);
}

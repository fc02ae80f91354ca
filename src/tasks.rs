//! A store of tasks: long-running work, each with exactly one way it ended.
//!
//! Each task is an entry of a [`Registry`] of its own: its id is minted by
//! the registry (the node prefix a fleet routes by, the slot, the
//! generation, a 128-bit secret), and every lookup by id costs what a
//! session lookup costs. A task's end is an [`Outcome`]: completion,
//! failure, cancellation, expiry and abandonment all race through its one
//! compare-and-swap, so exactly one of them wins, and only the winner is
//! counted (and may act: notify, log).
//!
//! A task's life, in the registry's terms:
//!
//! * it is created **in flight** ([`TaskStore::create`] returns the
//!   [`Running`] guard its work holds), so while the work runs the task can
//!   never be idle, whatever its age: a TTL never ends running work here
//!   (rmcp 3.11's `TaskManager` aborts a task still running at
//!   `created + ttl`; an application that wants that settles
//!   [`Ended::Expired`] itself, at its deadline);
//! * it ends when one [`settle`](TaskStore::settle) wins; the work lets go
//!   of its guard when it stops, and from then the task is idle;
//! * an ended task stays readable for the store's **retention** (the
//!   registry's idle timeout), counted from its work's end, then the
//!   reaper ([`TaskStore::reap`]) frees it: a client that never polls
//!   costs its result for that long, no longer. No request path does work
//!   proportional to the number of tasks.
//!
//! Work that stops without settling (it panicked, or was dropped) ends as
//! [`Ended::Abandoned`], when its guard is dropped, so no task reads as
//! running forever.
//!
//! ```
//! use std::time::Duration;
//! use sessionreg::{Ended, TaskStore};
//!
//! let store: TaskStore<&str, String> = TaskStore::builder()
//!     .retention(Duration::from_secs(60))
//!     .build()
//!     .unwrap();
//! let running = store.create("resize image").unwrap();
//! let id = running.id();
//! // A cancel and the work's own completion race: one wins.
//! assert!(store.settle(&store.get(&id).unwrap(), Ended::Cancelled).is_won());
//! assert!(!running.finish(Ended::Completed("done".into())).is_won());
//! assert!(matches!(store.get(&id).unwrap().outcome(), Some(Ended::Cancelled)));
//! ```

use crate::builder::{BuildError, Builder};
use crate::clock::ManualClock;
use crate::id::{ParseIdError, SessionId};
use crate::insert::InsertError;
use crate::outcome::{Outcome, Settle};
use crate::reason::{Miss, Reason};
use crate::registry::Registry;
use crate::session::{InFlight, Session};
use crate::stats::{Stats, OUTCOMES};
use crate::sweep::SweepStep;
use crate::sync::Arc;
use std::fmt;
use std::ops::Deref;
use std::time::Duration;

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended<R> {
    /// Its work finished, with this result (which may itself say the work
    /// went wrong: an MCP tool result with `isError` completes its task).
    Completed(R),
    /// Its work failed, with this error (an MCP task's JSON-RPC error).
    Failed(R),
    /// It was cancelled before its work settled it.
    Cancelled,
    /// Its deadline passed before its work settled it (only where the
    /// application sets one: the store itself never expires running work).
    Expired,
    /// Its work stopped without settling it (it panicked, was dropped, or
    /// the server shut down).
    Abandoned,
}

impl<R> Ended<R> {
    /// Which kind of end this is.
    pub fn kind(&self) -> EndKind {
        match self {
            Ended::Completed(_) => EndKind::Completed,
            Ended::Failed(_) => EndKind::Failed,
            Ended::Cancelled => EndKind::Cancelled,
            Ended::Expired => EndKind::Expired,
            Ended::Abandoned => EndKind::Abandoned,
        }
    }
}

/// The kinds of [`Ended`], without their payload (the label of
/// `sessionreg_tasks_ended_total{outcome}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndKind {
    /// [`Ended::Completed`].
    Completed,
    /// [`Ended::Failed`].
    Failed,
    /// [`Ended::Cancelled`].
    Cancelled,
    /// [`Ended::Expired`].
    Expired,
    /// [`Ended::Abandoned`].
    Abandoned,
}

impl EndKind {
    /// Every kind, in declaration order.
    pub const ALL: [EndKind; 5] = [
        EndKind::Completed,
        EndKind::Failed,
        EndKind::Cancelled,
        EndKind::Expired,
        EndKind::Abandoned,
    ];

    /// The metric label: `completed`, `failed`, `cancelled`, `expired` or
    /// `abandoned`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EndKind::Completed => "completed",
            EndKind::Failed => "failed",
            EndKind::Cancelled => "cancelled",
            EndKind::Expired => "expired",
            EndKind::Abandoned => "abandoned",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for EndKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task: the application's value `T` (what it shows while the task
/// runs: a status message, input it waits for) and the outcome, once one
/// has won.
pub struct Task<T, R> {
    value: T,
    outcome: Outcome<Ended<R>>,
}

impl<T, R> Task<T, R> {
    /// The application's value.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// How the task ended; `None` while it runs.
    pub fn outcome(&self) -> Option<&Ended<R>> {
        self.outcome.get()
    }

    /// Whether an end has won (its outcome may still be being written for
    /// an instant: [`outcome`](Task::outcome) is then still `None`).
    pub fn has_ended(&self) -> bool {
        self.outcome.is_decided()
    }
}

impl<T: fmt::Debug, R: fmt::Debug> fmt::Debug for Task<T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("value", &self.value)
            .field("outcome", &self.outcome)
            .finish()
    }
}

/// What [`TaskStore::settle`] did.
#[must_use = "only the call that won may act on the task's end (notify, log)"]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled<R> {
    /// This call ended the task: its end is the one every reader sees, and
    /// the store counted it.
    Won,
    /// The task had ended already (or another call was ending it): this
    /// call's end, handed back.
    Lost(Ended<R>),
    /// The task is not one of this store's: nothing was ended or counted;
    /// this call's end, handed back.
    Foreign(Ended<R>),
}

impl<R> Settled<R> {
    /// Whether this call ended the task.
    pub fn is_won(&self) -> bool {
        matches!(self, Settled::Won)
    }
}

/// A task found by id: a handle on its entry, which stays valid (and
/// readable) while held, even if the task is freed meanwhile.
pub type TaskRef<T, R> = Session<Task<T, R>>;

// The registry counts a task's end by its kind's index (`stats.rs`).
const _: () = assert!(EndKind::ALL.len() == OUTCOMES);

/// A concurrent store of tasks: see the [module docs](self). Cheap to clone;
/// clones share the store.
pub struct TaskStore<T, R> {
    registry: Arc<Registry<Task<T, R>>>,
}

impl<T, R> Clone for TaskStore<T, R> {
    fn clone(&self) -> Self {
        TaskStore {
            registry: Arc::clone(&self.registry),
        }
    }
}

/// Builds a [`TaskStore`]; see [`TaskStore::builder`].
pub struct TaskStoreBuilder<T, R> {
    registry: Builder<Task<T, R>>,
    retention: Duration,
}

/// How long an ended task stays readable by default: ten minutes.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(600);

impl<T: Send + Sync + 'static, R: Send + Sync + 'static> TaskStoreBuilder<T, R> {
    /// The most tasks alive at once (running, or ended and retained);
    /// [`create`](TaskStore::create) fails past it. Default: the registry's
    /// [`DEFAULT_CAPACITY`](crate::DEFAULT_CAPACITY).
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.registry = self.registry.capacity(capacity);
        self
    }

    /// How long an ended task stays readable, from its work's end (and
    /// from its last [`touch`](crate::Session::touch)); default
    /// [`DEFAULT_RETENTION`].
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// The node id in the store's task ids (their first two hex digits).
    pub fn node_id(mut self, node: u8) -> Self {
        self.registry = self.registry.node_id(node);
        self
    }

    /// The number of shards (see [`Builder::shards`]).
    pub fn shards(mut self, shards: usize) -> Self {
        self.registry = self.registry.shards(shards);
        self
    }

    /// Reads time from `clock` instead of the system's (for tests).
    pub fn manual_clock(mut self, clock: &ManualClock) -> Self {
        self.registry = self.registry.manual_clock(clock);
        self
    }

    /// Builds the store.
    pub fn build(self) -> Result<TaskStore<T, R>, BuildError> {
        let registry = self
            .registry
            .idle_timeout(self.retention)
            .count_outcomes()
            .build()?;
        Ok(TaskStore {
            registry: Arc::new(registry),
        })
    }
}

impl<T: Send + Sync + 'static, R: Send + Sync + 'static> TaskStore<T, R> {
    /// A builder, with the defaults: capacity
    /// [`DEFAULT_CAPACITY`](crate::DEFAULT_CAPACITY), retention
    /// [`DEFAULT_RETENTION`], node 0.
    pub fn builder() -> TaskStoreBuilder<T, R> {
        TaskStoreBuilder {
            registry: Registry::builder(),
            retention: DEFAULT_RETENTION,
        }
    }
}

impl<T, R> TaskStore<T, R> {
    fn registry(&self) -> &Registry<Task<T, R>> {
        &self.registry
    }

    /// Creates a running task holding `value`, readable by its id before
    /// this returns (an MCP server may answer `CreateTaskResult` at once).
    /// Hand the guard to the work: the task runs while the guard lives.
    /// At capacity, gives `value` back.
    ///
    /// The guard holds the task, not the store: creating and finishing a
    /// task write no line that every task shares (its end is counted on
    /// this thread's stripe of the counters its entry's storage keeps).
    pub fn create(&self, value: T) -> Result<Running<T, R>, InsertError<T>> {
        let task = Task {
            value,
            outcome: Outcome::new(),
        };
        match self.registry().insert_in_flight(task) {
            Ok(flight) => Ok(Running {
                flight: Some(flight),
            }),
            Err(full) => Err(full.map(|task| task.value)),
        }
    }

    /// The task named by `id`, running or ended and retained.
    pub fn get(&self, id: &SessionId) -> Result<TaskRef<T, R>, Miss> {
        self.registry().lookup(id)
    }

    /// [`get`](TaskStore::get), handing the task out only if `accept` says
    /// it is the caller's (its value names who created it): another
    /// principal's task is [`Miss::Principal`], to be answered as an
    /// unknown one.
    pub fn get_if(
        &self,
        id: &SessionId,
        accept: impl FnOnce(&T) -> bool,
    ) -> Result<TaskRef<T, R>, Miss> {
        self.registry().lookup_if(id, |task| accept(&task.value))
    }

    /// Parses the text form of a task id, counting a malformed one.
    pub fn parse_id(&self, text: &[u8]) -> Result<SessionId, ParseIdError> {
        self.registry().parse_id(text)
    }

    /// Ends `task` with `ended`, unless it has ended already: exactly one
    /// call per task wins, and only the winner is counted.
    ///
    /// A task of another store is refused ([`Settled::Foreign`], `ended`
    /// handed back): this store neither ends it nor counts an end it never
    /// created.
    ///
    /// ```
    /// use sessionreg::{Ended, Settled, TaskStore};
    ///
    /// let store: TaskStore<(), ()> = TaskStore::builder().build().unwrap();
    /// let other: TaskStore<(), ()> = TaskStore::builder().build().unwrap();
    /// let running = store.create(()).unwrap();
    /// let task = store.get(&running.id()).unwrap();
    /// assert_eq!(other.settle(&task, Ended::Cancelled), Settled::Foreign(Ended::Cancelled));
    /// assert_eq!(store.settle(&task, Ended::Cancelled), Settled::Won);
    /// assert_eq!(store.settle(&task, Ended::Expired), Settled::Lost(Ended::Expired));
    /// ```
    pub fn settle(&self, task: &TaskRef<T, R>, ended: Ended<R>) -> Settled<R> {
        if task.storage_ptr() != self.registry().storage {
            return Settled::Foreign(ended);
        }
        match settle_counted(task, ended) {
            Settle::Won => Settled::Won,
            Settle::Lost(ended) => Settled::Lost(ended),
        }
    }

    /// Frees the tasks that have ended and been idle for the retention;
    /// returns how many. Run it periodically (the HTTP layer's reaper
    /// does, in [steps](TaskStore::reap_step)); running tasks are never
    /// freed by it. One pass, at the cost of a look at each page and the
    /// slots of the pages that may hold a task.
    pub fn reap(&self) -> usize {
        self.registry().reap_idle()
    }

    /// One step of [`reap`](TaskStore::reap), of at most `budget` slots
    /// (see [`Registry::reap_idle_step`]): a reaper that must not hold its
    /// thread for long steps until [`pass_done`](SweepStep::pass_done).
    pub fn reap_step(&self, budget: usize) -> SweepStep {
        self.registry().reap_idle_step(budget)
    }

    /// Frees every task (for shutdown). Work still running keeps its
    /// task's entry until it stops; its end is still counted.
    pub fn shutdown(&self) -> usize {
        self.registry().terminate_all(Reason::Shutdown)
    }

    /// A snapshot of the store's counters.
    pub fn stats(&self) -> TaskStats {
        // Ends first, creations second (inside `stats`): every task counted
        // as ended is also counted as created, so `running` is never below
        // zero (as the registry's live count, `stats.rs`).
        let ended = self.registry().storage().counters.outcomes();
        TaskStats {
            registry: self.registry().stats(),
            ended,
        }
    }
}

impl<T, R> fmt::Debug for TaskStore<T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskStore")
            .field("tasks", &self.registry().len())
            .finish_non_exhaustive()
    }
}

/// A snapshot of a [`TaskStore`]'s counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStats {
    /// The registry's: [`live`](Stats::live) is the tasks held (running,
    /// or ended and retained), [`created`](Stats::created) every task ever
    /// created, and its misses the lookups by id that found none.
    pub registry: Stats,
    ended: [u64; EndKind::ALL.len()],
}

impl TaskStats {
    /// Tasks that ended as `kind`.
    pub fn ended(&self, kind: EndKind) -> u64 {
        self.ended[kind.index()]
    }

    /// Tasks that ended, however.
    pub fn ended_total(&self) -> u64 {
        self.ended.iter().sum()
    }

    /// Tasks created and not yet ended (their work still running).
    pub fn running(&self) -> u64 {
        self.registry.created.saturating_sub(self.ended_total())
    }
}

/// A task's running work: the guard [`TaskStore::create`] returns. The task
/// counts as running while it lives; [`finish`](Running::finish) settles
/// it, and dropping it unsettled settles [`Ended::Abandoned`]. Derefs to
/// the task's entry ([`TaskRef`]).
#[must_use = "the task runs while its guard lives: hand it to the work"]
pub struct Running<T, R> {
    flight: Option<InFlight<Task<T, R>>>,
}

impl<T, R> Running<T, R> {
    fn flight(&self) -> &InFlight<Task<T, R>> {
        self.flight.as_ref().expect("held until finish or drop")
    }

    /// The task's id.
    pub fn id(&self) -> SessionId {
        self.flight().id()
    }

    /// A handle on the task's entry, without a lookup: valid (and readable)
    /// while held, even if the task ends or is freed meanwhile (a shutdown's
    /// sweep, say, between `create` and this call).
    pub fn task(&self) -> TaskRef<T, R> {
        Session::clone(self.flight())
    }

    /// Ends the task with `ended` (unless a cancel or a deadline won
    /// first: then `ended` is handed back) and lets it go: its retention
    /// starts.
    pub fn finish(mut self, ended: Ended<R>) -> Settle<Ended<R>> {
        let flight = self.flight.take().expect("held until finish or drop");
        settle_counted(&flight, ended)
    }
}

impl<T, R> Deref for Running<T, R> {
    type Target = TaskRef<T, R>;

    fn deref(&self) -> &TaskRef<T, R> {
        self.flight()
    }
}

impl<T, R> Drop for Running<T, R> {
    fn drop(&mut self) {
        if let Some(flight) = self.flight.take() {
            // A loss is fine: something else ended it first.
            let _ = settle_counted(&flight, Ended::Abandoned);
        }
    }
}

/// Ends `task` with `ended` unless it has ended already, and counts the
/// winner in the counters of the storage the task lives in (its own store's:
/// the caller has checked, or holds the task's running guard).
fn settle_counted<T, R>(task: &TaskRef<T, R>, ended: Ended<R>) -> Settle<Ended<R>> {
    let kind = ended.kind();
    let settled = task.outcome.settle(ended);
    if settled.is_won() {
        task.storage().counters.outcome(kind.index());
    }
    settled
}

impl<T, R> fmt::Debug for Running<T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Running")
            .field("id", &self.flight.as_ref().map(|f| f.id()))
            .finish()
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    fn store(clock: &ManualClock, retention_ms: u64) -> TaskStore<u32, &'static str> {
        TaskStore::builder()
            .retention(Duration::from_millis(retention_ms))
            .manual_clock(clock)
            .capacity(4)
            .build()
            .unwrap()
    }

    #[test]
    fn a_running_task_outlives_any_retention_and_an_ended_one_is_freed_after_it() {
        let clock = ManualClock::new();
        let store = store(&clock, 1_000);
        let running = store.create(1).unwrap();
        let id = running.id();
        clock.advance(Duration::from_secs(3_600));
        assert_eq!(store.reap(), 0);
        assert!(store.get(&id).unwrap().outcome().is_none());
        assert_eq!(store.stats().running(), 1);
        assert!(running.finish(Ended::Completed("ok")).is_won());
        // The retention counts from the work's end (the first sweep after
        // it stamps it: see `Registry::reap_idle`).
        assert_eq!(store.reap(), 0);
        clock.advance(Duration::from_millis(999));
        assert_eq!(store.reap(), 0);
        assert_eq!(
            store.get(&id).unwrap().outcome(),
            Some(&Ended::Completed("ok"))
        );
        clock.advance(Duration::from_millis(2));
        assert_eq!(store.reap(), 1);
        assert_eq!(store.get(&id).unwrap_err(), Miss::Stale);
        let stats = store.stats();
        assert_eq!(stats.ended(EndKind::Completed), 1);
        assert_eq!((stats.running(), stats.registry.live), (0, 0));
    }

    #[test]
    fn one_end_wins_and_work_dropped_unsettled_is_abandoned() {
        let clock = ManualClock::new();
        let store = store(&clock, 1_000);
        let running = store.create(1).unwrap();
        let task = store.get(&running.id()).unwrap();
        assert!(store.settle(&task, Ended::Cancelled).is_won());
        assert_eq!(
            store.settle(&task, Ended::Expired),
            Settled::Lost(Ended::Expired)
        );
        assert!(!running.finish(Ended::Failed("late")).is_won());
        let dropped = store.create(2).unwrap();
        let id = dropped.id();
        // Its handle holds the entry through a shutdown's sweep.
        let handle = dropped.task();
        assert_eq!(store.shutdown(), 2, "the first task, kept, and this one");
        assert!(handle.is_terminated());
        assert_eq!(*handle.value(), 2);
        assert_eq!(store.get(&id).unwrap_err(), Miss::Stale);
        drop(dropped);
        assert_eq!(handle.outcome(), Some(&Ended::Abandoned));
        let stats = store.stats();
        assert_eq!(stats.ended(EndKind::Cancelled), 1);
        assert_eq!(stats.ended(EndKind::Abandoned), 1);
        assert_eq!(stats.ended_total(), 2, "losers are not counted");
    }

    /// The running work holds its task, not the store: the store may go
    /// first, and the work still ends its task, once, and frees it.
    #[test]
    fn work_outlives_its_store() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Counted(std::sync::Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = std::sync::Arc::new(AtomicUsize::new(0));
        let store: TaskStore<Counted, &str> = TaskStore::builder().build().unwrap();
        let running = store.create(Counted(drops.clone())).unwrap();
        drop(store);
        assert_eq!(drops.load(Ordering::SeqCst), 0, "freed under its work");
        assert!(running.finish(Ended::Completed("done")).is_won());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn capacity_gives_the_value_back_and_another_owner_misses() {
        let clock = ManualClock::new();
        let store = store(&clock, 1_000);
        let held: Vec<_> = (0..4).map(|i| store.create(i).unwrap()).collect();
        assert_eq!(store.create(9).unwrap_err().into_inner(), 9);
        let id = held[2].id();
        assert_eq!(store.get_if(&id, |v| *v == 2).map(|t| *t.value()), Ok(2));
        assert_eq!(store.get_if(&id, |v| *v == 3).unwrap_err(), Miss::Principal);
    }
}

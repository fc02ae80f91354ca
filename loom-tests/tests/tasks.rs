//! How a task ends: of every path racing to end it, exactly one wins, is
//! counted once, and is what every reader sees; nothing is torn, dropped
//! twice or left behind.
//!
//! A task's end is an [`Outcome`] (`outcome.rs`): one CAS OPEN → WRITING
//! picks the winner, which writes its value and publishes it with a Release
//! store of SET; a reader's Acquire load of SET sees the value whole. The
//! models prove, under every interleaving loom explores:
//!
//! * on a bare `Outcome`, three settlers racing a reader: one `Won`, the
//!   losers get their own values back, the reader sees nothing or exactly
//!   the winner's value (loom's cell flags a read racing the write), and
//!   every value is dropped once, the winner's with the `Outcome`;
//! * on a [`TaskStore`] task, completion (the work's `finish`), a cancel and
//!   an expiry racing: one wins, the end counters count it once and under
//!   its kind, a lookup afterwards shows it, and once the retention has
//!   passed the reaper frees the task, its value and result dropped once
//!   and the storage freed;
//! * work dropped unsettled (abandonment) racing a cancel: one end, counted
//!   once, `Abandoned` or `Cancelled` as the race went;
//! * the reaper racing the work's end: it never ends running work, and
//!   what it frees has ended;
//! * an update racing completion, as the HTTP layer does it (the task's
//!   value holds the input it waits for behind a lock; an update answers
//!   only while the task has not ended): a reader polling the task's status
//!   never sees it move backwards, in particular never non-terminal after
//!   terminal.
#![cfg(sessionreg_loom)]

use loom::sync::atomic::AtomicBool;
use loom::sync::{Arc, Mutex};
use loom::thread;
use loom_tests::{model, race_point, Log, StorageWatch, Tracked};
use sessionreg::{
    EndKind, Ended, ManualClock, Miss, Outcome, SessionId, Settle, Settled, Task, TaskStore,
};
use std::sync::atomic::Ordering::{Acquire, Release};
use std::time::Duration;

/// The retention of every store here: one tick of the manual clock, which
/// never moves while the threads race, so an ended task stays readable
/// until the model moves it.
const RETENTION: Duration = Duration::from_millis(1);

/// Settles `value` on `outcome`: its serial if it won; if it lost, checks
/// that the value handed back is its own, whole, and drops it.
fn settle_tracked(outcome: &Outcome<Tracked>, value: Tracked) -> Option<u32> {
    let serial = value.serial();
    match outcome.settle(value) {
        Settle::Won => Some(serial),
        Settle::Lost(back) => {
            assert_eq!(back.serial(), serial, "a loser got another value back");
            assert_eq!(back.read(), serial);
            None
        }
    }
}

/// What a reader of `outcome` sees: `None`, or the serial of the value it
/// holds, read through its payload (which panics on a value dropped or not
/// yet written, and loom flags a read racing the write).
fn read_outcome(outcome: &Outcome<Tracked>) -> Option<u32> {
    outcome.get().map(Tracked::read)
}

/// Three settlers, each on a thread of its own, race the main thread's
/// read of one `Outcome`: exactly one `Won`; each loser gets its own value
/// back, whole; the read is `None` or exactly the winner's value, whole
/// (never another's, never one being written: loom's cell flags a read
/// racing the winner's write); every value is dropped exactly once, the
/// losers' by the losers and the winner's with the `Outcome`.
///
/// Fails if the store of SET is Relaxed, or the load in `get` is (loom
/// reports the read racing the write), or if the CAS is a load and a store
/// (two winners write the cell).
#[test]
fn of_three_settlers_one_wins_and_a_reader_sees_only_its_value() {
    model(|| {
        let log = Log::new();
        let outcome = Arc::new(Outcome::<Tracked>::new());
        let settlers: Vec<_> = (0..3)
            .map(|_| {
                let (outcome, value) = (outcome.clone(), log.value());
                thread::spawn(move || settle_tracked(&outcome, value))
            })
            .collect();
        race_point();
        let read = read_outcome(&outcome);
        let won: Vec<_> = settlers.into_iter().map(|t| t.join().unwrap()).collect();

        let winners: Vec<u32> = won.iter().flatten().copied().collect();
        assert_eq!(winners.len(), 1, "winners: {won:?}");
        let winner = winners[0];
        assert!(
            read.is_none() || read == Some(winner),
            "read {read:?}, won by {winner}"
        );
        assert_eq!(read_outcome(&outcome), Some(winner));
        assert!(outcome.is_decided());
        for serial in 0..3 {
            let expected = usize::from(serial != winner);
            assert_eq!(
                log.drops(serial),
                expected,
                "value {serial}, won by {winner}"
            );
        }
        drop(outcome);
        log.assert_all_dropped_once();
    });
}

/// A store of `capacity` tasks in one shard, on `clock`, with
/// [`RETENTION`]. Its values are [`Tracked`] (so the pages holding them
/// show in a [`StorageWatch`]); its results are boxed ones (each box shows
/// there too, until dropped): an unboxed `Tracked` result makes `Ended`,
/// the `Outcome` and the task several KiB each, and the moves of them
/// overflow the 32 KiB stacks loom runs its threads on.
fn store(clock: &ManualClock, capacity: usize) -> TaskStore<Tracked, Box<Tracked>> {
    TaskStore::builder()
        .capacity(capacity)
        .shards(1)
        .retention(RETENTION)
        .manual_clock(clock)
        .build()
        .expect("a valid configuration")
}

/// `Some(kind)` if `settled` won (the caller settled `kind`); `None` if it
/// lost, after checking that the end handed back is the caller's own, its
/// result whole (and dropping it).
fn won(kind: EndKind, settled: Settle<Ended<Box<Tracked>>>) -> Option<EndKind> {
    match settled {
        Settle::Won => Some(kind),
        Settle::Lost(lost) => {
            assert_eq!(lost.kind(), kind, "a loser got another end back");
            if let Ended::Completed(result) | Ended::Failed(result) = &lost {
                result.read();
            }
            None
        }
    }
}

/// A store's settle of one of its own tasks, as the task's own `Settle`
/// (a store never refuses its own task).
fn own(settled: Settled<Box<Tracked>>) -> Settle<Ended<Box<Tracked>>> {
    match settled {
        Settled::Won => Settle::Won,
        Settled::Lost(ended) => Settle::Lost(ended),
        Settled::Foreign(_) => panic!("a store refused its own task as another's"),
    }
}

/// Looks the task up by `id` and settles `ended` on it, as a cancel
/// (`tasks/cancel`) does: the kind, if it won.
fn settle_by_id(
    store: &TaskStore<Tracked, Box<Tracked>>,
    id: &SessionId,
    ended: Ended<Box<Tracked>>,
) -> Option<EndKind> {
    let task = store.get(id).expect("a running or retained task is found");
    let kind = ended.kind();
    won(kind, own(store.settle(&task, ended)))
}

/// Exactly one of `ends` won: which.
#[track_caller]
fn the_winner(ends: &[Option<EndKind>]) -> EndKind {
    let winners: Vec<EndKind> = ends.iter().flatten().copied().collect();
    assert_eq!(winners.len(), 1, "winners: {ends:?}");
    winners[0]
}

/// Once every settler is joined: the store counted one end, `winner`'s, and
/// the task `id` (value serial 0; a result, if any, serial 1) is retained,
/// showing that end, until the retention passes; then the reaper frees it,
/// a lookup misses it, and the store is clean.
#[track_caller]
fn assert_one_end_then_reaped(
    store: &TaskStore<Tracked, Box<Tracked>>,
    clock: &ManualClock,
    log: &std::sync::Arc<Log>,
    id: &SessionId,
    winner: EndKind,
) {
    let stats = store.stats();
    assert_eq!(stats.ended_total(), 1, "{winner:?} won: {stats:?}");
    assert_eq!(stats.ended(winner), 1, "{winner:?} won: {stats:?}");
    assert_eq!(stats.running(), 0, "{stats:?}");
    {
        let task = store.get(id).expect("an ended task is retained");
        assert!(task.has_ended());
        let outcome = task.outcome().expect("set: every settler is joined");
        assert_eq!(outcome.kind(), winner);
        if let Ended::Completed(result) = outcome {
            assert_eq!(result.read(), 1);
        }
        assert_eq!(task.value().read(), 0);
    }
    assert_eq!(log.drops(0), 0, "the task's value dropped while retained");
    assert_eq!(store.reap(), 0, "reaped before its retention passed");

    clock.advance(RETENTION);
    assert_eq!(store.reap(), 1, "an ended task outlived its retention");
    assert_eq!(store.get(id).unwrap_err(), Miss::Stale);
    assert_eq!(store.reap(), 0);
    assert_store_clean(store, clock, log, 1);
}

/// Asserts, once every thread is joined and every task reference dropped,
/// that the store holds nothing and has lost nothing: no task held, every
/// value made so far dropped exactly once, all `capacity` slots free
/// (creating that many succeeds, one more hands its value back). Leaves the
/// store empty again (those tasks abandoned and reaped).
#[track_caller]
fn assert_store_clean(
    store: &TaskStore<Tracked, Box<Tracked>>,
    clock: &ManualClock,
    log: &std::sync::Arc<Log>,
    capacity: usize,
) {
    let stats = store.stats();
    assert_eq!(stats.registry.live, 0, "tasks left: {stats:?}");
    assert_eq!(stats.running(), 0, "{stats:?}");
    log.assert_all_dropped_once();

    let held: Vec<_> = (0..capacity)
        .map(|_| match store.create(log.value()) {
            Ok(running) => running,
            Err(e) => panic!("a slot leaked: {e}"),
        })
        .collect();
    let extra = log.value();
    let serial = extra.serial();
    match store.create(extra) {
        Ok(_) => panic!("more tasks than capacity: a slot is on the free list twice"),
        Err(e) => assert_eq!(e.into_inner().serial(), serial),
    }
    drop(held);
    clock.advance(RETENTION);
    assert_eq!(store.reap(), capacity);
    assert_eq!(store.stats().registry.live, 0);
    log.assert_all_dropped_once();
}

/// The task's work completes (`Running::finish`, on a thread), a cancel
/// looks the task up by id and settles it (on another: `tasks/cancel`), and
/// an application's deadline settles it expired (on the main thread,
/// through the reference it was armed with): exactly one wins;
/// `ended_total()` is 1 and `ended(kind)` the winner's; a lookup afterwards
/// shows the winner's end (the work's result whole, if it won; a losing
/// result is handed back and dropped by its loser); the task stays until
/// its retention has passed, then `reap()` frees it, a lookup is a miss,
/// every value is dropped once, and the storage is freed with the store.
///
/// The deadline holds a reference rather than looking the task up when it
/// fires: two lookups racing make the model some five times larger, and
/// lookups racing ends are `get_vs_terminate.rs`'s.
///
/// Fails if `TaskStore::settle` counts a loser's end too.
#[test]
fn completion_vs_cancel_vs_expiry() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let store = store(&clock, 1);
        watch.assert_allocated();
        let running = store.create(log.value()).unwrap();
        let id = running.id();
        let result = Box::new(log.value());
        let deadline = store.get(&id).unwrap();

        let worker = thread::spawn(move || {
            won(EndKind::Completed, running.finish(Ended::Completed(result)))
        });
        let canceller = {
            let store = store.clone();
            thread::spawn(move || settle_by_id(&store, &id, Ended::Cancelled))
        };
        race_point();
        let expired = won(
            EndKind::Expired,
            own(store.settle(&deadline, Ended::Expired)),
        );
        drop(deadline);
        let ends = [worker.join().unwrap(), canceller.join().unwrap(), expired];

        let winner = the_winner(&ends);
        let result_kept = winner == EndKind::Completed;
        assert_eq!(log.drops(1), usize::from(!result_kept), "{winner:?} won");
        assert_one_end_then_reaped(&store, &clock, &log, &id, winner);
        drop(store);
        watch.assert_freed();
    });
}

/// The work is dropped unsettled (it panicked, or its future was dropped)
/// on one thread while a cancel settles the task on another: exactly one
/// end is counted, and the task ends `Cancelled` if the cancel won,
/// `Abandoned` otherwise; a cancel that starts after the drop is over (it
/// sees the worker's flag) always loses. Then the task is retained, reaped
/// and clean as above.
///
/// Fails if dropping an unsettled `Running` does not settle `Abandoned`.
#[test]
fn abandonment_vs_cancel() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let store = store(&clock, 1);
        let running = store.create(log.value()).unwrap();
        let id = running.id();
        let dropped = Arc::new(AtomicBool::new(false));

        let worker = {
            let dropped = dropped.clone();
            thread::spawn(move || {
                drop(running);
                dropped.store(true, Release);
            })
        };
        race_point();
        let after_the_drop = dropped.load(Acquire);
        let cancelled = settle_by_id(&store, &id, Ended::Cancelled);
        worker.join().unwrap();

        if after_the_drop {
            assert_eq!(cancelled, None, "the dropped work left its task running");
        }
        let winner = cancelled.unwrap_or(EndKind::Abandoned);
        assert_one_end_then_reaped(&store, &clock, &log, &id, winner);
        drop(store);
        watch.assert_freed();
    });
}

/// The reaper sweeps while the work finishes, with a retention of zero (a
/// task is due the moment its work lets go): the reaper never ends a task
/// whose work still runs (the work, holding its guard, never sees its task
/// terminated), and a task it frees has ended (the sweep, on its own
/// thread, sees the outcome decided). If the sweep came before the work's
/// end, the next one frees the task. Either way the completion is counted
/// once, a lookup afterwards is a miss, every value is dropped once, and
/// the storage is freed with the store.
///
/// Fails if `Running::finish` lets go of the task's guard before it
/// settles: the reaper can then free a task that has not ended.
#[test]
fn the_reaper_never_frees_running_work() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let clock = ManualClock::new();
        let store: TaskStore<Tracked, Box<Tracked>> = TaskStore::builder()
            .capacity(1)
            .shards(1)
            .retention(Duration::ZERO)
            .manual_clock(&clock)
            .build()
            .expect("a valid configuration");
        let running = store.create(log.value()).unwrap();
        let id = running.id();
        let (for_worker, for_reaper) = (store.get(&id).unwrap(), store.get(&id).unwrap());
        let result = Box::new(log.value());

        let worker = thread::spawn(move || {
            assert!(!for_worker.is_terminated(), "the reaper ended running work");
            assert!(running.finish(Ended::Completed(result)).is_won());
        });
        let reaper = {
            let store = store.clone();
            thread::spawn(move || {
                let reaped = store.reap();
                if reaped == 1 {
                    assert!(for_reaper.has_ended(), "the reaper freed a task not ended");
                }
                reaped
            })
        };
        race_point();
        worker.join().unwrap();
        let reaped = reaper.join().unwrap();

        let stats = store.stats();
        assert_eq!(stats.ended(EndKind::Completed), 1, "{stats:?}");
        assert_eq!(stats.ended_total(), 1, "{stats:?}");
        if reaped == 0 {
            assert_eq!(store.reap(), 1, "an ended task outlived a zero retention");
        }
        assert_eq!(store.get(&id).unwrap_err(), Miss::Stale);
        assert_store_clean(&store, &clock, &log, 1);
        drop(store);
        watch.assert_freed();
    });
}

/// A task waiting for input, as the HTTP layer keeps one: the input keys it
/// still waits for, behind a lock.
struct Job {
    pending: Mutex<u8>,
}

/// The one input key the job waits for.
const ASKED: u8 = 1;

/// A task's status as `tasks/get` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Status {
    /// Not ended, input still pending.
    InputRequired,
    /// Not ended, no input pending.
    Working,
    /// Ended (completed, failed, cancelled, expired or abandoned).
    Terminal,
}

fn status(task: &Task<Job, ()>) -> Status {
    if task.outcome().is_some() {
        Status::Terminal
    } else if *task.value().pending.lock().unwrap() != 0 {
        Status::InputRequired
    } else {
        Status::Working
    }
}

/// An update (the client's answer to the input the task asked for) races
/// the work's completion while a reader polls the status. The updater takes
/// the task's lock and removes the key it answers only if the task has not
/// ended (`has_ended`); completion is `Running::finish`. The reader's two
/// statuses never go backwards (input required, then working, then
/// terminal): in particular, once it sees the outcome it never sees the
/// task non-terminal again, and it sees "working" only if the update was
/// accepted. Afterwards the task is terminal, and its input is answered
/// exactly when the updater said it accepted the answer.
///
/// The updater and the reader hold references looked up before they start
/// (lookups racing ends are `get_vs_terminate.rs`); the reader runs on a
/// thread of its own so loom may show it stale loads (see `counters.rs`).
/// With `status` checking the outcome first, statuses can only go
/// backwards if an outcome once seen could be unseen; what the model
/// catches in the core is a read of the outcome racing its write (it fails
/// if the load in `Outcome::get` is Relaxed).
#[test]
fn an_update_racing_completion_never_makes_an_ended_task_look_running() {
    model(|| {
        let clock = ManualClock::new();
        let store: TaskStore<Job, ()> = TaskStore::builder()
            .capacity(1)
            .shards(1)
            .retention(RETENTION)
            .manual_clock(&clock)
            .build()
            .expect("a valid configuration");
        let running = store
            .create(Job {
                pending: Mutex::new(ASKED),
            })
            .unwrap();
        let id = running.id();
        let (for_updater, for_reader) = (store.get(&id).unwrap(), store.get(&id).unwrap());

        let updater = thread::spawn(move || {
            let mut pending = for_updater.value().pending.lock().unwrap();
            if for_updater.has_ended() {
                return false;
            }
            *pending &= !ASKED;
            true
        });
        let reader = thread::spawn(move || {
            let first = status(&for_reader);
            [first, status(&for_reader)]
        });
        race_point();
        assert!(running.finish(Ended::Completed(())).is_won());
        let accepted = updater.join().unwrap();
        let seen = reader.join().unwrap();

        assert!(
            seen.windows(2).all(|pair| pair[0] <= pair[1]),
            "statuses went backwards: {seen:?} (update accepted: {accepted})"
        );
        assert!(
            accepted || !seen.contains(&Status::Working),
            "working without an answer: {seen:?}"
        );
        let task = store.get(&id).unwrap();
        assert_eq!(status(&task), Status::Terminal);
        let answered = *task.value().pending.lock().unwrap() == 0;
        assert_eq!(
            answered, accepted,
            "the answer's fate and the reply disagree"
        );
        drop(task);
        let stats = store.stats();
        assert_eq!(stats.ended(EndKind::Completed), 1, "{stats:?}");
        assert_eq!(stats.ended_total(), 1, "{stats:?}");
        clock.advance(RETENTION);
        assert_eq!(store.reap(), 1);
        assert!(matches!(store.get(&id), Err(Miss::Stale)));
    });
}

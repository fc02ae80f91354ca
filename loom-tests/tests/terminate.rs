//! Every way a session ends, racing on one id: exactly one winner, one close
//! with the winner's reason, one drop of the value, nothing left behind.
#![cfg(sessionreg_loom)]

use loom::sync::Arc;
use loom::thread;
use loom_tests::{
    assert_clean, model, model_capped, race_point, registry, spawn_reuser, Close, Log,
    StorageWatch, Tracked,
};
use sessionreg::{Miss, Reason, Registry, SessionId, Termination};

/// One way a session can end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// `terminate(id, Deleted)`: a client's DELETE.
    Delete,
    /// `terminate(id, Failed)`: a handler failed.
    Fail,
    /// `reap_idle()`, with a zero idle timeout: the reaper's sweep.
    Reap,
    /// `terminate_all(Shutdown)`: the server shuts down.
    Shutdown,
}

impl Path {
    fn reason(self) -> Reason {
        match self {
            Path::Delete => Reason::Deleted,
            Path::Fail => Reason::Failed,
            Path::Reap => Reason::IdleTimeout,
            Path::Shutdown => Reason::Shutdown,
        }
    }

    /// Takes this path; returns how many sessions it ended (0 or 1 here).
    fn run(self, registry: &Registry<Tracked>, id: &SessionId) -> usize {
        match self {
            Path::Delete | Path::Fail => match registry.terminate(id, self.reason()) {
                Termination::Won => 1,
                Termination::AlreadyTerminated => 0,
                other => panic!("{self:?} on a real id: {other:?}"),
            },
            Path::Reap => registry.reap_idle(),
            Path::Shutdown => registry.terminate_all(Reason::Shutdown),
        }
    }
}

/// Races `paths` on one session: the first runs on the model's main thread,
/// each other one on a thread of its own.
fn race(paths: &'static [Path]) {
    race_bounded(paths, usize::MAX);
}

/// [`race`], with at most `cap` preemptions ([`model_capped`]).
fn race_bounded(paths: &'static [Path], cap: usize) {
    model_capped(cap, move || {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, paths.contains(&Path::Reap)));
        watch.assert_allocated();
        let id = registry.insert(log.value()).unwrap();

        let threads: Vec<_> = paths[1..]
            .iter()
            .map(|&path| {
                let registry = registry.clone();
                thread::spawn(move || path.run(&registry, &id))
            })
            .collect();
        race_point();
        let mut wins = vec![paths[0].run(&registry, &id)];
        wins.extend(threads.into_iter().map(|t| t.join().unwrap()));

        assert_eq!(wins.iter().sum::<usize>(), 1, "{paths:?} won {wins:?}");
        let winner = paths[wins.iter().position(|&w| w == 1).unwrap()];
        assert_eq!(
            log.closes(),
            [Close {
                id,
                serial: 0,
                reason: winner.reason()
            }],
            "{paths:?}, won by {winner:?}"
        );
        assert_eq!(log.drops(0), 1);
        assert_eq!(registry.len(), 0);
        let stats = registry.stats();
        assert_eq!(stats.terminated(winner.reason()), 1, "{stats:?}");
        assert_eq!(stats.terminated_total(), 1, "{stats:?}");
        // The id is spent: every later path finds it ended.
        assert!(registry.get(&id).is_none());
        assert_eq!(
            registry.terminate(&id, Reason::Failed),
            Termination::AlreadyTerminated
        );
        assert_eq!(registry.reap_idle(), 0);
        assert_eq!(registry.terminate_all(Reason::Shutdown), 0);

        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

#[test]
fn delete_vs_fail() {
    race(&[Path::Delete, Path::Fail]);
}

#[test]
fn delete_vs_reap() {
    race(&[Path::Delete, Path::Reap]);
}

#[test]
fn reap_vs_fail() {
    race(&[Path::Reap, Path::Fail]);
}

#[test]
fn delete_vs_shutdown() {
    race(&[Path::Delete, Path::Shutdown]);
}

#[test]
fn shutdown_vs_reap() {
    race(&[Path::Shutdown, Path::Reap]);
}

#[test]
fn fail_vs_shutdown() {
    race(&[Path::Fail, Path::Shutdown]);
}

/// Two reapers (two sweeps, or the HTTP layer's timer and a manual
/// `reap_idle`): both close the session for expiry, and one ends it.
#[test]
fn reap_vs_reap() {
    race(&[Path::Reap, Path::Reap]);
}

#[test]
fn delete_vs_delete() {
    race(&[Path::Delete, Path::Delete]);
}

/// Three threads, two of them sweeps: each sweep looks at the page's
/// occupancy and records it (`slab/occupancy.rs`), which made this model some
/// seven times larger at four preemptions. At three it explores about what
/// four did before; the occupancy's races are checked at four by
/// `sweep.rs` and the two-path races here.
#[test]
fn delete_vs_reap_vs_shutdown() {
    race_bounded(&[Path::Delete, Path::Reap, Path::Shutdown], 3);
}

#[test]
fn delete_vs_fail_vs_reap() {
    race(&[Path::Fail, Path::Delete, Path::Reap]);
}

/// A lookup that finds the session idle ends it itself (with `IdleTimeout`),
/// racing a DELETE: one close, and the lookup never hands the session out.
#[test]
fn expiring_get_vs_delete() {
    model(|| {
        let watch = StorageWatch::start();
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, true));
        let id = registry.insert(log.value()).unwrap();

        let deleter = {
            let registry = registry.clone();
            thread::spawn(move || registry.terminate(&id, Reason::Deleted))
        };
        race_point();
        assert!(
            registry.get(&id).is_none(),
            "an idle session was handed out"
        );
        let deleted = deleter.join().unwrap();

        let reason = if deleted.is_won() {
            Reason::Deleted
        } else {
            assert_eq!(deleted, Termination::AlreadyTerminated);
            Reason::IdleTimeout
        };
        log.assert_closed_once(id, reason);
        assert_eq!(registry.stats().terminated(reason), 1);
        assert_clean(&registry, &log);
        drop(registry);
        watch.assert_freed();
    });
}

/// A terminate or lookup that loses the race to a terminate of the same id
/// must say "already terminated" / "stale": the id was real. It must never
/// call it forged (a wrong secret: an attack, counted as such).
///
/// The loser loads `LIVE(g)`, then reads the slot's secret word. By then the
/// winner may have ended the session and pushed the slot on the free list,
/// which stores the list link in that same word, or an insert may have
/// refilled it. Unless those stores are Release and the secret load Acquire
/// (as they are, for this reason), the loser can read the new word while its
/// re-check of the lifecycle word (`mismatch`, in `lookup.rs`) still sees
/// the old `LIVE(g)`, and conclude "forged". (Loom found this; the model
/// keeps it fixed.)
#[test]
fn a_spent_id_is_never_forged() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let id = registry.insert(log.value()).unwrap();

        let deleter = {
            let registry = registry.clone();
            thread::spawn(move || registry.terminate(&id, Reason::Deleted))
        };
        race_point();
        let second = registry.terminate(&id, Reason::Failed);
        let lookup = registry.lookup(&id).map(drop);
        let first = deleter.join().unwrap();

        let mut results = [first, second];
        results.sort_by_key(|t| !t.is_won());
        assert_eq!(
            results,
            [Termination::Won, Termination::AlreadyTerminated],
            "terminate(Deleted) on one thread, terminate(Failed) on another"
        );
        assert_eq!(lookup, Err(Miss::Stale));
        assert_eq!(registry.stats().misses(Miss::Forged), 0);
        assert_clean(&registry, &log);
    });
}

/// The same, when the slot has been refilled meanwhile: the loser may read
/// the new session's secret (`slab/slot.rs`, `fill`), and must then see on its
/// re-check that the old `LIVE(g)` is gone (the store is Release and the load
/// Acquire for this reason).
#[test]
fn a_spent_id_is_never_forged_after_reuse() {
    model(|| {
        let log = Log::new();
        let registry = Arc::new(registry(&log, 1, false));
        let old = registry.insert(log.value()).unwrap();
        let value = log.value();

        let reuser = spawn_reuser(&registry, old, value);
        race_point();
        let second = registry.terminate(&old, Reason::Failed);
        let (first, new) = reuser.join().unwrap();

        let mut results = [first, second];
        results.sort_by_key(|t| !t.is_won());
        assert_eq!(results, [Termination::Won, Termination::AlreadyTerminated]);
        assert_eq!(registry.stats().misses(Miss::Forged), 0);
        if let Ok(new) = new {
            assert_eq!(registry.terminate(&new, Reason::Deleted), Termination::Won);
        }
        assert_clean(&registry, &log);
    });
}

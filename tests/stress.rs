//! Multi-threaded stress tests with real threads: what loom checks
//! exhaustively on tiny models, checked here at scale.

use sessionreg::{Reason, Registry, SessionId, Termination};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

/// Threads that meet at barriers would wait forever for one that panicked:
/// abort instead, so a failure shows as a failure, not a hang.
struct AbortOnPanic;

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("a racing thread panicked; aborting so the test fails instead of hanging");
            std::process::abort();
        }
    }
}

/// Counts its drops; carries a tag that names the session it belongs to.
struct Tracked {
    tag: u64,
    drops: Arc<AtomicU64>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

/// Threads churn sessions (small capacity, so slots are reused constantly)
/// while others look up ids that are live, ended, or reused: a lookup either
/// finds nothing or exactly the session its id was minted for.
#[test]
fn lookups_never_return_another_session() {
    const CHURNERS: usize = 2;
    const LOOKERS: usize = 2;
    const LIVES: u64 = 100_000;
    const WINDOW: usize = 16;
    let drops = Arc::new(AtomicU64::new(0));
    let registry = Registry::builder().capacity(64).shards(2).build().unwrap();
    // Recently minted ids and the tag their value carries.
    let recent: Vec<Mutex<Option<(SessionId, u64)>>> = (0..256).map(|_| Mutex::new(None)).collect();
    let churning = AtomicUsize::new(CHURNERS);
    let found = AtomicU64::new(0);
    let tags = AtomicU64::new(0);

    std::thread::scope(|s| {
        for _ in 0..CHURNERS {
            s.spawn(|| {
                // Each churner keeps a window of live sessions, ending the
                // oldest as it adds one, so lookups find live ones too.
                let mut window = std::collections::VecDeque::new();
                for i in 0..LIVES {
                    let tag = tags.fetch_add(1, Ordering::Relaxed);
                    let value = Tracked {
                        tag,
                        drops: drops.clone(),
                    };
                    let id = registry.insert(value).expect("windows fit the capacity");
                    *recent[(tag % 256) as usize].lock().unwrap() = Some((id, tag));
                    window.push_back((id, tag));
                    if window.len() < WINDOW {
                        continue;
                    }
                    let (id, tag) = window.pop_front().unwrap();
                    if i % 3 == 0 {
                        // Hold a handle across the termination sometimes, so
                        // terminated-but-held slots are in the mix.
                        let held = registry.get(&id).expect("still live");
                        assert!(registry.terminate(&id, Reason::Deleted).is_won());
                        assert!(held.is_terminated());
                        assert_eq!(held.tag, tag);
                    } else {
                        assert!(registry.terminate(&id, Reason::Failed).is_won());
                    }
                }
                for (id, _) in window {
                    assert!(registry.terminate(&id, Reason::Shutdown).is_won());
                }
                churning.fetch_sub(1, Ordering::Release);
            });
        }
        for seed in 0..LOOKERS {
            let (recent, churning, found, registry) = (&recent, &churning, &found, &registry);
            s.spawn(move || {
                let mut i = seed * 7919;
                while churning.load(Ordering::Acquire) > 0 {
                    i = i.wrapping_mul(31).wrapping_add(17);
                    let Some((id, tag)) = *recent[i % 256].lock().unwrap() else {
                        continue;
                    };
                    if let Some(session) = registry.get(&id) {
                        assert_eq!(session.id(), id, "found another slot or generation");
                        assert_eq!(session.tag, tag, "found another session's value");
                        found.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let created = registry.stats().created;
    assert_eq!(registry.len(), 0);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        created,
        "every value dropped once"
    );
    // The lookups did hit live sessions some of the time, or this test
    // checked nothing.
    assert!(found.load(Ordering::Relaxed) > 0);
}

/// Every session is ended by four threads at once, each by a different path
/// (DELETE, failure, the idle reaper, shutdown sweep): exactly one wins,
/// `on_close` runs once with the winner's reason, and every value is dropped
/// once.
#[test]
fn racing_terminations_have_exactly_one_winner() {
    const ROUNDS: u64 = 5_000;
    const BATCH: usize = 8;
    let drops = Arc::new(AtomicU64::new(0));
    let closes: Arc<[AtomicU64; 5]> = Arc::new(Default::default());
    let log = closes.clone();
    let registry = Registry::builder()
        .capacity(BATCH)
        .idle_timeout(Duration::ZERO) // anything with nothing in flight is idle
        .on_close(move |_, _: &Tracked, reason| {
            let i = Reason::ALL.iter().position(|r| *r == reason).unwrap();
            log[i].fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    let ids: Mutex<Vec<SessionId>> = Mutex::new(Vec::new());
    let barrier = Barrier::new(4);
    let wins = [(); 4].map(|_| AtomicU64::new(0));
    let done = AtomicBool::new(false);

    std::thread::scope(|s| {
        for path in 0..4 {
            let (registry, ids, barrier, wins, done) = (&registry, &ids, &barrier, &wins, &done);
            let drops = drops.clone();
            s.spawn(move || loop {
                let _abort = AbortOnPanic;
                // Thread 0 fills a batch; then all four race to end it.
                if path == 0 {
                    let mut batch = ids.lock().unwrap();
                    batch.clear();
                    if !done.load(Ordering::Relaxed) {
                        for tag in 0..BATCH as u64 {
                            let value = Tracked {
                                tag,
                                drops: drops.clone(),
                            };
                            batch.push(registry.insert(value).expect("the batch fits"));
                        }
                    }
                }
                barrier.wait();
                let batch = ids.lock().unwrap().clone();
                if batch.is_empty() {
                    return;
                }
                let won = match path {
                    0 => batch
                        .iter()
                        .filter(|id| registry.terminate(id, Reason::Deleted) == Termination::Won)
                        .count(),
                    1 => batch
                        .iter()
                        .rev()
                        .filter(|id| registry.terminate(id, Reason::Failed).is_won())
                        .count(),
                    2 => registry.reap_idle(),
                    _ => registry.terminate_all(Reason::Shutdown),
                };
                wins[path].fetch_add(won as u64, Ordering::Relaxed);
                barrier.wait();
            });
        }
        // Let them run a fixed number of rounds.
        while registry.stats().created < ROUNDS * BATCH as u64 {
            std::thread::sleep(Duration::from_millis(1));
        }
        done.store(true, Ordering::Relaxed);
    });

    let created = registry.stats().created;
    let total_wins: u64 = wins.iter().map(|w| w.load(Ordering::Relaxed)).sum();
    assert_eq!(total_wins, created, "exactly one winner per session");
    let total_closes: u64 = closes.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    assert_eq!(total_closes, created, "on_close exactly once per session");
    // Each path's wins were closed with that path's reason.
    for (path, reason) in [
        Reason::Deleted,
        Reason::Failed,
        Reason::IdleTimeout,
        Reason::Shutdown,
    ]
    .into_iter()
    .enumerate()
    {
        let i = Reason::ALL.iter().position(|r| *r == reason).unwrap();
        assert_eq!(
            closes[i].load(Ordering::Relaxed),
            wins[path].load(Ordering::Relaxed)
        );
        assert_eq!(
            registry.stats().terminated(reason),
            wins[path].load(Ordering::Relaxed)
        );
    }
    assert_eq!(
        drops.load(Ordering::Relaxed),
        created,
        "every value dropped once"
    );
    assert_eq!(registry.len(), 0);
}

/// Handles outlive the registry on other threads: the values stay readable,
/// the registry's drop ends every session with `Shutdown`, and each value is
/// dropped once, by whichever side lets go last.
#[test]
fn handles_outlive_the_registry() {
    for _ in 0..200 {
        let drops = Arc::new(AtomicU64::new(0));
        let shutdowns = Arc::new(AtomicU64::new(0));
        let log = shutdowns.clone();
        let registry = Registry::builder()
            .capacity(16)
            .on_close(move |_, _: &Tracked, reason| {
                assert_eq!(reason, Reason::Shutdown);
                log.fetch_add(1, Ordering::Relaxed);
            })
            .build()
            .unwrap();
        let handles: Vec<_> = (0..16)
            .map(|tag| {
                let id = registry
                    .insert(Tracked {
                        tag,
                        drops: drops.clone(),
                    })
                    .unwrap();
                registry.get(&id).unwrap()
            })
            .collect();
        let barrier = Arc::new(Barrier::new(3));
        let mut threads = Vec::new();
        for half in handles.chunks(8) {
            let half: Vec<_> = half.to_vec();
            let barrier = barrier.clone();
            threads.push(std::thread::spawn(move || {
                barrier.wait();
                for (i, session) in half.into_iter().enumerate() {
                    assert!(session.tag < 16);
                    if i % 2 == 0 {
                        std::thread::yield_now();
                    }
                    drop(session);
                }
            }));
        }
        drop(handles); // the threads hold clones now
        barrier.wait();
        drop(registry);
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(shutdowns.load(Ordering::Relaxed), 16);
        assert_eq!(drops.load(Ordering::Relaxed), 16, "each value dropped once");
    }
}

/// With a 2-bit generation (a test-only width), a slot's generation comes
/// back every four reuses, so ids of ended sessions keep naming the live
/// generation of their slot. Threads that look up and terminate such dead
/// ids, while churners reuse the slots as fast as they can, must never get
/// a session or end one: the secret, checked under a reference, stops them
/// even when a lookup stalls across a whole wrap.
#[test]
fn dead_ids_reach_nothing_when_generations_wrap() {
    const LIVES: u64 = 100_000;
    const GRAVES: usize = 64;
    let registry = Registry::builder()
        .capacity(4)
        .shards(1)
        .test_widths(2, 37)
        .build()
        .unwrap();
    let graves: Vec<Mutex<Option<SessionId>>> = (0..GRAVES).map(|_| Mutex::new(None)).collect();
    let churning = AtomicUsize::new(2);
    let attempts = AtomicU64::new(0);
    std::thread::scope(|s| {
        for churner in 0..2u64 {
            let (registry, graves, churning) = (&registry, &graves, &churning);
            s.spawn(move || {
                let _abort = AbortOnPanic;
                for i in 0..LIVES {
                    let id = registry
                        .insert(churner)
                        .expect("two sessions in four slots");
                    assert_eq!(*registry.get(&id).expect("our own session"), churner);
                    assert!(
                        registry.terminate(&id, Reason::Deleted).is_won(),
                        "a dead id ended a live session"
                    );
                    *graves[(i as usize * 2 + churner as usize) % GRAVES]
                        .lock()
                        .unwrap() = Some(id);
                }
                churning.fetch_sub(1, Ordering::Release);
            });
        }
        for seed in 0..2usize {
            let (registry, graves, churning, attempts) = (&registry, &graves, &churning, &attempts);
            s.spawn(move || {
                let _abort = AbortOnPanic;
                let mut i = seed * 7919;
                while churning.load(Ordering::Acquire) > 0 {
                    i = i.wrapping_mul(31).wrapping_add(17);
                    let Some(id) = *graves[i % GRAVES].lock().unwrap() else {
                        continue;
                    };
                    attempts.fetch_add(1, Ordering::Relaxed);
                    if let Some(found) = registry.get(&id) {
                        panic!("a dead id found a session of churner {}", *found);
                    }
                    assert!(
                        !registry.terminate(&id, Reason::Failed).is_won(),
                        "a dead id ended a session"
                    );
                }
            });
        }
    });
    let stats = registry.stats();
    assert_eq!(stats.created, 2 * LIVES);
    assert_eq!(stats.terminated(Reason::Deleted), 2 * LIVES);
    assert_eq!(stats.terminated(Reason::Failed), 0);
    assert!(attempts.load(Ordering::Relaxed) > 0);
    // How often a dead id met its slot live under its own (wrapped)
    // generation depends on the schedule; that it is told apart by the
    // secret alone does not: reuse one slot until its generation comes back.
    let dead = registry.insert(9).unwrap();
    assert!(registry.terminate(&dead, Reason::Deleted).is_won());
    let forged_before = registry.stats().misses(sessionreg::Miss::Forged);
    let mut found = 0;
    for _ in 0..8 {
        let id = registry.insert(10).unwrap();
        if id.to_string()[..16] == dead.to_string()[..16] {
            // Same slot, same generation, live: only the secret differs.
            found += 1;
            assert!(registry.get(&dead).is_none());
            assert!(!registry.terminate(&dead, Reason::Failed).is_won());
            assert_eq!(*registry.get(&id).unwrap(), 10);
        }
        assert!(registry.terminate(&id, Reason::Deleted).is_won());
    }
    assert!(
        found > 0,
        "the slot's generation never came back in 8 reuses"
    );
    assert_eq!(
        registry.stats().misses(sessionreg::Miss::Forged),
        forged_before + 2 * found
    );
}

/// `len()` while threads churn (more of them than cores, so the reader is
/// often descheduled in the middle of a read) and one session stays live:
/// never above the capacity, never below the one session that is live
/// throughout.
#[test]
fn len_is_bounded_under_churn() {
    const CAPACITY: usize = 64;
    const CHURNERS: usize = 3;
    const LIVES: u64 = 200_000;
    let registry = Registry::builder().capacity(CAPACITY).build().unwrap();
    let stable = registry.insert(()).unwrap();
    let churning = AtomicUsize::new(CHURNERS);
    let reads = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..CHURNERS {
            s.spawn(|| {
                let _abort = AbortOnPanic;
                for _ in 0..LIVES {
                    let id = registry.insert(()).unwrap();
                    assert!(registry.terminate(&id, Reason::Deleted).is_won());
                }
                churning.fetch_sub(1, Ordering::Release);
            });
        }
        s.spawn(|| {
            let _abort = AbortOnPanic;
            while churning.load(Ordering::Acquire) > 0 {
                let len = registry.len();
                assert!(len >= 1, "the stable session was missed: {len}");
                assert!(len <= CAPACITY, "{len} live in a registry of {CAPACITY}");
                let stats = registry.stats();
                assert!((1..=CAPACITY as u64).contains(&stats.live), "{stats:?}");
                reads.fetch_add(1, Ordering::Relaxed);
            }
        });
    });
    assert!(reads.load(Ordering::Relaxed) > 0);
    assert_eq!(registry.len(), 1);
    assert!(registry.get(&stable).is_some());
}

/// Capacity is exact across shards: threads that between them never hold
/// more sessions than the capacity minus one must never be refused, however
/// their home shards and the free slots fall (one slot per shard, so an
/// insert keeps looking in shards other than its own while others free
/// slots in shards it has already looked at; more threads than cores, so
/// an insert is often descheduled in the middle of its search).
#[test]
fn an_insert_never_fails_while_a_slot_is_free() {
    const THREADS: usize = 7;
    const LIVES: u64 = 100_000;
    let registry = Registry::builder()
        .capacity(THREADS + 1)
        .shards(8)
        .build()
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let _abort = AbortOnPanic;
                for _ in 0..LIVES {
                    let id = registry.insert(()).expect("refused while a slot was free");
                    assert!(registry.terminate(&id, Reason::Deleted).is_won());
                }
            });
        }
    });
    assert_eq!(registry.len(), 0);
}

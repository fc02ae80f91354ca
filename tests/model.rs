//! Model-based property test: random sequences of registry operations, run
//! against the registry and against a plain map that says what each must do,
//! compared at every step (results, close callbacks, value drops, counters).

use proptest::prelude::*;
use sessionreg::{InFlight, ManualClock, Miss, Reason, Registry, Session, SessionId, Termination};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CAPACITY: usize = 6;
const TIMEOUT_MS: u64 = 10;
/// The serial of a value that an insert refused and handed back.
const REFUSED: u64 = u64::MAX;

#[derive(Clone, Debug)]
enum Op {
    Insert,
    /// Create a session with its first request in flight.
    InsertInFlight,
    /// Create a session whose value is made from its id.
    InsertWith,
    /// Look up the k-th id ever minted (modulo how many there are).
    Get(usize),
    /// Look up, then start a request that stays in flight.
    Begin(usize),
    /// Finish the j-th request in flight.
    EndRequest(usize),
    /// Keep a handle from a lookup.
    Hold(usize),
    /// Look up as an owner: the session's own (true) or another (false).
    LookupAs(usize, bool),
    /// End the session of the j-th held handle, through the handle.
    TerminateHeld(usize, Reason),
    /// Drop the j-th held handle.
    DropHandle(usize),
    Terminate(usize, Reason),
    /// Terminate with an id whose secret is wrong.
    Forge(usize),
    Advance(u64),
    Reap,
    /// Reap in budgeted steps (of this many slots) until a pass is done.
    ReapSteps(usize),
    TerminateAll,
}

fn op() -> impl Strategy<Value = Op> {
    let reason = prop_oneof![
        Just(Reason::Deleted),
        Just(Reason::Failed),
        Just(Reason::Rejected),
        Just(Reason::Shutdown),
    ];
    prop_oneof![
        3 => Just(Op::Insert),
        1 => Just(Op::InsertInFlight),
        1 => Just(Op::InsertWith),
        3 => any::<usize>().prop_map(Op::Get),
        2 => any::<usize>().prop_map(Op::Begin),
        2 => any::<usize>().prop_map(Op::EndRequest),
        2 => any::<usize>().prop_map(Op::Hold),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(k, own)| Op::LookupAs(k, own)),
        2 => (any::<usize>(), reason.clone()).prop_map(|(j, r)| Op::TerminateHeld(j, r)),
        2 => any::<usize>().prop_map(Op::DropHandle),
        3 => (any::<usize>(), reason).prop_map(|(k, r)| Op::Terminate(k, r)),
        1 => any::<usize>().prop_map(Op::Forge),
        2 => (0..2 * TIMEOUT_MS).prop_map(Op::Advance),
        1 => Just(Op::Reap),
        1 => (1..4usize).prop_map(Op::ReapSteps),
        1 => Just(Op::TerminateAll),
    ]
}

/// The value: says who it is and reports its drop.
struct Value {
    serial: u64,
    drops: Arc<Mutex<Vec<u64>>>,
    /// The id `insert_with` made it for.
    minted: Option<SessionId>,
}

impl Drop for Value {
    fn drop(&mut self) {
        if self.serial != REFUSED {
            self.drops.lock().unwrap().push(self.serial);
        }
    }
}

/// What the model knows of one session.
#[derive(Debug, Default)]
struct Expected {
    live: bool,
    in_flight: u64,
    last_activity: u64,
    /// Handles and guards that keep the ended session's value alive.
    holders: u64,
    dropped: bool,
}

impl Expected {
    fn idle(&self, now: u64) -> bool {
        self.live && self.in_flight == 0 && now - self.last_activity >= TIMEOUT_MS
    }

    /// The slot stays taken while the session is live or held.
    fn occupies_slot(&self) -> bool {
        self.live || self.holders > 0
    }
}

struct Harness {
    registry: Registry<Value>,
    clock: ManualClock,
    closes: Arc<Mutex<Vec<(SessionId, u64, Reason)>>>,
    drops: Arc<Mutex<Vec<u64>>>,
    ids: Vec<SessionId>,
    expected: Vec<Expected>,
    closes_expected: Vec<(SessionId, u64, Reason)>,
    handles: Vec<(usize, Session<Value>)>,
    requests: Vec<(usize, InFlight<Value>)>,
    now: u64,
    stale: u64,
    expired: u64,
    forged: u64,
    principal: u64,
    unknown: u64,
}

impl Harness {
    fn new() -> Harness {
        let clock = ManualClock::new();
        let closes = Arc::new(Mutex::new(Vec::new()));
        let log = closes.clone();
        let registry = Registry::builder()
            .capacity(CAPACITY)
            .shards(2)
            .idle_timeout(Duration::from_millis(TIMEOUT_MS))
            .manual_clock(&clock)
            .on_close(move |id: &SessionId, value: &Value, reason| {
                assert!(value.minted.is_none_or(|minted| minted == *id));
                log.lock().unwrap().push((*id, value.serial, reason));
            })
            .build()
            .unwrap();
        Harness {
            registry,
            clock,
            closes,
            drops: Arc::new(Mutex::new(Vec::new())),
            ids: Vec::new(),
            expected: Vec::new(),
            closes_expected: Vec::new(),
            handles: Vec::new(),
            requests: Vec::new(),
            now: 0,
            stale: 0,
            expired: 0,
            forged: 0,
            principal: 0,
            unknown: 0,
        }
    }

    fn end(&mut self, k: usize, reason: Reason) {
        let e = &mut self.expected[k];
        assert!(e.live);
        e.live = false;
        self.closes_expected.push((self.ids[k], k as u64, reason));
        self.settle(k);
    }

    /// A session that has ended and is held by nobody has its value dropped.
    fn settle(&mut self, k: usize) {
        let e = &mut self.expected[k];
        if !e.live && e.holders == 0 {
            e.dropped = true;
        }
    }

    /// The sessions after `k` in its slot, and whether the last of them (or
    /// `k` itself) still holds the slot (live, or ended and held).
    fn slot_since(&self, k: usize) -> (usize, bool) {
        let slot = slot_of(&self.ids[k]);
        let later: Vec<usize> = (k + 1..self.ids.len())
            .filter(|&j| slot_of(&self.ids[j]) == slot)
            .collect();
        let last = later.last().copied().unwrap_or(k);
        (later.len(), self.expected[last].occupies_slot())
    }

    /// What the registry can prove about the id of `k`, a session that has
    /// ended: its secret is checked while its slot keeps it (the session's
    /// own, or the digest the next session's slot keeps of it), so the
    /// real id is `Stale` and a wrong secret `Forged`; once the slot's next
    /// session has left it too, neither can be told from a guess: `Unknown`.
    fn ended_answer(&mut self, k: usize, forged: bool) -> Miss {
        let checkable = match self.slot_since(k) {
            (0, _) => true,
            (1, next_holds_the_slot) => next_holds_the_slot,
            _ => false,
        };
        let answer = match (checkable, forged) {
            (true, false) => Miss::Stale,
            (true, true) => Miss::Forged,
            (false, _) => Miss::Unknown,
        };
        match answer {
            Miss::Stale => self.stale += 1,
            Miss::Forged => self.forged += 1,
            _ => self.unknown += 1,
        }
        answer
    }

    /// What a lookup of session `k` must do; updates the model.
    fn expect_lookup(&mut self, k: usize) -> Result<(), Miss> {
        let e = &self.expected[k];
        if !e.live {
            Err(self.ended_answer(k, false))
        } else if e.idle(self.now) {
            self.expired += 1;
            self.end(k, Reason::IdleTimeout);
            Err(Miss::Expired)
        } else {
            Ok(())
        }
    }

    fn lookup(&mut self, k: usize) -> Result<Session<Value>, Miss> {
        let found = self.registry.lookup(&self.ids[k]);
        let expected = self.expect_lookup(k);
        match (&found, expected) {
            (Ok(session), Ok(())) => {
                assert_eq!(session.id(), self.ids[k]);
                assert_eq!(session.serial, k as u64, "found another session's value");
                assert!(!session.is_terminated());
            }
            (Err(got), Err(want)) => assert_eq!(*got, want),
            (got, want) => panic!("lookup of {k}: got {:?}, want {want:?}", got.as_ref().err()),
        }
        found
    }

    fn apply(&mut self, op: Op) {
        let pick = |n: usize, k: usize| if n == 0 { None } else { Some(k % n) };
        match op {
            Op::Insert | Op::InsertInFlight | Op::InsertWith => {
                let in_flight = matches!(op, Op::InsertInFlight);
                let serial = self.ids.len() as u64;
                let drops = self.drops.clone();
                let value = move |minted| Value {
                    serial,
                    drops,
                    minted,
                };
                let full = self.expected.iter().filter(|e| e.occupies_slot()).count() == CAPACITY;
                let inserted = if matches!(op, Op::InsertWith) {
                    match self.registry.insert_with(move |id| value(Some(id))) {
                        Ok(id) => Ok(id),
                        // At capacity the function is handed back uncalled:
                        // nothing to drop.
                        Err(_) => Err(None),
                    }
                } else if in_flight {
                    self.registry
                        .insert_in_flight(value(None))
                        .map(|request| {
                            assert_eq!(request.serial, serial);
                            assert_eq!(request.in_flight(), 1);
                            let id = request.id();
                            self.requests.push((serial as usize, request));
                            id
                        })
                        .map_err(Some)
                } else {
                    self.registry.insert(value(None)).map_err(Some)
                };
                match inserted {
                    Ok(id) => {
                        assert!(!full, "insert beyond capacity");
                        assert!(!self.ids.contains(&id), "an id was minted twice");
                        self.ids.push(id);
                        self.expected.push(Expected {
                            live: true,
                            last_activity: self.now,
                            in_flight: u64::from(in_flight),
                            holders: u64::from(in_flight),
                            dropped: false,
                        });
                    }
                    Err(err) => {
                        assert!(full, "insert refused below capacity");
                        // The value comes back, whole; its drop is not a
                        // session's, so it is marked to be left out.
                        if let Some(err) = err {
                            let mut value = err.into_inner();
                            assert_eq!(value.serial, serial);
                            value.serial = REFUSED;
                        }
                    }
                }
            }
            Op::Get(k) => {
                if let Some(k) = pick(self.ids.len(), k) {
                    let _ = self.lookup(k);
                }
            }
            Op::Hold(k) => {
                if let Some(k) = pick(self.ids.len(), k) {
                    if let Ok(session) = self.lookup(k) {
                        self.expected[k].holders += 1;
                        self.handles.push((k, session));
                    }
                }
            }
            Op::LookupAs(k, own) => {
                if let Some(k) = pick(self.ids.len(), k) {
                    let found = self
                        .registry
                        .lookup_if(&self.ids[k], |value| own && value.serial == k as u64);
                    let e = &self.expected[k];
                    if e.live && !own {
                        // Refused before any expiry: the session is as it was.
                        assert_eq!(found.err(), Some(Miss::Principal));
                        self.principal += 1;
                    } else {
                        let expected = self.expect_lookup(k);
                        assert_eq!(found.map(|s| s.serial), expected.map(|()| k as u64));
                    }
                }
            }
            Op::TerminateHeld(j, reason) => {
                if let Some(j) = pick(self.handles.len(), j) {
                    let k = self.handles[j].0;
                    let outcome = self.registry.terminate_session(&self.handles[j].1, reason);
                    if self.expected[k].live {
                        assert_eq!(outcome, Termination::Won);
                        self.end(k, reason);
                    } else {
                        assert_eq!(outcome, Termination::AlreadyTerminated);
                        self.stale += 1;
                    }
                }
            }
            Op::Begin(k) => {
                if let Some(k) = pick(self.ids.len(), k) {
                    if let Ok(session) = self.lookup(k) {
                        let request = session.begin().expect("live and not idle");
                        self.expected[k].in_flight += 1;
                        self.expected[k].holders += 1;
                        self.requests.push((k, request));
                    }
                }
            }
            Op::EndRequest(j) => {
                if let Some(j) = pick(self.requests.len(), j) {
                    let (k, request) = self.requests.swap_remove(j);
                    drop(request);
                    let e = &mut self.expected[k];
                    e.in_flight -= 1;
                    e.holders -= 1;
                    e.last_activity = e.last_activity.max(self.now);
                    self.settle(k);
                }
            }
            Op::DropHandle(j) => {
                if let Some(j) = pick(self.handles.len(), j) {
                    let (k, session) = self.handles.swap_remove(j);
                    assert_eq!(session.is_terminated(), !self.expected[k].live);
                    assert_eq!(session.serial, k as u64, "a held value changed");
                    drop(session);
                    self.expected[k].holders -= 1;
                    self.settle(k);
                }
            }
            Op::Terminate(k, reason) => {
                if let Some(k) = pick(self.ids.len(), k) {
                    let outcome = self.registry.terminate(&self.ids[k], reason);
                    if self.expected[k].live {
                        assert_eq!(outcome, Termination::Won);
                        self.end(k, reason);
                    } else {
                        match self.ended_answer(k, false) {
                            Miss::Stale => assert_eq!(outcome, Termination::AlreadyTerminated),
                            other => assert_eq!(outcome, Termination::Missed(other)),
                        }
                    }
                }
            }
            Op::Forge(k) => {
                if let Some(k) = pick(self.ids.len(), k) {
                    let mut bytes = self.ids[k].to_bytes();
                    bytes[23] ^= 1;
                    let forged = SessionId::from_bytes(bytes);
                    let outcome = self.registry.terminate(&forged, Reason::Deleted);
                    if self.expected[k].live {
                        // A wrong secret on a live session is caught.
                        assert_eq!(outcome, Termination::Missed(Miss::Forged));
                        self.forged += 1;
                    } else {
                        // Ended: never "already terminated" for a wrong
                        // secret; forged while the slot can tell, unknown
                        // once it cannot.
                        let answer = self.ended_answer(k, true);
                        assert_eq!(outcome, Termination::Missed(answer));
                    }
                }
            }
            Op::Advance(ms) => {
                self.clock.advance(Duration::from_millis(ms));
                self.now += ms;
            }
            Op::Reap | Op::ReapSteps(_) => {
                let idle: Vec<usize> = (0..self.ids.len())
                    .filter(|&k| self.expected[k].idle(self.now))
                    .collect();
                let reaped = match op {
                    Op::ReapSteps(budget) => {
                        // This harness is the only stepper and always steps
                        // to the end of a pass: each loop is a whole pass.
                        let mut reaped = 0;
                        loop {
                            let step = self.registry.reap_idle_step(budget);
                            reaped += step.ended;
                            if step.pass_done {
                                break reaped;
                            }
                        }
                    }
                    _ => self.registry.reap_idle(),
                };
                assert_eq!(reaped, idle.len());
                for k in idle {
                    self.end(k, Reason::IdleTimeout);
                }
            }
            Op::TerminateAll => {
                let live: Vec<usize> = (0..self.ids.len())
                    .filter(|&k| self.expected[k].live)
                    .collect();
                assert_eq!(self.registry.terminate_all(Reason::Shutdown), live.len());
                for k in live {
                    self.end(k, Reason::Shutdown);
                }
            }
        }
        self.check();
    }

    fn check(&mut self) {
        // Closes: exactly the expected ones, each once (order within a sweep
        // follows slot order, so compare as sets).
        let mut got = self.closes.lock().unwrap().clone();
        let mut want = self.closes_expected.clone();
        got.sort_by_key(|c| c.1);
        want.sort_by_key(|c| c.1);
        assert_eq!(got, want, "close callbacks");
        // Drops: exactly the ended, unheld sessions, each once.
        let mut dropped = self.drops.lock().unwrap().clone();
        dropped.sort_unstable();
        let want: Vec<u64> = (0..self.ids.len() as u64)
            .filter(|&k| self.expected[k as usize].dropped)
            .collect();
        assert_eq!(dropped, want, "value drops");
        // Counters.
        let live = self.expected.iter().filter(|e| e.live).count();
        assert_eq!(self.registry.len(), live);
        let stats = self.registry.stats();
        assert_eq!(stats.live, live as u64);
        assert_eq!(stats.created, self.ids.len() as u64);
        for reason in Reason::ALL {
            let n = self
                .closes_expected
                .iter()
                .filter(|c| c.2 == reason)
                .count();
            assert_eq!(stats.terminated(reason), n as u64, "{reason}");
        }
        assert_eq!(stats.misses(Miss::Stale), self.stale);
        assert_eq!(stats.misses(Miss::Expired), self.expired);
        assert_eq!(stats.misses(Miss::Forged), self.forged);
        assert_eq!(stats.misses(Miss::Principal), self.principal);
        assert_eq!(stats.misses(Miss::Unknown), self.unknown);
    }
}

/// The slot index of an id: the low 26 bits of its first word (the layout in
/// the design notes, "Ids").
fn slot_of(id: &SessionId) -> u64 {
    let word = u64::from_be_bytes(id.to_bytes()[..8].try_into().unwrap());
    word & ((1 << 26) - 1)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn registry_agrees_with_the_model(ops in proptest::collection::vec(op(), 1..120)) {
        let mut harness = Harness::new();
        for op in ops {
            harness.apply(op);
        }
        // Dropping the registry ends what is live (Shutdown) and, once the
        // handles go too, every value has been dropped exactly once.
        let Harness { registry, handles, requests, drops, ids, closes, .. } = harness;
        drop(registry);
        drop(handles);
        drop(requests);
        let mut dropped = drops.lock().unwrap().clone();
        dropped.sort_unstable();
        prop_assert_eq!(dropped, (0..ids.len() as u64).collect::<Vec<_>>());
        prop_assert_eq!(closes.lock().unwrap().len(), ids.len());
    }
}

//! The peers of issue 20's task benchmarks, each driven through its public
//! API only, and what every one of them stores per task.
//!
//! * [`Store`]: `sessionreg::TaskStore<Entry, Value>`, the store the HTTP
//!   layer keeps its tasks in, with an entry shaped like the layer's;
//! * [`Rmcp`]: rmcp 3.11's `TaskManager`, on a current-thread tokio runtime
//!   (its `spawn` spawns the task's future there);
//! * [`Moka`]: `moka::sync::Cache<String, Arc<Record>>` with
//!   `time_to_idle`, the expiring map a Rust engineer would pick.
//!
//! Every peer starts with `n` running tasks (prefilled, never ended during
//! the run) and runs two workloads on top of them: a task's life (create,
//! three gets while it runs, complete, one get of the result) and a get of
//! a random one of the `n` running tasks. Each get takes the task's id as
//! text, as `tasks/get` brings it. What each iteration includes, peer by
//! peer, is in each peer's docs; BENCHMARKS.md ("Tasks") has the
//! figures and the fairness notes.
//!
//! The tasks the lives end stay retained, as they would in a server, until
//! [`Peer::room`] says so many have accumulated (a tenth of `n`); then
//! [`Peer::cleanup`], outside the timed region, frees them by the peer's
//! own means. So every peer holds between `n` and `1.1 n` tasks throughout.

use moka::sync::Cache;
use rmcp::model::{CallToolResult, ContentBlock, TaskStatus};
use rmcp::task_manager::{TaskManager, TaskOptions};
use serde_json::{json, Value};
use sessionreg::{Ended, Running, SessionId, TaskStore};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// The numbers of running tasks every workload runs on top of.
pub const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// How long an ended task stays readable (moka's time to idle; the
/// store's retention in the memory bench). Nothing expires by it during a
/// run.
pub const RETENTION: Duration = Duration::from_secs(3_600);

/// The retention of [`Store`]'s tasks in the timed bench: none, so that
/// [`Peer::cleanup`]'s two sweeps free every ended task (the first makes
/// its rough stamp exact, the second finds it idle for zero). No running
/// task expires by it: a running task is in flight.
pub const STORE_RETENTION: Duration = Duration::ZERO;

/// The tool result every task ends with: `CallToolResult` with one text
/// item, as a `serde_json::Value` (what the HTTP layer stores).
pub fn tool_result() -> Value {
    json!({ "content": [{ "type": "text", "text": "done" }] })
}

/// The same result as rmcp's operations return it.
pub fn rmcp_result() -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text("done")])
}

/// Milliseconds since the Unix epoch, as the HTTP layer stamps its entries.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// What the bench keeps per task beside its outcome: the HTTP layer's
/// `TaskEntry` (`src/http/tasks/entry.rs`) without its input-request maps
/// and cancellation token (the layer's real entry is measured, with those,
/// by the memory bench through `SessionManager`).
#[derive(Debug)]
pub struct Entry {
    /// Who created it (no authentication here: `None`, as the layer without one).
    pub owner: Option<Arc<str>>,
    /// When it was created.
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: AtomicU64,
    /// The polling interval suggested to clients.
    pub poll_interval_ms: u64,
    /// Its `ttlMs`.
    pub ttl_ms: u64,
    /// Its status message.
    pub status_message: Mutex<Option<String>>,
}

impl Entry {
    /// An entry created now.
    pub fn new() -> Entry {
        let now = now_ms();
        Entry {
            owner: None,
            created_ms: now,
            updated_ms: AtomicU64::new(now),
            poll_interval_ms: 500,
            ttl_ms: RETENTION.as_millis() as u64,
            status_message: Mutex::new(None),
        }
    }
}

impl Entry {
    /// The same fields, copied (no clock read): how an immutable record
    /// (moka's) carries its entry into the completed record.
    pub fn copied(&self) -> Entry {
        Entry {
            owner: self.owner.clone(),
            created_ms: self.created_ms,
            updated_ms: AtomicU64::new(self.updated_ms.load(Ordering::Relaxed)),
            poll_interval_ms: self.poll_interval_ms,
            ttl_ms: self.ttl_ms,
            status_message: Mutex::new(
                self.status_message
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone(),
            ),
        }
    }
}

impl Default for Entry {
    fn default() -> Entry {
        Entry::new()
    }
}

/// A task's status, as each get reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Running.
    Working,
    /// Completed (its result is there).
    Completed,
    /// Anything else (never expected here: the benches assert it away).
    Other,
}

/// A task as moka's cache holds it: the entry's fields, a status and the
/// result once there is one.
#[derive(Debug)]
pub struct Record {
    /// The same fields as [`Entry`].
    pub entry: Entry,
    /// Working or completed.
    pub status: Status,
    /// The tool result, once completed.
    pub result: Option<Value>,
}

/// A small xorshift generator: the random picks of the get workload (the
/// same sequence of indices for every peer).
#[derive(Debug, Clone)]
pub struct Picks(u64);

impl Picks {
    /// A generator from a fixed seed.
    pub fn new() -> Picks {
        Picks(0x9E37_79B9_7F4A_7C15)
    }

    /// An index below `n`.
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x % n as u64) as usize
    }
}

impl Default for Picks {
    fn default() -> Picks {
        Picks::new()
    }
}

/// The text ids of the running tasks, one to a cache line: a get's pick
/// costs one memory access for its id, as it would if the id came in a
/// request buffer, not the two of a `Vec<String>` (the slice, then the
/// heap text). The same for every peer; `tasks_floor/pick` measures it.
pub struct Texts(Vec<Line>);

#[repr(align(64))]
#[derive(Clone, Copy)]
struct Line {
    len: u8,
    bytes: [u8; 63],
}

impl Texts {
    /// The texts, in order (each at most 63 bytes).
    pub fn new<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Texts {
        Texts(
            texts
                .into_iter()
                .map(|text| {
                    let text = text.as_ref().as_bytes();
                    let mut line = Line {
                        len: text.len() as u8,
                        bytes: [0; 63],
                    };
                    line.bytes[..text.len()].copy_from_slice(text);
                    line
                })
                .collect(),
        )
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `i`th text.
    #[inline]
    pub fn get(&self, i: usize) -> &str {
        let line = &self.0[i];
        // SAFETY: the bytes were copied whole from a `&str` in `new`.
        unsafe { std::str::from_utf8_unchecked(&line.bytes[..usize::from(line.len)]) }
    }

    /// `k` picks of a random text, each read (its last byte): what every
    /// get pays before the peer's own work.
    pub fn picks(&self, picks: &mut Picks, k: u64) {
        for _ in 0..k {
            let text = self.get(picks.below(self.len()));
            std::hint::black_box(text.as_bytes()[text.len() - 1]);
        }
    }
}

/// What the benches drive: `n` running tasks, and the two workloads on
/// top of them.
pub trait Peer {
    /// Runs `k` task lives; `k` is at most [`room`](Peer::room).
    fn lives(&mut self, k: u64);
    /// Runs `k` gets of random running tasks.
    fn gets(&mut self, k: u64);
    /// How many more lives may run before [`cleanup`](Peer::cleanup).
    fn room(&self) -> u64;
    /// Frees the tasks the lives ended (outside the timed region).
    fn cleanup(&mut self);
}

/// How many ended tasks a peer keeps before [`Peer::cleanup`]: a tenth of
/// the running ones.
pub fn batch(n: usize) -> u64 {
    (n as u64 / 10).max(1)
}

/// Runs `iters` iterations of `run` on `peer`, timing only the runs: after
/// each batch that fills the peer's room, the cleanup runs untimed.
/// `lives`: whether the iterations are lives (which use room) or gets.
pub fn timed<P: Peer>(peer: &mut P, iters: u64, lives: bool) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        if lives && peer.room() == 0 {
            peer.cleanup();
        }
        let k = if lives { left.min(peer.room()) } else { left };
        let start = Instant::now();
        if lives {
            peer.lives(k);
        } else {
            peer.gets(k);
        }
        total += start.elapsed();
        left -= k;
    }
    total
}

// --- sessionreg ------------------------------------------------------------

/// `sessionreg::TaskStore<Entry, Value>`.
///
/// A life (`lives`): `create(Entry::new())` (the entry's clock read
/// included), the id formatted as text (`to_string`, as the HTTP layer
/// answers `CreateTaskResult`), three gets (`parse_id` of the text, `get`,
/// the outcome read: running), `Running::finish(Ended::Completed(result))`
/// (a clone of the tool result `Value`), one get (completed). Nothing is
/// spawned: the caller holds the work's guard (the HTTP layer spawns a
/// tokio task per task: [`Store::lives_spawned`] measures that).
///
/// A get: `parse_id` of the text id, `get`, the outcome read.
///
/// On the system clock, as a server's store runs (no operation reads it;
/// a lookup decides expiry with one comparison, `activity.rs`), with no
/// retention ([`STORE_RETENTION`]), so that the cleanup's sweeps reap the
/// ended tasks, leaving the running ones (never reaped: they are in
/// flight).
pub struct Store {
    store: TaskStore<Entry, Value>,
    held: Vec<Running<Entry, Value>>,
    ids: Texts,
    parsed: Vec<SessionId>,
    ended: u64,
    batch: u64,
    result: Value,
    picks: Picks,
    rt: Option<Runtime>,
}

impl Store {
    /// A store holding `n` running tasks.
    pub fn prefill(n: usize) -> Store {
        let batch = batch(n);
        let store = TaskStore::builder()
            .capacity(n + batch as usize + 1)
            .retention(STORE_RETENTION)
            .build()
            .expect("a valid store");
        let held: Vec<_> = (0..n)
            .map(|_| store.create(Entry::new()).expect("within capacity"))
            .collect();
        let ids = Texts::new(held.iter().map(|r| r.id().to_string()));
        let parsed: Vec<SessionId> = held.iter().map(|r| r.id()).collect();
        for (i, id) in parsed.iter().enumerate().take(64) {
            assert_eq!(parse_branchless(ids.get(i).as_bytes()), Some(*id));
        }
        Store {
            store,
            held,
            ids,
            parsed,
            ended: 0,
            batch,
            result: tool_result(),
            picks: Picks::new(),
            // Built here, untimed, for `lives_spawned` (as rmcp's is
            // built in its prefill).
            rt: Some(runtime()),
        }
    }

    /// The store itself.
    pub fn store(&self) -> &TaskStore<Entry, Value> {
        &self.store
    }

    /// The task's status, found by its text id.
    #[inline]
    fn status(&self, text: &str) -> Status {
        let id = self
            .store
            .parse_id(text.as_bytes())
            .expect("an id it minted");
        let task = self.store.get(&id).expect("a live task");
        match task.outcome() {
            None => Status::Working,
            Some(Ended::Completed(_)) => Status::Completed,
            Some(_) => Status::Other,
        }
    }

    fn life(&mut self) {
        let running = self.store.create(Entry::new()).expect("within capacity");
        let text = running.id().to_string();
        for _ in 0..3 {
            assert_eq!(self.status(&text), Status::Working);
        }
        let won = running.finish(Ended::Completed(self.result.clone()));
        assert!(won.is_won());
        assert_eq!(self.status(&text), Status::Completed);
    }

    /// `k` lives as the HTTP layer runs a task's work: the same as
    /// [`Peer::lives`], but the guard goes to a tokio task (spawned on a
    /// current-thread runtime) that waits on a oneshot the life fires after
    /// its three gets, then finishes the task with a clone of the result;
    /// the life yields to the runtime and gets until it reads completed (as
    /// [`Rmcp`]'s lives do). The oneshot's creation is included.
    pub fn lives_spawned(&mut self, k: u64) {
        let rt = self.rt.take().unwrap_or_else(runtime);
        rt.block_on(async {
            for _ in 0..k {
                let running = self.store.create(Entry::new()).expect("within capacity");
                let text = running.id().to_string();
                let (tx, rx) = oneshot::channel::<()>();
                let result = self.result.clone();
                drop(tokio::spawn(async move {
                    let _ = rx.await;
                    let won = running.finish(Ended::Completed(result));
                    assert!(won.is_won());
                }));
                for _ in 0..3 {
                    assert_eq!(self.status(&text), Status::Working);
                }
                tx.send(()).expect("the work waits");
                loop {
                    tokio::task::yield_now().await;
                    match self.status(&text) {
                        Status::Completed => break,
                        Status::Working => {}
                        Status::Other => panic!("the task did not complete"),
                    }
                }
            }
        });
        self.rt = Some(rt);
        self.ended += k;
    }

    /// How many running tasks it holds.
    pub fn running(&self) -> usize {
        self.held.len()
    }

    /// `k` gets of random running tasks by their parsed ids (a caller that
    /// holds a `SessionId`): `get`, the outcome read. The store's lookup
    /// alone, without [`Peer::gets`]'s `parse_id` of the text.
    pub fn gets_parsed(&mut self, k: u64) {
        let n = self.parsed.len();
        for _ in 0..k {
            let i = self.picks.below(n);
            let task = self.store.get(&self.parsed[i]).expect("a live task");
            assert!(std::hint::black_box(task).outcome().is_none());
        }
    }

    /// `k` picks of a random running task's text id, read: the harness's
    /// part of every get ([`Texts::picks`]).
    pub fn picks(&mut self, k: u64) {
        self.ids.picks(&mut self.picks, k);
    }

    /// `k` decodes of random running tasks' text ids by
    /// [`parse_branchless`] (an experiment: not sessionreg's parser).
    pub fn parses_branchless(&mut self, k: u64) {
        let n = self.ids.len();
        for _ in 0..k {
            let i = self.picks.below(n);
            let id = parse_branchless(self.ids.get(i).as_bytes());
            std::hint::black_box(id.expect("an id it minted"));
        }
    }

    /// `k` parses of random running tasks' text ids (`parse_id` alone).
    pub fn parses(&mut self, k: u64) {
        let n = self.ids.len();
        for _ in 0..k {
            let i = self.picks.below(n);
            let id = self.store.parse_id(self.ids.get(i).as_bytes());
            std::hint::black_box(id.expect("an id it minted"));
        }
    }
}

/// The words of one of [`Store`]'s slots: the registry's slot header (five
/// words for a pointer-sized value: lifecycle, two words of secret,
/// activity; `src/slab/slot.rs`) less the value's word, plus the task stored
/// inline (`Task<Entry, Value>`: the entry and the outcome), rounded up to
/// words.
pub const SLOT_WORDS: usize =
    (4 * 8 + std::mem::size_of::<sessionreg::Task<Entry, Value>>()).div_ceil(8);

/// The floor under a get at `n` running tasks (`tasks_floor/slot_read`):
/// the same working set as [`Store`]'s lookup by a parsed id, in plain
/// `Vec`s with nothing else: `n + n/10` slots of [`SLOT_WORDS`] words (the
/// store holds between `n` and `1.1 n` tasks), and `n` 16-byte ids; one get
/// picks an index with the same generator, reads that id (as
/// `sessionreg_parsed` reads its `SessionId`) and then two words of the
/// slot it names (its first, where the lifecycle is, and its last, where
/// the outcome is). What no store can go below: the memory hierarchy's
/// price of one random slot over this many.
pub struct SlotFloor {
    ids: Vec<[u64; 2]>,
    slots: Vec<[u64; SLOT_WORDS]>,
    picks: Picks,
}

impl SlotFloor {
    /// The working set of `n` running tasks, every word written once (as
    /// the store's creates write them).
    pub fn new(n: usize) -> SlotFloor {
        let slots = (0..n + batch(n) as usize)
            .map(|i| [i as u64; SLOT_WORDS])
            .collect();
        let ids = (0..n).map(|i| [i as u64, !(i as u64)]).collect();
        SlotFloor {
            ids,
            slots,
            picks: Picks::new(),
        }
    }

    /// `k` reads of a random running task's id and then of its slot.
    pub fn reads(&mut self, k: u64) {
        let n = self.ids.len();
        for _ in 0..k {
            let id = std::hint::black_box(self.ids[self.picks.below(n)]);
            let slot = &self.slots[id[0] as usize];
            std::hint::black_box((slot[0], slot[SLOT_WORDS - 1]));
        }
    }

    /// [`reads`](SlotFloor::reads) with 94 more instructions after each
    /// read (`tasks_floor/slot_read_window`; fifteen rounds of six immediate
    /// moves, and four): the same lines read, as many instructions executed
    /// as the store's get (`sessionreg_parsed`'s 120 against the read's 26;
    /// `benches/run.sh callgrind`'s task table counts both, as `floor` and
    /// `floor_window`). The extra ones write registers only (no memory, no
    /// dependency on the read or on each other), so they add no miss and no
    /// chain of latency; what they take is room in the core's window of
    /// instructions in flight, which bounds how many gets' misses overlap.
    /// Not a floor the goal is read against: the measure of what a get's
    /// instruction count alone costs over this working set.
    #[cfg(target_arch = "x86_64")]
    pub fn reads_windowed(&mut self, k: u64) {
        let n = self.ids.len();
        // The read is `reads`' own, written out: through one helper both
        // loops executed an instruction more (27 and 121).
        for _ in 0..k {
            let id = std::hint::black_box(self.ids[self.picks.below(n)]);
            let slot = &self.slots[id[0] as usize];
            std::hint::black_box((slot[0], slot[SLOT_WORDS - 1]));
            // SAFETY: the instructions write only the six registers the
            // block declares as clobbered outputs; they touch no memory,
            // the stack or the flags.
            unsafe {
                std::arch::asm!(
                    ".rept 15",
                    "mov {a:e}, 1", "mov {b:e}, 2", "mov {c:e}, 3",
                    "mov {d:e}, 4", "mov {e:e}, 5", "mov {f:e}, 6",
                    ".endr",
                    "mov {a:e}, 1", "mov {b:e}, 2", "mov {c:e}, 3", "mov {d:e}, 4",
                    a = out(reg) _, b = out(reg) _, c = out(reg) _,
                    d = out(reg) _, e = out(reg) _, f = out(reg) _,
                    options(nomem, nostack, preserves_flags),
                );
            }
        }
    }
}

/// An experiment, not sessionreg's code: a task id's text (48 lowercase
/// hex digits) decoded as `SessionId::parse_bytes` decodes it, to the same
/// id, but without a branch per digit (`parse_bytes` branches on each
/// digit's range, `0-9` or `a-f`, which random hex mispredicts about once
/// in three digits). `tasks_floor/parse_branchless` measures it beside
/// `tasks_floor/parse_id`.
pub fn parse_branchless(text: &[u8]) -> Option<SessionId> {
    if text.len() != SessionId::TEXT_LEN {
        return None;
    }
    let mut bytes = [0u8; 24];
    let mut ok = true;
    for (byte, pair) in bytes.iter_mut().zip(text.chunks_exact(2)) {
        let mut value = 0;
        for &digit in pair {
            ok &= (digit.wrapping_sub(b'0') < 10) | (digit.wrapping_sub(b'a') < 6);
            // '0'..='9' is 0x30..=0x39, 'a'..='f' is 0x61..=0x66.
            value = (value << 4) | ((digit & 0xf) + 9 * (digit >> 6));
        }
        *byte = value;
    }
    ok.then(|| SessionId::from_bytes(bytes))
}

/// [`Store`] whose gets are [`Store::gets_parsed`].
pub struct Parsed<'a>(pub &'a mut Store);

impl Peer for Parsed<'_> {
    fn lives(&mut self, k: u64) {
        self.0.lives(k);
    }

    fn gets(&mut self, k: u64) {
        self.0.gets_parsed(k);
    }

    fn room(&self) -> u64 {
        self.0.room()
    }

    fn cleanup(&mut self) {
        self.0.cleanup();
    }
}

/// [`Store`] driven by [`Store::lives_spawned`]: the same store, its work
/// on a tokio task as the HTTP layer runs it.
pub struct Spawned<'a>(pub &'a mut Store);

impl Peer for Spawned<'_> {
    fn lives(&mut self, k: u64) {
        self.0.lives_spawned(k);
    }

    fn gets(&mut self, k: u64) {
        self.0.gets(k);
    }

    fn room(&self) -> u64 {
        self.0.room()
    }

    fn cleanup(&mut self) {
        self.0.cleanup();
    }
}

impl Peer for Store {
    fn lives(&mut self, k: u64) {
        for _ in 0..k {
            self.life();
        }
        self.ended += k;
    }

    fn gets(&mut self, k: u64) {
        let n = self.ids.len();
        for _ in 0..k {
            let i = self.picks.below(n);
            let status = self.status(self.ids.get(i));
            assert_eq!(std::hint::black_box(status), Status::Working);
        }
    }

    fn room(&self) -> u64 {
        self.batch - self.ended
    }

    fn cleanup(&mut self) {
        // The first sweep starts the ended tasks' idle time, the second,
        // a reading no earlier and no retention, frees them.
        self.store.reap();
        let freed = self.store.reap();
        assert_eq!(freed as u64, self.ended);
        assert_eq!(self.store.stats().registry.live, self.held.len() as u64);
        self.ended = 0;
    }
}

/// A current-thread tokio runtime (rmcp's tasks, and the HTTP layer's
/// spawned work, run on it).
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

// --- rmcp ------------------------------------------------------------------

/// rmcp 3.11's `TaskManager`, on a current-thread tokio runtime.
///
/// A life: a oneshot channel; `spawn(TaskOptions::new().with_ttl_ms(ttl),
/// ..)` with a future that awaits the oneshot and returns
/// `CallToolResult::success([text "done"])` (rmcp mints a v4 UUID, stamps
/// two RFC 3339 times, sweeps the map, inserts, `tokio::spawn`s the
/// future); three `get_task` (each sweeps the whole map, then clones the
/// task out as a `DetailedTask`); the oneshot fired; then, as a client
/// polls, `yield_now` and `get_task` until the status is terminal (the
/// spawned future runs at the first yield: it locks the map, converts the
/// result to a JSON object and settles the task), and that last
/// `get_task`, which reads `completed`, is the get of the result.
///
/// A get: `get_task` of a random running task (a sweep, a `DetailedTask`
/// clone).
///
/// The running tasks are spawned with no TTL (`ttl_ms: None`, unlimited
/// retention): rmcp's sweep then skips the clock read it makes for every
/// running task with a TTL, the cheapest sweep rmcp has. The lives' tasks
/// need a TTL (rmcp frees a task only one TTL after it ends; without one,
/// never): [`LIFE_TTL`], or 20 lives' time if longer, long enough that a
/// life is seldom preempted past it (rmcp then fails and aborts its task,
/// and evicts it one TTL later: such lives are counted, not fatal, see
/// [`Rmcp::counts`]). A life's own sweeps free the
/// ended tasks whose TTL has passed; when a tenth of `n` have
/// accumulated anyway, the cleanup, untimed, waits out the TTL and makes
/// one `get_task`, whose sweep frees them.
pub struct Rmcp {
    rt: Runtime,
    manager: TaskManager,
    _senders: Vec<oneshot::Sender<()>>,
    ids: Texts,
    ttl: Duration,
    picks: Picks,
    batch: u64,
    /// Lives since the last cleanup, and when the last one's task ended.
    ended: u64,
    last: Option<(String, Instant)>,
    lives: u64,
    polls: u64,
    expired: u64,
}

/// The shortest TTL of [`Rmcp`]'s lives: a life is seldom preempted for
/// that long (on a loaded 2-core machine one was, for over twice that:
/// rmcp had evicted its task before the next `get_task`).
pub const LIFE_TTL: Duration = Duration::from_millis(50);

impl Rmcp {
    /// A manager holding `n` running tasks (rmcp sweeps its map on every
    /// spawn, so this takes time quadratic in `n`).
    pub fn prefill(n: usize) -> Rmcp {
        let rt = runtime();
        let manager = TaskManager::new();
        let started = Arc::new(AtomicUsize::new(0));
        let (senders, ids) = rt.block_on(async {
            let mut senders = Vec::with_capacity(n);
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                let (tx, rx) = oneshot::channel::<()>();
                let started = Arc::clone(&started);
                let task = manager.spawn(TaskOptions::new().with_ttl_ms(None), move |_ctx| {
                    Box::pin(async move {
                        started.fetch_add(1, Ordering::Relaxed);
                        let _ = rx.await;
                        Ok(rmcp_result())
                    })
                });
                senders.push(tx);
                ids.push(task.task_id);
            }
            // Every future polled once, parked on its oneshot.
            while started.load(Ordering::Relaxed) < n {
                tokio::task::yield_now().await;
            }
            (senders, ids)
        });
        let mut rmcp = Rmcp {
            rt,
            manager,
            _senders: senders,
            ids: Texts::new(ids),
            ttl: Duration::from_secs(60),
            picks: Picks::new(),
            batch: batch(n),
            ended: 0,
            last: None,
            lives: 0,
            polls: 0,
            expired: 0,
        };
        rmcp.calibrate();
        rmcp
    }

    /// Sets the lives' TTL: [`LIFE_TTL`], or 20 lives' time (the median of
    /// a few) if longer.
    fn calibrate(&mut self) {
        let mut times: Vec<Duration> = (0..9)
            .map(|_| {
                let start = Instant::now();
                self.lives(1);
                start.elapsed()
            })
            .collect();
        times.sort();
        let life = times[times.len() / 2];
        // The calibration's own tasks (TTL 60 s) stay: 9 more.
        self.ttl = (life * 20).max(LIFE_TTL);
        (self.ended, self.last) = (0, None);
        (self.lives, self.polls, self.expired) = (0, 0, 0);
    }

    /// One life: the `get_task` calls after the oneshot, and whether rmcp
    /// expired the task (it was preempted past its TTL).
    async fn life(&self) -> (u64, bool, String) {
        let (tx, rx) = oneshot::channel::<()>();
        let task = self.manager.spawn(
            TaskOptions::new().with_ttl_ms(Some(self.ttl.as_millis() as u64)),
            move |_ctx| {
                Box::pin(async move {
                    let _ = rx.await;
                    Ok(rmcp_result())
                })
            },
        );
        let id = task.task_id;
        let mut expired = false;
        for _ in 0..3 {
            // Err: rmcp evicted it (the life stalled past its TTL, which
            // failed it, then past one more): an expired life too.
            match std::hint::black_box(self.manager.get_task(&id)).map(|t| t.status()) {
                Ok(TaskStatus::Working) => {}
                Ok(TaskStatus::Failed) | Err(_) => expired = true,
                Ok(other) => panic!("a running task read {other:?}"),
            }
        }
        // An expired task's operation was aborted: nobody to receive.
        let _ = tx.send(());
        let mut polls = 0;
        loop {
            tokio::task::yield_now().await;
            polls += 1;
            // Err: evicted, its TTL passed since it ended (the life
            // stalled that long): an expired life.
            match self.manager.get_task(&id).map(|t| t.status()) {
                Ok(TaskStatus::Completed) => return (polls, expired, id),
                Ok(TaskStatus::Failed) | Err(_) => return (polls, true, id),
                Ok(TaskStatus::Working) => {}
                Ok(other) => panic!("the task read {other:?}"),
            }
        }
    }

    /// The lives' TTL.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Lives run; `get_task` calls after the oneshot, over all lives (the
    /// last of each life's reads the result); lives whose task expired.
    pub fn counts(&self) -> (u64, u64, u64) {
        (self.lives, self.polls, self.expired)
    }
}

impl Peer for Rmcp {
    fn lives(&mut self, k: u64) {
        let (polls, expired, last) = self.rt.block_on(async {
            let (mut polls, mut expired, mut last) = (0, 0, None);
            for _ in 0..k {
                let (p, e, id) = self.life().await;
                polls += p;
                expired += u64::from(e);
                last = Some(id);
            }
            (polls, expired, last)
        });
        if let Some(id) = last {
            self.last = Some((id, Instant::now()));
        }
        self.ended += k;
        self.lives += k;
        self.polls += polls;
        self.expired += expired;
    }

    fn gets(&mut self, k: u64) {
        let n = self.ids.len();
        for _ in 0..k {
            let i = self.picks.below(n);
            let task = self.manager.get_task(self.ids.get(i)).expect("a live task");
            assert_eq!(std::hint::black_box(task).status(), TaskStatus::Working);
        }
    }

    fn room(&self) -> u64 {
        self.batch.saturating_sub(self.ended)
    }

    fn cleanup(&mut self) {
        if let Some((id, ended)) = self.last.take() {
            // Past the TTL since the last life ended: every life's task is
            // due, and this sweep frees them all.
            let due = ended + self.ttl + Duration::from_millis(2);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            assert!(self.manager.get_task(&id).is_err(), "freed by the sweep");
        }
        self.ended = 0;
    }
}

// --- moka ------------------------------------------------------------------

/// `moka::sync::Cache<String, Arc<Record>>`, built with
/// `time_to_idle(RETENTION)` and nothing else (no size bound: evicting a
/// task to make room is not what a task store may do).
///
/// A life: a v4 UUID as text (the key, as rmcp mints it); `insert` of the
/// working record (its entry's clock read included); three `get`s (each an
/// `Arc` clone out, the status read); `insert` of the completed record (the
/// working record's entry copied, no clock read, and a clone of the result
/// `Value`); one `get`. moka has no single-winner end
/// (two racing inserts both succeed, the last one stays) and no in-flight
/// awareness (a running task nobody reads for the time to idle is
/// evicted). The key is also pushed to a list kept for the cleanup,
/// which invalidates those keys untimed and runs moka's pending
/// maintenance.
///
/// A get: `get(&text)` of a random running task, the status read.
pub struct Moka {
    cache: Cache<String, Arc<Record>>,
    ids: Texts,
    ended: Vec<String>,
    batch: u64,
    result: Value,
    picks: Picks,
}

impl Moka {
    /// A cache holding `n` running tasks.
    pub fn prefill(n: usize) -> Moka {
        let cache = Cache::builder().time_to_idle(RETENTION).build();
        let ids: Vec<String> = (0..n).map(|_| uuid::Uuid::new_v4().to_string()).collect();
        for id in &ids {
            cache.insert(id.clone(), Arc::new(working()));
        }
        cache.run_pending_tasks();
        let batch = batch(n);
        Moka {
            cache,
            ids: Texts::new(ids),
            ended: Vec::with_capacity(batch as usize),
            batch,
            result: tool_result(),
            picks: Picks::new(),
        }
    }

    /// The cache itself.
    pub fn cache(&self) -> &Cache<String, Arc<Record>> {
        &self.cache
    }

    #[inline]
    fn status(&self, key: &str) -> Status {
        self.cache.get(key).expect("a live task").status
    }

    fn life(&mut self) {
        let key = uuid::Uuid::new_v4().to_string();
        let record = Arc::new(working());
        self.cache.insert(key.clone(), Arc::clone(&record));
        for _ in 0..3 {
            assert_eq!(self.status(&key), Status::Working);
        }
        // The completed record carries the working one's entry over (its
        // fields copied, no clock read), as sessionreg's `finish` keeps its
        // entry: the task's end reads no clock in either store.
        self.cache.insert(
            key.clone(),
            Arc::new(Record {
                entry: record.entry.copied(),
                status: Status::Completed,
                result: Some(self.result.clone()),
            }),
        );
        assert_eq!(self.status(&key), Status::Completed);
        self.ended.push(key);
    }
}

fn working() -> Record {
    Record {
        entry: Entry::new(),
        status: Status::Working,
        result: None,
    }
}

impl Peer for Moka {
    fn lives(&mut self, k: u64) {
        for _ in 0..k {
            self.life();
        }
    }

    fn gets(&mut self, k: u64) {
        let n = self.ids.len();
        for _ in 0..k {
            let i = self.picks.below(n);
            let status = self.status(self.ids.get(i));
            assert_eq!(std::hint::black_box(status), Status::Working);
        }
    }

    fn room(&self) -> u64 {
        self.batch - self.ended.len() as u64
    }

    fn cleanup(&mut self) {
        for key in self.ended.drain(..) {
            self.cache.invalidate(&key);
        }
        self.cache.run_pending_tasks();
        assert_eq!(self.cache.entry_count(), self.ids.len() as u64);
    }
}

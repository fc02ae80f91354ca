use sessionreg::{Builder, ManualClock, Reason, Registry, Session, SessionId, Termination};
use std::alloc::{GlobalAlloc, Layout, System};
use std::any::Any;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

/// The preemption bound a model runs with when `LOOM_MAX_PREEMPTIONS` is not
/// set (the whole suite takes seconds at 3). The environment always wins, so
/// CI can bound the whole suite (`.ci/loom` runs it at 4).
pub const DEFAULT_PREEMPTIONS: usize = 3;

/// Branches (atomic accesses and scheduling points) one execution may take,
/// unless `LOOM_MAX_BRANCHES` says otherwise.
pub const MAX_BRANCHES: usize = 20_000;

/// Checks `f` under every interleaving loom explores, with at most
/// [`DEFAULT_PREEMPTIONS`] preemptions (or `LOOM_MAX_PREEMPTIONS`).
///
/// The model runs twice: once as written, once with the main thread yielding
/// at [`race_point`], so that the spawned threads start first. Loom's DPOR
/// can miss the reordering of a load with a later write when the writer did
/// its own load of the same atomic just before (tokio-rs/loom#166, #392):
/// with one schedule only, an insert racing a terminate was explored in one
/// order only. Starting from both ends covers both orders.
pub fn model<F>(f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    model_bounded(DEFAULT_PREEMPTIONS, f);
}

/// Like [`model`], with `bound` preemptions unless `LOOM_MAX_PREEMPTIONS`
/// says otherwise: for models small enough to afford more.
pub fn model_bounded<F>(bound: usize, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(bound);
    }
    run_both_ways(builder, f);
}

/// Runs `f` under `builder` twice, as [`model`] says: as written, then with
/// the main thread yielding at [`race_point`].
fn run_both_ways<F>(mut builder: loom::model::Builder, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    // Every atomic access is a branch, and the checks after the threads are
    // joined read every counter stripe (`len`, `stats`): well over loom's
    // default of 1000 in one execution, though they add no interleavings.
    if std::env::var_os("LOOM_MAX_BRANCHES").is_none() {
        builder.max_branches = MAX_BRANCHES;
    }
    let f = Arc::new(f);
    for others_first in [false, true] {
        let executions = Arc::new(AtomicUsize::new(0));
        let (counter, f) = (executions.clone(), f.clone());
        let start = std::time::Instant::now();
        OTHERS_FIRST.with(|flag| flag.set(others_first));
        builder.check(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            f();
        });
        OTHERS_FIRST.with(|flag| flag.set(false));
        // Shown with `--nocapture`: how big each model is.
        eprintln!(
            "{} ({}): {} executions, preemption bound {:?}, {:.1?}",
            std::thread::current().name().unwrap_or("model"),
            if others_first {
                "others first"
            } else {
                "main first"
            },
            executions.load(Ordering::Relaxed),
            builder.preemption_bound,
            start.elapsed()
        );
    }
}

/// Like [`model`], with at most `cap` preemptions, whatever
/// `LOOM_MAX_PREEMPTIONS` says: for models of three threads, each of whose
/// preemptions multiplies the interleavings (the suite's time is mostly
/// theirs).
pub fn model_capped<F>(cap: usize, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let bound = std::env::var("LOOM_MAX_PREEMPTIONS")
        .ok()
        .and_then(|bound| bound.parse().ok())
        .unwrap_or(DEFAULT_PREEMPTIONS)
        .min(cap);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    run_both_ways(builder, f);
}

std::thread_local! {
    /// Set while [`model`] runs its second pass. A loom model runs all its
    /// threads on the test's OS thread, so they all see it.
    static OTHERS_FIRST: Cell<bool> = const { Cell::new(false) };
}

/// Marks where the model's main thread starts racing the threads it spawned:
/// in the second pass of [`model`] it yields here, so they run first.
pub fn race_point() {
    if OTHERS_FIRST.with(Cell::get) {
        loom::thread::yield_now();
    }
}

/// What every model records: how often each value was dropped, and every
/// call of the close callback. Plain `std` types: they take no part in the
/// protocol, so loom need not explore them (and models stay small).
#[derive(Default)]
pub struct Log {
    made: AtomicUsize,
    drops: Mutex<Vec<usize>>,
    closes: Mutex<Vec<Close>>,
}

/// One call of the close callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Close {
    /// The id it was called with.
    pub id: SessionId,
    /// The serial of the value it was handed (read through the value, so a
    /// freed or foreign value shows).
    pub serial: u32,
    /// The reason it was called with.
    pub reason: Reason,
}

impl Log {
    /// A fresh, empty log.
    pub fn new() -> Arc<Log> {
        Arc::default()
    }

    /// A new drop-tracked value; serials count up from 0.
    pub fn value(self: &Arc<Self>) -> Tracked {
        self.value_that(Fate::Quiet)
    }

    /// A new drop-tracked value that panics as `fate` says (with a
    /// [`Planned`] payload); serials count up from 0, as for
    /// [`value`](Log::value).
    pub fn value_that(self: &Arc<Self>, fate: Fate) -> Tracked {
        let serial = self.made.fetch_add(1, Ordering::Relaxed);
        self.drops.lock().unwrap().push(0);
        Tracked {
            serial: serial as u32,
            payload: loom::cell::UnsafeCell::new(serial as u32),
            fate,
            log: self.clone(),
        }
    }

    /// How many times the value with `serial` has been dropped.
    pub fn drops(&self, serial: u32) -> usize {
        self.drops.lock().unwrap()[serial as usize]
    }

    /// Every close so far, in the order they ran.
    pub fn closes(&self) -> Vec<Close> {
        self.closes.lock().unwrap().clone()
    }

    /// Asserts that the close callback ran exactly once, for the session
    /// `id` holding the first value made (serial 0), with `reason`.
    #[track_caller]
    pub fn assert_closed_once(&self, id: SessionId, reason: Reason) {
        assert_eq!(
            self.closes(),
            [Close {
                id,
                serial: 0,
                reason
            }]
        );
    }

    /// Asserts that every value ever made has been dropped exactly once.
    pub fn assert_all_dropped_once(&self) {
        let drops = self.drops.lock().unwrap();
        for (serial, n) in drops.iter().enumerate() {
            assert_eq!(*n, 1, "value {serial} dropped {n} times (drops: {drops:?})");
        }
    }

    fn record_close(&self, close: Close) {
        self.closes.lock().unwrap().push(close);
    }
}

/// A session value that knows whether it is still alive.
///
/// Its payload sits in a loom cell: reading it after (or racing with) the
/// value's drop is either a causality violation loom reports, or reads the
/// poison the drop wrote. Every drop is counted in the [`Log`].
///
/// Aligned to 512 bytes so that the registry's pages of slots, which hold
/// it, are the only heap blocks with that alignment: the allocation
/// counter ([`StorageWatch`]) tells them apart and sees every page freed.
#[repr(align(512))]
pub struct Tracked {
    serial: u32,
    payload: loom::cell::UnsafeCell<u32>,
    fate: Fate,
    log: Arc<Log>,
}

/// Whether a [`Tracked`] value panics, and where: the code the registry
/// calls must survive both (see `tests/panics.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It never panics.
    Quiet,
    /// Its `Drop` panics, after the drop is counted.
    PanicsOnDrop,
    /// The close callback of a [`builder`]'s registry panics on it, after
    /// the close is recorded.
    PanicsOnClose,
}

/// The payload of every panic a [`Fate`] plans: [`quiet_planned_panics`]
/// keeps them out of the output, and [`assert_planned`] tells them from a
/// failing assertion.
#[derive(Debug)]
pub struct Planned;

/// Replaces the panic hook, once per process, with one that is silent about
/// [`Planned`] panics (loom would print one per execution) and hands every
/// other panic (a failing check) to the hook it replaced.
pub fn quiet_planned_panics() {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Planned>() {
                previous(info);
            }
        }));
    });
}

/// Asserts that `result` (of `catch_unwind`) is a [`Planned`] panic, and
/// raises any other panic again (a failing check inside the call).
#[track_caller]
pub fn assert_planned<T: std::fmt::Debug>(result: Result<T, Box<dyn Any + Send>>) {
    match result {
        Ok(value) => panic!("a planned panic did not propagate: returned {value:?}"),
        Err(panic) if panic.is::<Planned>() => {}
        Err(other) => std::panic::resume_unwind(other),
    }
}

/// What a dropped value's payload holds.
const POISON: u32 = 0xDEAD_DEAD;

// SAFETY: the payload is written only by `drop` (through `&mut self`), and
// read through `&self`; loom checks the two never race.
unsafe impl Sync for Tracked {}

impl Tracked {
    /// The value's serial, read through its payload: panics if the value has
    /// been dropped.
    pub fn read(&self) -> u32 {
        // SAFETY: a shared read; loom's cell checks it against the drop.
        let payload = self.payload.with(|p| unsafe { *p });
        assert_ne!(payload, POISON, "value {} read after its drop", self.serial);
        assert_eq!(payload, self.serial, "value {} corrupted", self.serial);
        payload
    }

    /// The serial, without touching the payload.
    pub fn serial(&self) -> u32 {
        self.serial
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: nobody else can be reading.
        let payload = self
            .payload
            .with_mut(|p| unsafe { std::mem::replace(&mut *p, POISON) });
        assert_eq!(payload, self.serial, "value {} dropped twice", self.serial);
        self.log.drops.lock().unwrap()[self.serial as usize] += 1;
        // Not while unwinding (a failing check elsewhere): a second panic
        // would abort the run and hide that failure. Loom's threads share
        // one OS thread's panic count, so no model may plan this drop while
        // another of its threads unwinds.
        if self.fate == Fate::PanicsOnDrop && !std::thread::panicking() {
            std::panic::panic_any(Planned);
        }
    }
}

impl std::fmt::Debug for Tracked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tracked({})", self.serial)
    }
}

/// A registry of `capacity` slots in one shard (so every insert and free goes
/// through one free list), whose close callback records into `log` (and
/// then panics, for a value made to: [`Fate::PanicsOnClose`]). With
/// `idle`, the idle timeout is zero: a session with nothing in flight is idle
/// at once, so the reaper (and an expiring lookup) races deterministically.
pub fn registry(log: &Arc<Log>, capacity: usize, idle: bool) -> Registry<Tracked> {
    let mut builder = builder(log, capacity);
    if idle {
        // Idle the moment nothing is in flight. A manual clock stamps
        // inserts and request ends exactly (the system clock leaves them
        // rough until a sweep or a touch: see the core's `activity.rs`), so
        // a new session is idle at once, and lookups race the reaper for it.
        builder = builder
            .idle_timeout(Duration::ZERO)
            .manual_clock(&sessionreg::ManualClock::new());
    }
    builder.build().expect("a valid configuration")
}

/// The builder behind [`registry`], for models that configure more (a
/// manual clock, say).
pub fn builder(log: &Arc<Log>, capacity: usize) -> Builder<Tracked> {
    let closes = log.clone();
    Registry::builder()
        .capacity(capacity)
        .shards(1)
        .on_close(move |id, value: &Tracked, reason| {
            closes.record_close(Close {
                id: *id,
                serial: value.read(),
                reason,
            });
            if value.fate == Fate::PanicsOnClose {
                std::panic::panic_any(Planned);
            }
        })
}

/// Spins (yielding to loom's scheduler) until `flag` is set: orders what
/// follows after what the setter did before setting it (Acquire/Release).
pub fn wait_for(flag: &loom::sync::atomic::AtomicBool) {
    while !flag.load(Ordering::Acquire) {
        loom::thread::yield_now();
    }
}

/// A one-slot registry with a 1 ms idle timeout on a manual clock, holding
/// one session (value 0) that has just become idle (the clock moved one
/// timeout past its last activity), a handle to it, and a thread running
/// `reap_idle` once: the caller races the reaper (after [`race_point`]).
pub fn spawn_reaper_of_an_idle_session(
    log: &Arc<Log>,
) -> (
    loom::sync::Arc<Registry<Tracked>>,
    Session<Tracked>,
    loom::thread::JoinHandle<usize>,
) {
    let clock = ManualClock::new();
    let registry = builder(log, 1)
        .idle_timeout(Duration::from_millis(1))
        .manual_clock(&clock)
        .build()
        .expect("a valid configuration");
    let registry = loom::sync::Arc::new(registry);
    let id = registry.insert(log.value()).unwrap();
    let session = registry.get(&id).expect("not idle yet");
    clock.advance(Duration::from_millis(1));
    let reaper = {
        let registry = registry.clone();
        loom::thread::spawn(move || registry.reap_idle())
    };
    (registry, session, reaper)
}

/// Spawns a thread that ends `old` with [`Reason::Deleted`] and then inserts
/// `value`, which can take the slot `old` freed. Returns that terminate's
/// result and the insert's: the new id, or the serial of the value handed
/// back (a one-slot registry is full while another thread still holds the
/// old session).
pub fn spawn_reuser(
    registry: &loom::sync::Arc<Registry<Tracked>>,
    old: SessionId,
    value: Tracked,
) -> loom::thread::JoinHandle<(Termination, Result<SessionId, u32>)> {
    let registry = registry.clone();
    loom::thread::spawn(move || {
        let ended = registry.terminate(&old, Reason::Deleted);
        let new = registry.insert(value).map_err(|e| e.into_inner().serial());
        (ended, new)
    })
}

/// Asserts, once every thread of a model has been joined and every handle
/// dropped, that the registry holds nothing and has lost nothing: no live
/// session, every value made so far dropped exactly once, and all `capacity`
/// slots free (filling them succeeds, one more insert fails and hands its
/// value back). Leaves the registry empty again.
pub fn assert_clean(registry: &Registry<Tracked>, log: &Arc<Log>) {
    assert_eq!(registry.len(), 0, "live sessions left");
    let stats = registry.stats();
    assert_eq!(stats.live, 0, "{stats:?}");
    assert_eq!(stats.created, stats.terminated_total(), "{stats:?}");
    log.assert_all_dropped_once();

    let ids: Vec<SessionId> = (0..registry.capacity())
        .map(|_| match registry.insert(log.value()) {
            Ok(id) => id,
            Err(e) => panic!("a slot leaked: {e}"),
        })
        .collect();
    let mut distinct = ids.iter().map(|id| id.to_string()).collect::<Vec<_>>();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), ids.len(), "two sessions share an id");
    let extra = log.value();
    let serial = extra.serial();
    match registry.insert(extra) {
        Ok(_) => panic!("more sessions than capacity: a slot is on the free list twice"),
        Err(e) => assert_eq!(e.into_inner().serial(), serial),
    }
    for id in &ids {
        assert_eq!(registry.terminate(id, Reason::Deleted), Termination::Won);
    }
    assert_eq!(registry.len(), 0);
    log.assert_all_dropped_once();
}

/// Asserts that exactly the sessions `live` (each an id and the serial of
/// its value) are live and hold their own values, ends them all, and then
/// [`assert_clean`]s the registry.
#[track_caller]
pub fn end_all_and_assert_clean(
    registry: &Registry<Tracked>,
    log: &Arc<Log>,
    live: &[(SessionId, u32)],
) {
    for (id, serial) in live {
        let session = registry.get(id).expect("a session that should be live");
        assert_eq!(session.id(), *id);
        assert_eq!(session.read(), *serial, "a session holds another value");
    }
    assert_eq!(registry.len(), live.len());
    for (id, _) in live {
        assert_eq!(registry.terminate(id, Reason::Deleted), Termination::Won);
    }
    assert_clean(registry, log);
}

/// Counts live heap blocks per OS thread, in two classes: aligned to
/// 64..=256 bytes (cache-padded), and to 512 bytes or more (pages of slots
/// holding a [`Tracked`]).
///
/// A loom model runs all its threads on the test's OS thread, so the counts
/// cover the whole model and nothing from tests running beside it. The
/// registry's shared storage and its counter stripes are cache-padded
/// (`crossbeam_utils::CachePadded`), so they are such blocks, and hardly
/// anything else is; its pages of slots are the only blocks aligned like
/// `Tracked` (a spawned thread's closure or result holding a `Tracked` is
/// one too, for as long as the thread is not joined). Each count going back
/// to where it was shows that the storage and every page were freed,
/// exactly once (a page installed twice and dropped never shows too).
struct Counting;

std::thread_local! {
    static PADDED_BLOCKS: Cell<isize> = const { Cell::new(0) };
    static PAGE_BLOCKS: Cell<isize> = const { Cell::new(0) };
}

fn count(layout: Layout, delta: isize) {
    let class = match layout.align() {
        64..=256 => &PADDED_BLOCKS,
        512.. => &PAGE_BLOCKS,
        _ => return,
    };
    let _ = class.try_with(|n| n.set(n.get() + delta));
}

// SAFETY: forwards to `System` unchanged; counting touches only
// const-initialised thread-locals without a destructor (no allocation).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout, 1);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout, 1);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(layout, -1);
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Cache-padded heap blocks live on this OS thread now (see [`Counting`]).
pub fn padded_blocks() -> isize {
    PADDED_BLOCKS.with(Cell::get)
}

/// Heap blocks aligned like [`Tracked`] (pages of slots) live on this OS
/// thread now (see [`Counting`]).
pub fn page_blocks() -> isize {
    PAGE_BLOCKS.with(Cell::get)
}

/// Watches the registry storage and its pages come and go through
/// [`padded_blocks`] and [`page_blocks`].
pub struct StorageWatch {
    padded: isize,
    pages: isize,
}

impl StorageWatch {
    /// Starts watching: call before building the registry.
    pub fn start() -> StorageWatch {
        StorageWatch {
            padded: padded_blocks(),
            pages: page_blocks(),
        }
    }

    /// Asserts the storage exists now (so that [`assert_freed`] means
    /// something: if the storage stops being cache-padded, this fails).
    ///
    /// [`assert_freed`]: StorageWatch::assert_freed
    pub fn assert_allocated(&self) {
        assert!(
            padded_blocks() > self.padded,
            "no cache-padded block allocated: the storage watch sees nothing"
        );
    }

    /// Asserts everything allocated since [`start`](StorageWatch::start) has
    /// been freed, exactly once: the storage, and every page.
    pub fn assert_freed(&self) {
        let now = padded_blocks();
        assert!(now >= self.padded, "the registry storage was freed twice");
        assert_eq!(now, self.padded, "the registry storage leaked");
        let pages = page_blocks();
        assert!(pages >= self.pages, "a page was freed twice");
        assert_eq!(pages, self.pages, "a page leaked");
    }
}

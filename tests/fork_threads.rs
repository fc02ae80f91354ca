//! A child forked while another thread of its parent is taking or giving
//! back a thread id (the registry's per-thread counters and shards are
//! indexed by it) must be able to start threads that count: the child has
//! none of its parent's other threads, so nothing they held at the fork may
//! be waited for.
//!
//! The thread ids' registry used to be a process-wide mutex: a thread that
//! held it when the process forked left it held in the child forever, and
//! the child's first new thread deadlocked on its first counter bump. Here a
//! thread is made to stop inside its id's give-back (a global allocator
//! that parks one chosen thread's next allocation, which the give-back of
//! the mutex's free list made) and the process forks; then forks again
//! while threads keep starting and exiting.
//!
//! The child starts its thread with `pthread_create`, not
//! `std::thread::spawn`: std's spawn takes process-wide locks of its own (the
//! stack-overflow handler's table of thread stacks is behind a mutex), which
//! the parent's threads, spawning and exiting in part 2, may hold at the
//! fork. A child stuck there is std's limit (POSIX allows a child of a
//! threaded parent only async-signal-safe calls), not the registry's, and the
//! test would fail on it about one run in fifteen. What is tested is that
//! nothing of ours waits in the child.
//!
//! A child that deadlocks is ended by `alarm` (the deadlock's only visible
//! sign: the test waits for its children, and would hang). Its own test
//! binary, with one test: it forks, and parks an allocation.
#![cfg(unix)]

use sessionreg::{Reason, Registry};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Parks the next allocation of the thread that armed it until released.
struct Parking;

thread_local! {
    /// Set by the one thread whose next allocation parks (const, without a
    /// destructor: readable while the thread's other thread-locals are torn
    /// down).
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

/// A thread is parked inside an allocation.
static PARKED: AtomicBool = AtomicBool::new(false);
/// The parked allocation may go on.
static RELEASED: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards to `System` unchanged; parking only spins on statics and
// touches a const thread-local without a destructor (no allocation).
unsafe impl GlobalAlloc for Parking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ARMED
            .try_with(|armed| armed.replace(false))
            .unwrap_or(false)
        {
            PARKED.store(true, Ordering::SeqCst);
            while !RELEASED.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
        }
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Parking = Parking;

/// The child's new thread: takes a thread id (registry inserts count on
/// it) and inserts three sessions into the registry `arg` points to.
/// Returns non-null if they were all inserted.
extern "C" fn insert_three(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the `&Registry<()>` that `start_and_join` lent; it
    // joins this thread before the borrow ends.
    let registry = unsafe { &*arg.cast::<Registry<()>>() };
    // AssertUnwindSafe: on a panic the thread only reports failure; the
    // registry is not looked at again.
    let inserted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for _ in 0..3 {
            registry.insert(()).unwrap();
        }
    }));
    // Any non-null pointer says yes: nothing reads through it.
    if inserted.is_ok() {
        std::ptr::NonNull::<u8>::dangling().as_ptr().cast()
    } else {
        std::ptr::null_mut()
    }
}

/// Runs `start(registry)` on a thread started with `pthread_create` (none of
/// std's spawn locks) and joins it; true if it returned non-null.
fn start_and_join(
    start: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    registry: &Registry<()>,
) -> bool {
    let arg = std::ptr::from_ref(registry)
        .cast_mut()
        .cast::<libc::c_void>();
    // SAFETY: zeroed storage for the thread handle, written by
    // `pthread_create` before it is read.
    let mut thread: libc::pthread_t = unsafe { std::mem::zeroed() };
    // SAFETY: default attributes; `start` catches every panic and `arg`
    // outlives the thread, which is joined below.
    let started = unsafe { libc::pthread_create(&mut thread, std::ptr::null(), start, arg) };
    assert_eq!(started, 0, "pthread_create failed");
    let mut returned = std::ptr::null_mut();
    // SAFETY: `thread` was started above and is joined once.
    assert_eq!(unsafe { libc::pthread_join(thread, &mut returned) }, 0);
    !returned.is_null()
}

/// Forks; the child runs `child` on a new thread (which takes a thread id
/// and counts), and exits 0 if it finished and the counts are right; a
/// deadlocked child is killed by `alarm`. Returns the child's exit status.
fn fork_and_start_a_counting_thread() -> libc::c_int {
    // SAFETY: the child only starts a thread (`pthread_create`), inserts
    // into a registry and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: ends a deadlocked child after 30 s; plain libc calls.
        unsafe { libc::alarm(30) };
        let counted = std::panic::catch_unwind(|| {
            let registry: Registry<()> = Registry::builder().build().unwrap();
            let inserted = start_and_join(insert_three, &registry);
            inserted && registry.len() == 3 && registry.stats().created == 3
        });
        let code = i32::from(!matches!(counted, Ok(true)));
        // SAFETY: ends the child without the parent's atexit handlers or
        // the test harness.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    status
}

#[track_caller]
fn assert_exited_cleanly(status: libc::c_int) {
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child did not finish: {}",
        if libc::WIFSIGNALED(status) {
            format!(
                "killed by signal {} (SIGALRM: deadlocked)",
                libc::WTERMSIG(status)
            )
        } else {
            format!("exit status {}", libc::WEXITSTATUS(status))
        }
    );
}

#[test]
fn a_child_forked_during_a_thread_id_handover_starts_threads_that_count() {
    let registry = Arc::new(Registry::builder().build().unwrap());
    registry.insert(()).unwrap();

    // 1. A thread stopped in its id's give-back, if that allocates.
    let exiting = {
        let registry = Arc::clone(&registry);
        std::thread::spawn(move || {
            registry.insert(()).unwrap(); // takes an id
            ARMED.with(|armed| armed.set(true)); // its next allocation parks
        })
    };
    while !PARKED.load(Ordering::SeqCst) && !exiting.is_finished() {
        std::thread::yield_now();
    }
    let status = fork_and_start_a_counting_thread();
    // Before any assertion: the parked thread may hold what this thread's
    // own exit needs.
    RELEASED.store(true, Ordering::SeqCst);
    exiting.join().unwrap();
    assert_exited_cleanly(status);

    // 2. Threads starting and exiting (taking and giving back ids) while the
    // process forks, again and again.
    let stop = Arc::new(AtomicBool::new(false));
    let churners: Vec<_> = (0..2)
        .map(|_| {
            let (registry, stop) = (Arc::clone(&registry), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let registry = Arc::clone(&registry);
                    std::thread::spawn(move || {
                        let id = registry.insert(()).unwrap();
                        drop(registry.get(&id));
                        assert!(registry.terminate(&id, Reason::Deleted).is_won());
                    })
                    .join()
                    .unwrap();
                }
            })
        })
        .collect();
    for _ in 0..20 {
        assert_exited_cleanly(fork_and_start_a_counting_thread());
        std::thread::sleep(Duration::from_millis(1));
    }
    stop.store(true, Ordering::SeqCst);
    for churner in churners {
        churner.join().unwrap();
    }
}

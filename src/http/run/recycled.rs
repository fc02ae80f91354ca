//! A future on the heap, in memory its thread freed from one like it
//! before ([`recycled`]).
//!
//! The routing of every request is a future of about 7 KiB, boxed so that
//! a connection holds it only while a request is in flight (see
//! `SessionManager::handle`). A block that size is past the allocator's
//! per-thread caches (glibc's tcache stops at 1 KiB): each request paid a
//! `malloc` and a `free` that walk its bins. A worker thread serves one
//! request after another, so the block the last routing freed is the one
//! the next needs: each thread keeps the last few ([`KEPT`]), and a
//! routing takes one of them if it can.
//!
//! Only freed blocks are kept, never a live future: an idle connection
//! still holds none of it, and a thread keeps at most [`KEPT`] blocks
//! (given back to the allocator when the thread ends).

use std::alloc::{self, Layout};
use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// How many freed blocks a thread keeps. A worker drops a request's
/// routing before it makes the next one's, so one suffices when requests
/// follow each other; a few more cover a thread that makes some while
/// others still run (a stream's head answered, a request in flight on
/// another connection of the thread).
const KEPT: usize = 4;

/// `make()`'s future in a block of memory this thread kept from a future
/// of the same layout, or in a new allocation: what `Box::pin(make())`
/// would give, without the allocator's round trip when a block is kept.
/// The block is allocated (or taken) first and the future written into
/// it, so that the optimizer can make it there (as `in_place.rs` does).
pub(crate) fn recycled<F: Future>(make: impl FnOnce() -> F) -> Recycled<F> {
    let layout = Layout::new::<F>();
    let block = match layout.size() {
        // A zero-sized value needs an aligned address, no memory.
        0 => NonNull::<F>::dangling(),
        _ => take(layout).cast::<F>(),
    };
    // Given back if `make` panics: nothing was written into it.
    let unwritten = Given(block.cast(), layout);
    // SAFETY: `block` is valid for a write of an `F` (`take` gave memory of
    // `F`'s layout, or a dangling aligned pointer for a zero-sized `F`) and
    // holds nothing yet.
    unsafe { block.as_ptr().write(make()) };
    std::mem::forget(unwritten);
    Recycled {
        future: block,
        owns: PhantomData,
    }
}

/// A future in a block of its own ([`recycled`]): it never moves from
/// there until it is dropped, as in a `Pin<Box<F>>`; dropped, it frees
/// the block to its thread's kept ones.
pub(crate) struct Recycled<F> {
    future: NonNull<F>,
    /// It owns an `F` (for auto traits and drop checking).
    owns: PhantomData<F>,
}

// SAFETY: a `Recycled<F>` is the sole owner of its `F`, as a `Box<F>` is:
// it may go to, or be shared with, another thread when `F` may.
unsafe impl<F: Send> Send for Recycled<F> {}
// SAFETY: as above; `&Recycled<F>` gives no access to the `F`.
unsafe impl<F: Sync> Sync for Recycled<F> {}

// The future is pinned in its block, not in the `Recycled`, which holds
// only a pointer to it (as `Pin<Box<F>>` is `Unpin`).
impl<F> Unpin for Recycled<F> {}

impl<F: Future> Future for Recycled<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut future = self.get_mut().future;
        // SAFETY: the `F` was written in `recycled` and is dropped only
        // with the `Recycled`, which this `&mut` borrows, so it is live
        // and nothing else refers to it; it never moves from its block
        // until it is dropped there (`Drop` below), which is what pinning
        // asks.
        unsafe { Pin::new_unchecked(future.as_mut()) }.poll(cx)
    }
}

impl<F> Drop for Recycled<F> {
    fn drop(&mut self) {
        // Given back even if the future's drop panics.
        let _freed = Given(self.future.cast(), Layout::new::<F>());
        // SAFETY: the `F` is live (written in `recycled`, dropped only
        // here) and is not used again: the block is given back after.
        unsafe { self.future.as_ptr().drop_in_place() };
    }
}

/// A block (from [`take`], for its layout, holding nothing live by the
/// time this drops) that is [given](give) back when this drops.
struct Given(NonNull<u8>, Layout);

impl Drop for Given {
    fn drop(&mut self) {
        give(self.0, self.1);
    }
}

/// The freed blocks a thread keeps, each with its layout.
struct Kept([Option<(NonNull<u8>, Layout)>; KEPT]);

impl Drop for Kept {
    fn drop(&mut self) {
        for (block, layout) in self.0.iter_mut().filter_map(Option::take) {
            // SAFETY: a kept block was allocated with `layout` by the
            // global allocator (`take`) and is owned by nothing else.
            unsafe { alloc::dealloc(block.as_ptr(), layout) };
        }
    }
}

thread_local! {
    static KEPT_BLOCKS: RefCell<Kept> = const { RefCell::new(Kept([None; KEPT])) };
}

/// A block for `layout` (not zero-sized): one this thread kept, or a new
/// allocation.
fn take(layout: Layout) -> NonNull<u8> {
    // No block while the thread's own are being dropped (`try_with` fails):
    // a new one.
    let kept = KEPT_BLOCKS
        .try_with(|kept| {
            let mut kept = kept.borrow_mut();
            let found = kept
                .0
                .iter_mut()
                .find(|b| b.is_some_and(|(_, l)| l == layout));
            found.and_then(Option::take).map(|(block, _)| block)
        })
        .ok()
        .flatten();
    kept.unwrap_or_else(|| {
        // SAFETY: `layout` is not zero-sized (`recycled` takes no block for
        // a zero-sized future).
        let block = unsafe { alloc::alloc(layout) };
        NonNull::new(block).unwrap_or_else(|| alloc::handle_alloc_error(layout))
    })
}

/// Frees `block` (from [`take`], for `layout`, holding nothing live): kept
/// by this thread if it has room, else given back to the allocator. A
/// zero-sized layout's block is no memory: nothing to free.
fn give(block: NonNull<u8>, layout: Layout) {
    if layout.size() == 0 {
        return;
    }
    let kept = KEPT_BLOCKS
        .try_with(|kept| {
            let mut kept = kept.borrow_mut();
            match kept.0.iter_mut().find(|b| b.is_none()) {
                Some(room) => {
                    *room = Some((block, layout));
                    true
                }
                None => false,
            }
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: `block` was allocated with `layout` by the global
        // allocator (`take`), and its owner gives it up here.
        unsafe { alloc::dealloc(block.as_ptr(), layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Waker;

    fn poll<F: Future>(future: &mut Recycled<F>) -> Poll<F::Output> {
        Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
    }

    /// Runs `test` on a thread of its own: one that keeps no block yet.
    fn on_a_new_thread(test: impl FnOnce() + Send + 'static) {
        std::thread::spawn(test).join().unwrap();
    }

    fn kept_here() -> usize {
        KEPT_BLOCKS.with(|k| k.borrow().0.iter().flatten().count())
    }

    #[test]
    fn a_freed_block_is_the_next_futures_of_its_layout() {
        on_a_new_thread(|| {
            let mut first = recycled(|| std::future::ready([1u8; 512]));
            assert_eq!(poll(&mut first), Poll::Ready([1; 512]));
            let at = first.future.cast::<u8>();
            drop(first);
            assert_eq!(kept_here(), 1);
            // Same layout, same thread: the block the first one freed.
            let mut second = recycled(|| std::future::ready([2u8; 512]));
            assert_eq!(second.future.cast::<u8>(), at);
            assert_eq!(kept_here(), 0);
            assert_eq!(poll(&mut second), Poll::Ready([2; 512]));
            // A future of another layout is not given that block.
            drop(second);
            let other = recycled(|| std::future::ready([3u64; 100]));
            assert_ne!(other.future.cast::<u8>(), at);
            assert_eq!(kept_here(), 1);
        });
    }

    #[test]
    fn a_thread_keeps_no_more_blocks_than_its_share() {
        on_a_new_thread(|| {
            // More live at once than a thread keeps, all freed: it keeps
            // `KEPT` of them, the others go back to the allocator.
            let futures: Vec<_> = (0..KEPT + 3)
                .map(|i| recycled(move || std::future::ready([i as u8; 300])))
                .collect();
            assert_eq!(kept_here(), 0);
            drop(futures);
            assert_eq!(kept_here(), KEPT);
        });
    }

    #[test]
    fn the_future_is_dropped_once_polled_or_not() {
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let counted = Counted(Arc::clone(&drops));
        let mut pending = recycled(move || async move {
            let _held = counted;
            std::future::pending::<()>().await;
        });
        assert_eq!(poll(&mut pending), Poll::Pending);
        drop(pending);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        let unpolled = Counted(Arc::clone(&drops));
        drop(recycled(move || async move { drop(unpolled) }));
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_panic_while_making_gives_the_block_back() {
        on_a_new_thread(|| {
            let made = std::panic::catch_unwind(|| {
                recycled(|| -> std::future::Ready<[u8; 700]> { panic!("not made") })
            });
            assert!(made.is_err());
            assert_eq!(kept_here(), 1);
            // The next future of that layout gets the block back.
            let at = KEPT_BLOCKS.with(|k| k.borrow().0[0].unwrap().0);
            let next = recycled(|| std::future::ready([1u8; 700]));
            assert_eq!(next.future.cast::<u8>(), at);
        });
    }

    #[test]
    fn zero_sized_futures_take_no_block() {
        on_a_new_thread(|| {
            struct Nothing;
            impl Future for Nothing {
                type Output = ();
                fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
                    Poll::Ready(())
                }
            }
            let mut nothing = recycled(|| Nothing);
            assert_eq!(poll(&mut nothing), Poll::Ready(()));
            drop(nothing);
            assert_eq!(kept_here(), 0);
        });
    }

    #[test]
    fn a_future_made_on_one_thread_may_run_and_end_on_another() {
        let mut future = recycled(|| async { 5u32 });
        assert_eq!(poll(&mut future), Poll::Ready(5));
        let future = recycled(|| async { 6u32 });
        on_a_new_thread(move || {
            let mut future = future;
            assert_eq!(poll(&mut future), Poll::Ready(6));
            // Freed here, kept by this thread, and given back to the
            // allocator when it ends.
            drop(future);
            assert_eq!(kept_here(), 1);
        });
    }
}

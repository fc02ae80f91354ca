//! One slot: a session's lifecycle word, secret, activity and value.
//!
//! The slot's words are described in `lifecycle.rs` and `activity.rs`; this
//! file holds them together with the value and says when the value may be
//! touched:
//!
//! * written only by the thread that owns a `FREE` slot (it popped it from
//!   the free list or took it fresh), before it publishes `LIVE`;
//! * read only while holding a reference (the lifecycle's `refs > 0`);
//! * dropped only by the last one out of `TERMINATED`.

use crate::activity::Activity;
use crate::lifecycle::Lifecycle;
use crate::sync::{AtomicU64, Ordering, UnsafeCell};
use std::mem::MaybeUninit;

pub(crate) struct Slot<S> {
    pub(crate) lifecycle: Lifecycle,
    /// The session's secret while the slot is `LIVE` or `TERMINATED`; the
    /// free-list link while it is `FREE`. Sharing the word keeps a slot at
    /// four words for a pointer-sized value.
    secret_or_link: AtomicU64,
    pub(crate) activity: Activity,
    value: UnsafeCell<MaybeUninit<S>>,
}

impl<S> Slot<S> {
    pub(crate) fn new() -> Slot<S> {
        Slot {
            lifecycle: Lifecycle::new(),
            secret_or_link: AtomicU64::new(0),
            activity: Activity::new(),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Fills a free slot and publishes it as `LIVE`, its activity stamped
    /// `stamp` (`None`: rough, see `activity.rs`); returns its generation.
    /// With `in_flight`, the session starts with one request in flight and
    /// one reference held for it, both the caller's to give back.
    ///
    /// # Safety
    ///
    /// The caller owns the slot: it is `FREE` and the caller took it from the
    /// free list, or took it fresh, and has not given it back.
    pub(crate) unsafe fn fill(
        &self,
        value: S,
        secret: u64,
        stamp: Option<u64>,
        in_flight: bool,
    ) -> u64 {
        // SAFETY: the caller owns the slot, so nobody reads or writes the
        // value cell concurrently; the cell is uninitialised (a FREE slot's
        // value was dropped by the last one out, or never written).
        self.value.with_mut(|cell| unsafe { (*cell).write(value) });
        // Release, although `publish` publishes it too: a reader that loaded
        // an older `LIVE(g)` and reads this new secret must then see the slot
        // has moved on (see `secret`).
        self.secret_or_link.store(secret, Ordering::Release);
        self.activity.reset(stamp, u64::from(in_flight));
        self.lifecycle.publish(u64::from(in_flight))
    }

    /// The secret of the session in the slot.
    ///
    /// Callers have loaded `LIVE(g)` with Acquire, which orders this after
    /// the inserter's store. But the slot may have ended since, and this may
    /// read a free-list link or a newer session's secret. Acquire, pairing
    /// with the Release of both of those stores, guarantees that a caller
    /// who reads one of them and then reloads the lifecycle word sees that
    /// the slot is no longer `LIVE(g)` (the link is written after the
    /// session ended, the new secret after it was freed), so a mismatch is
    /// never mistaken for a forged id.
    #[inline]
    pub(crate) fn secret(&self) -> u64 {
        self.secret_or_link.load(Ordering::Acquire)
    }

    /// The free-list link word (see `free_list.rs`), written as the slot is
    /// pushed on its free list: while it is `TERMINATED(g, 0)` (a handle's
    /// free) or already `FREE(g + 1)` (the registry's).
    #[inline]
    pub(crate) fn link(&self) -> &AtomicU64 {
        &self.secret_or_link
    }

    /// The session's value.
    ///
    /// # Safety
    ///
    /// For at least as long as it uses the returned borrow, the caller holds
    /// a reference on the slot (taken with a successful `try_acquire`,
    /// `try_terminate` with an extra ref, or `clone_ref`), or is the slot's
    /// last one out and has not dropped the value (`WonAlone`, `LastOut`).
    #[inline]
    pub(crate) unsafe fn value(&self) -> &S {
        // SAFETY: a held reference means the slot is LIVE or TERMINATED and
        // not yet freed, so the value was initialised by `fill` (ordered
        // before us by the Acquire that took the reference) and will not be
        // dropped before the reference is released; the last one out drops
        // it only after its last use.
        self.value.with(|cell| unsafe { (*cell).assume_init_ref() })
    }

    /// Drops the value of a slot whose last reference is gone.
    ///
    /// # Safety
    ///
    /// The caller is the last one out: `release` returned `LastOut` to it and
    /// it has not called `free` yet.
    pub(crate) unsafe fn drop_value(&self) {
        // SAFETY: the last one out is the only thread that may touch the
        // slot (TERMINATED with no refs: nobody can take a reference), the
        // value was initialised by `fill`, and it is dropped only here, once
        // per generation.
        self.value
            .with_mut(|cell| unsafe { (*cell).assume_init_drop() });
    }
}

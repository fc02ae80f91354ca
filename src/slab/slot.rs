//! One slot: a session's lifecycle word, secret, activity and value, and
//! what it keeps of the previous session's secret.
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
use crate::secret::Secret;
use crate::slab::lifecycle::Lifecycle;
use crate::sync::{AtomicU64, Ordering, UnsafeCell};
use std::mem::MaybeUninit;

// `repr(C)`, in this order: the words a lookup reads (the lifecycle, the
// activity with an idle timeout, the secret) are the slot's first 32 bytes,
// so a lookup touches the same cache lines with an idle timeout as without
// (one line for three slots in four, two for the fourth: a 48-byte slot
// cannot do better). Left to the compiler, the value came first, and the
// activity word fell on a line of its own for one slot in four.
#[repr(C)]
pub(crate) struct Slot<S> {
    pub(crate) lifecycle: Lifecycle,
    pub(crate) activity: Activity,
    /// The high word of the session's secret while the slot is `LIVE` or
    /// `TERMINATED` (an ended session's, unused, while it is `FREE`).
    secret_high: AtomicU64,
    /// The low word of the session's secret while the slot is `LIVE` or
    /// `TERMINATED`; the free-list link while it is `FREE`. Sharing the word
    /// keeps a slot at five words for a pointer-sized value, with no
    /// padding: two `u64`s, where a `u128` would align the slot to 16 bytes.
    secret_low_or_link: AtomicU64,
    /// The digest (`Secret::digest`) of the secret of the slot's previous
    /// session, once its last one out has recorded it: what tells an id of
    /// that session, one generation behind, from a guess. A random word
    /// before the slot's first session ends (no id matches it).
    ended: AtomicU64,
    value: UnsafeCell<MaybeUninit<S>>,
}

// Six words for a pointer-sized value: lifecycle, activity, two of secret,
// the previous secret's digest, value. (Not under loom, whose atomics
// are larger.)
#[cfg(not(sessionreg_loom))]
const _: () = assert!(std::mem::size_of::<Slot<usize>>() == 6 * 8);
#[cfg(not(sessionreg_loom))]
const _: () = assert!(std::mem::align_of::<Slot<usize>>() == 8);

impl<S> Slot<S> {
    /// A slot never used; `noise` (random) stands in for the digest of a
    /// previous session it never had.
    pub(crate) fn new(noise: u64) -> Slot<S> {
        Slot {
            lifecycle: Lifecycle::new(),
            activity: Activity::new(),
            secret_high: AtomicU64::new(0),
            secret_low_or_link: AtomicU64::new(0),
            ended: AtomicU64::new(noise),
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
        secret: Secret,
        stamp: Option<u64>,
        in_flight: bool,
    ) -> u64 {
        // SAFETY: the caller owns the slot, so nobody reads or writes the
        // value cell concurrently; the cell is uninitialised (a FREE slot's
        // value was dropped by the last one out, or never written).
        self.value.with_mut(|cell| unsafe { (*cell).write(value) });
        // Release, each word, although `publish` publishes them too: a
        // reader that loaded an older `LIVE(g)` and reads either new word
        // must then see the slot has moved on (see `secret`).
        self.secret_high.store(secret.high, Ordering::Release);
        self.secret_low_or_link.store(secret.low, Ordering::Release);
        self.activity.reset(stamp, u64::from(in_flight));
        self.lifecycle.publish(u64::from(in_flight))
    }

    /// The secret of the session in the slot.
    ///
    /// Callers have loaded `LIVE(g)` with Acquire, which orders these loads
    /// after the inserter's stores. But the slot may have ended since, and
    /// either word may then read something later: the low word a free-list
    /// link, either word a newer session's secret. Each load is Acquire,
    /// pairing with the Release of each of those stores, so a caller who
    /// read any one of them and then reloads the lifecycle word sees that
    /// the slot is no longer `LIVE(g)` (the link is written after the
    /// session ended, a new secret after it was freed). A mismatch on a
    /// word that was not the session's own therefore always shows as a
    /// moved slot, never as a forged id; words that were both the session's
    /// own compare as they should.
    #[inline]
    pub(crate) fn secret(&self) -> Secret {
        Secret {
            high: self.secret_high.load(Ordering::Acquire),
            low: self.secret_low_or_link.load(Ordering::Acquire),
        }
    }

    /// Records the digest of the ended session's secret, for ids of it
    /// once the slot has moved on ([`ended_digest`](Self::ended_digest)).
    ///
    /// Called by the slot's last one out first (`storage::retire`), while
    /// it is `TERMINATED(g, 0)` and its secret is still whole: before the
    /// link is written over the low word, and before the slot is `FREE(g +
    /// 1)`. Release: a reader that loads either of those (Acquire), or the
    /// newer session's secret, then reads this digest.
    pub(crate) fn record_end(&self) {
        self.ended.store(self.secret().digest(), Ordering::Release);
    }

    /// The digest of the secret of the slot's previous session (see
    /// [`record_end`](Self::record_end)). The generation it is for is the
    /// one before the lifecycle word's, unless that word's session is itself
    /// being freed: its last one out may be writing its own.
    #[inline]
    pub(crate) fn ended_digest(&self) -> u64 {
        self.ended.load(Ordering::Acquire)
    }

    /// The free-list link word (see `free_list.rs`), written as the slot is
    /// pushed on its free list: while it is `TERMINATED(g, 0)` (a handle's
    /// free) or already `FREE(g + 1)` (the registry's).
    #[inline]
    pub(crate) fn link(&self) -> &AtomicU64 {
        &self.secret_low_or_link
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

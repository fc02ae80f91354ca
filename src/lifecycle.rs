//! One slot's lifecycle word: state, reference count and generation.
//!
//! ```text
//!  63                34 33                 3   2      1  0
//! +-------------------+--------------------+--------+-----+
//! |  generation (30)  |     refs (31)      | orphan |state|
//! +-------------------+--------------------+--------+-----+
//! ```
//!
//! The states, and the only transitions between them:
//!
//! ```text
//! FREE(g) --publish--> LIVE(g) --terminate (one CAS)--> TERMINATED(g) --last ref out--> FREE(g+1)
//! ```
//!
//! * `refs` counts the handles ([`Session`](crate::Session)) and in-progress
//!   operations that may read the slot's value. While `refs > 0` the value is
//!   in place and the slot cannot be freed or reused.
//! * A reference can be *taken* only on `LIVE(g)`, and only by a CAS that
//!   expects the generation the caller asked for; it can be *cloned* from an
//!   existing one in any state.
//! * `TERMINATED` is entered exactly once per generation, by a CAS from `LIVE`:
//!   whoever's CAS succeeds is the one winner.
//! * The reference that leaves `TERMINATED(g)` with zero refs is the *last
//!   one out*; it, and only it, frees the slot as `FREE(g+1)`.
//! * The last one out drops the value and pushes the slot on the free list
//!   while the word still reads `TERMINATED(g, 0)`, and only then frees it:
//!   that swap is its last access to the storage.
//! * `orphan` is set on every slot when the registry is dropped, so the last
//!   one out of a slot still held or being freed knows it must also account
//!   for the storage (see `storage.rs`).
//!
//! Every transition is a method returning a `#[must_use]` value that says what
//! the caller must do next, in the style of tokio's task state.

use crate::id::GENERATION as ID_GENERATION;
use crate::pack::Field;
use crate::sync::{AtomicU64, Ordering};

const STATE: Field = Field::lowest(2);
const ORPHAN: Field = STATE.then(1);
const REFS: Field = ORPHAN.then(31);
const GENERATION: Field = REFS.then(ID_GENERATION.bits());
const _: () = assert!(GENERATION.end() == 64);

const FREE: u64 = 0;
const LIVE: u64 = 1;
const TERMINATED: u64 = 2;

/// A snapshot of a lifecycle word.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word(u64);

impl Word {
    const fn new(state: u64, generation: u64) -> Word {
        Word(GENERATION.set(STATE.set(0, state), generation))
    }

    pub(crate) fn generation(self) -> u64 {
        GENERATION.get(self.0)
    }

    pub(crate) fn refs(self) -> u64 {
        REFS.get(self.0)
    }

    pub(crate) fn is_live(self) -> bool {
        STATE.get(self.0) == LIVE
    }

    pub(crate) fn is_terminated(self) -> bool {
        STATE.get(self.0) == TERMINATED
    }

    pub(crate) fn is_free(self) -> bool {
        STATE.get(self.0) == FREE
    }

    fn is_orphaned(self) -> bool {
        ORPHAN.get(self.0) == 1
    }

    /// Whether the slot holds (or held) the session of generation `generation`,
    /// rather than one that came later or has not been minted yet.
    pub(crate) fn names(self, generation: u64) -> bool {
        self.generation() == generation && !self.is_free()
    }

    /// Whether `generation` is older than this word's: the session it named
    /// has come and gone. Generations wrap, so "older" means within half the
    /// range behind.
    pub(crate) fn has_passed(self, generation: u64) -> bool {
        let behind = self.generation().wrapping_sub(generation) & GENERATION.max();
        behind != 0 && behind <= GENERATION.max() / 2
    }
}

impl std::fmt::Debug for Word {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match STATE.get(self.0) {
            FREE => "FREE",
            LIVE => "LIVE",
            TERMINATED => "TERMINATED",
            _ => "INVALID",
        };
        write!(f, "{state}(gen {}, refs {}", self.generation(), self.refs())?;
        if self.is_orphaned() {
            f.write_str(", orphan")?;
        }
        f.write_str(")")
    }
}

/// What [`Lifecycle::try_acquire`] did.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Acquire {
    /// A reference is held: the caller must give it back with
    /// [`Lifecycle::release`].
    Acquired,
    /// The word changed since the caller looked; here is what it is now.
    Changed(Word),
}

/// What [`Lifecycle::try_terminate`] did.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Terminate {
    /// This call moved the slot from `LIVE` to `TERMINATED`: the caller is the
    /// one winner and runs the session's cleanup. It holds a reference (one
    /// it had, or one the CAS took for it) and must release it afterwards.
    Won,
    /// As `Won`, and nobody held the session: the slot went straight to
    /// `TERMINATED(g, 0)`, so the caller is also its last one out and, after
    /// the cleanup, frees it itself (no reference to take and give back).
    WonAlone,
    /// The word changed since the caller looked; here is what it is now.
    Changed(Word),
}

/// What [`Lifecycle::release`] left the caller to do.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// Other references remain, or the session is still live.
    Done,
    /// This was the last reference out of a terminated session: the caller
    /// must drop the value, put the slot on its free list, and then call
    /// [`Lifecycle::free`]: the slot stays `TERMINATED(g, 0)` ("being freed")
    /// until then.
    LastOut,
}

/// What [`Lifecycle::free`] found.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Freed {
    /// The registry is alive, or had not looked at this slot yet.
    Done,
    /// The registry was dropped while this slot was being freed and counted
    /// it as pending: the caller must settle the storage's account.
    Orphaned,
}

/// The atomic lifecycle word of one slot.
pub(crate) struct Lifecycle(AtomicU64);

// The hot transitions are `#[inline]`, as are the free list's and the
// activity word's: the registry is generic, so its methods compile in the
// user's crate, where a method of this one without `#[inline]` stays a call
// (through the GOT, as rustc builds x86-64 Linux code) around what is mostly
// one atomic instruction.
impl Lifecycle {
    /// A slot that was never used: `FREE(0)`.
    pub(crate) fn new() -> Lifecycle {
        Lifecycle(AtomicU64::new(Word::new(FREE, 0).0))
    }

    /// Reads the word.
    ///
    /// Acquire: if the word is `LIVE(g)`, this pairs with the Release in
    /// [`publish`](Self::publish) (or any RMW after it in the release sequence)
    /// so the caller then sees the secret, the activity word and the value the
    /// inserter wrote before it.
    #[inline]
    pub(crate) fn load(&self) -> Word {
        Word(self.0.load(Ordering::Acquire))
    }

    /// The generation of a `FREE` slot the caller owns (see `publish`): the
    /// one it will be published under.
    #[inline]
    pub(crate) fn owned_generation(&self) -> u64 {
        // Relaxed: as in `publish`, the Acquire that made the slot ours
        // ordered this after the store that wrote it.
        let free = Word(self.0.load(Ordering::Relaxed));
        debug_assert!(free.is_free(), "{free:?}");
        free.generation()
    }

    /// `FREE(g)` → `LIVE(g)`, holding `refs` references for the caller;
    /// returns `g`.
    ///
    /// The caller owns the slot exclusively (it popped the slot from the free
    /// list, or took a fresh one), so a plain store suffices: no one else
    /// writes a `FREE` word. Release: publishes the value, secret and activity
    /// written before it to every reader that loads `LIVE(g)` with Acquire.
    #[inline]
    pub(crate) fn publish(&self, refs: u64) -> u64 {
        // Relaxed: the Acquire that made the slot ours (the free-list pop, or
        // the page allocation for a fresh slot) already ordered this after the
        // `free` store that wrote it.
        let free = Word(self.0.load(Ordering::Relaxed));
        debug_assert!(free.is_free() && free.refs() == 0, "{free:?}");
        let generation = free.generation();
        let live = REFS.set(Word::new(LIVE, generation).0, refs);
        self.0.store(live, Ordering::Release);
        generation
    }

    /// `LIVE(g, r)` → `LIVE(g, r + 1)` if the word is still `seen`.
    ///
    /// Acquire on success, for the same reason as [`load`](Self::load): the
    /// reference lets the caller read the value. Acquire on failure too, since
    /// the caller inspects the word it gets back.
    #[inline]
    pub(crate) fn try_acquire(&self, seen: Word) -> Acquire {
        debug_assert!(seen.is_live());
        check_refs(seen);
        match self.0.compare_exchange(
            seen.0,
            seen.0 + REFS.one(),
            Ordering::Acquire,
            Ordering::Acquire,
        ) {
            Ok(_) => Acquire::Acquired,
            Err(now) => Acquire::Changed(Word(now)),
        }
    }

    /// Adds a reference next to one the caller already holds (cloning a
    /// handle). Works in any state: the held reference keeps the slot from
    /// being freed, so the generation cannot move.
    ///
    /// Relaxed, as for `Arc::clone`: the caller's own reference already
    /// ordered its access to the value; the new one is ordered by whatever
    /// hands it to another thread.
    #[inline]
    pub(crate) fn clone_ref(&self) {
        let before = Word(self.0.fetch_add(REFS.one(), Ordering::Relaxed));
        check_refs(before);
    }

    /// `LIVE(g, r)` → `TERMINATED(g, r + extra_ref)` if the word is still
    /// `seen`: the linearization point of every way a session ends.
    ///
    /// `extra_ref` is 1 when the caller holds no reference yet (terminate by
    /// id), so the winner can run cleanup without the value being freed under
    /// it; 0 when it already holds one (the reaper, an expired lookup). When
    /// the caller holds none and nobody else does either (`r == 0`), no
    /// reference is needed: nobody can take one on a `TERMINATED` slot, so
    /// the winner owns the slot outright (`WonAlone`).
    ///
    /// AcqRel on success: Acquire so the winner sees the value it hands to the
    /// close callback; Release so a reader that later loads `TERMINATED` also
    /// sees everything the winner did before it. Acquire on failure, since the
    /// caller inspects the word it gets back.
    #[inline]
    pub(crate) fn try_terminate(&self, seen: Word, extra_ref: bool) -> Terminate {
        debug_assert!(seen.is_live());
        check_refs(seen);
        let alone = extra_ref && seen.refs() == 0;
        let add = if extra_ref && !alone { REFS.one() } else { 0 };
        let next = STATE.set(seen.0, TERMINATED) + add;
        match self
            .0
            .compare_exchange(seen.0, next, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) if alone => Terminate::WonAlone,
            Ok(_) => Terminate::Won,
            Err(now) => Terminate::Changed(Word(now)),
        }
    }

    /// Gives back one reference.
    ///
    /// AcqRel: Release so this holder's reads of the value happen before the
    /// last one out drops it; Acquire so that, if this is the last one out, it
    /// sees every other holder's accesses before dropping the value (the same
    /// pairing as `Arc`'s drop, without a separate fence).
    #[inline]
    pub(crate) fn release(&self) -> Release {
        let before = Word(self.0.fetch_sub(REFS.one(), Ordering::AcqRel));
        debug_assert!(
            before.refs() > 0,
            "released a reference never taken: {before:?}"
        );
        if before.refs() == 1 && before.is_terminated() {
            Release::LastOut
        } else {
            Release::Done
        }
    }

    /// `TERMINATED(g, 0)` → `FREE(g + 1)`: the last access the last one out
    /// makes to the slot, after dropping the value and pushing the slot on
    /// the free list. (A popper that gets the slot before this waits for it:
    /// see [`wait_free`](Self::wait_free).)
    ///
    /// A swap rather than a store, because `orphan` may set its bit
    /// meanwhile, and the caller must learn whether it did. AcqRel: Release
    /// so the popper that sees `FREE(g + 1)` also sees the value dropped;
    /// Acquire so an orphaning registry's writes (`pending`) are visible.
    pub(crate) fn free(&self) -> Freed {
        let before = Word(self.0.swap(self.next_free().0, Ordering::AcqRel));
        if before.is_orphaned() {
            Freed::Orphaned
        } else {
            Freed::Done
        }
    }

    /// [`free`](Self::free) by a caller that knows the slot cannot be
    /// orphaned meanwhile: a plain store instead of a swap, one atomic
    /// read-modify-write fewer per session's end.
    ///
    /// Only `orphan` could change the word now (no refs, not LIVE), and it
    /// runs only as the registry drops, which cannot overlap a call that
    /// borrows the registry; so the word is `TERMINATED(g, 0)`, not orphaned,
    /// until this store. Release: as in `free`, the popper that sees
    /// `FREE(g + 1)` also sees the value dropped.
    #[inline]
    pub(crate) fn free_unorphaned(&self) {
        let next = self.next_free();
        debug_assert!(
            !Word(self.0.load(Ordering::Relaxed)).is_orphaned(),
            "freed by the registry while orphaned"
        );
        self.0.store(next.0, Ordering::Release);
    }

    /// `FREE(g + 1)` for a slot that is `TERMINATED(g, 0)`, which its last
    /// one out is about to free.
    #[inline]
    fn next_free(&self) -> Word {
        // Relaxed: only `orphan` can change the word now (no refs, not LIVE),
        // and only its bit, which `free`'s swap reports (and which
        // `free_unorphaned`'s caller rules out).
        let done = Word(self.0.load(Ordering::Relaxed));
        debug_assert!(done.is_terminated() && done.refs() == 0, "{done:?}");
        Word::new(FREE, (done.generation() + 1) & GENERATION.max())
    }

    /// Waits until a slot just popped from the free list is `FREE`: its last
    /// one out pushes it before its final [`free`](Self::free), so for a few
    /// instructions a popped slot can still read `TERMINATED(g, 0)`.
    ///
    /// Acquire: pairs with `free`'s Release.
    #[inline]
    pub(crate) fn wait_free(&self) {
        while !Word(self.0.load(Ordering::Acquire)).is_free() {
            crate::sync::spin_wait();
        }
    }

    /// Marks the slot as outliving its registry; returns whether the slot
    /// must be counted as pending: it is held (refs > 0), or its last one out
    /// is freeing it right now (`TERMINATED` with no refs). Either way, the
    /// last one out's `free` will see the bit and settle the count.
    ///
    /// AcqRel: this RMW and the last one out's `free` swap are totally ordered
    /// on this word, so exactly one of two things happens: `free` comes first
    /// (the slot is `FREE` here, not counted, and its last one out touches the
    /// storage no more), or this comes first (counted, and `free` sees the
    /// bit).
    pub(crate) fn orphan(&self) -> bool {
        let before = Word(self.0.fetch_or(ORPHAN.one(), Ordering::AcqRel));
        debug_assert!(!before.is_live(), "orphaned a live slot: {before:?}");
        before.is_terminated()
    }
}

/// Aborts on reference-count overflow, like `Arc`: two billion handles to one
/// session can only come from a leak (e.g. `mem::forget` in a loop).
#[inline]
fn check_refs(word: Word) {
    if word.refs() >= REFS.max() - 1 {
        std::process::abort();
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_full_life() {
        let slot = Lifecycle::new();
        assert!(slot.load().is_free());
        let generation = slot.publish(0);
        assert_eq!(generation, 0);
        let live = slot.load();
        assert!(live.is_live() && live.names(0));

        assert_eq!(slot.try_acquire(live), Acquire::Acquired);
        // A stale snapshot loses.
        assert!(matches!(
            slot.try_terminate(live, true),
            Terminate::Changed(_)
        ));
        let held = slot.load();
        assert_eq!(held.refs(), 1);
        // Held by someone: the winner gets a reference of its own.
        assert_eq!(slot.try_terminate(held, true), Terminate::Won);
        let ended = slot.load();
        assert!(ended.is_terminated() && ended.refs() == 2);

        assert_eq!(slot.release(), Release::Done);
        assert_eq!(slot.release(), Release::LastOut);
        assert_eq!(slot.free(), Freed::Done);
        let next = slot.load();
        assert!(next.is_free() && next.generation() == 1);
        assert!(next.has_passed(0));
        assert!(!next.names(0) && !next.names(1));
    }

    #[test]
    fn a_winner_alone_needs_no_reference() {
        let slot = Lifecycle::new();
        let _ = slot.publish(0);
        assert_eq!(slot.try_terminate(slot.load(), true), Terminate::WonAlone);
        let word = slot.load();
        assert!(word.is_terminated() && word.refs() == 0);
        assert!(slot.orphan(), "being freed: counted");
        assert_eq!(slot.free(), Freed::Orphaned);
    }

    #[test]
    fn release_of_a_live_session_never_frees() {
        let slot = Lifecycle::new();
        let _ = slot.publish(0);
        assert_eq!(slot.try_acquire(slot.load()), Acquire::Acquired);
        assert_eq!(slot.release(), Release::Done);
        assert!(slot.load().is_live());
    }

    #[test]
    fn orphan_reaches_the_last_holder() {
        let slot = Lifecycle::new();
        let _ = slot.publish(1);
        assert_eq!(slot.try_terminate(slot.load(), true), Terminate::Won);
        assert_eq!(slot.release(), Release::Done);
        assert!(slot.orphan(), "held: counted");
        assert_eq!(slot.release(), Release::LastOut);
        assert_eq!(slot.free(), Freed::Orphaned);
        assert!(!slot.orphan(), "free: not counted again");
    }

    #[test]
    fn generations_wrap_and_still_compare() {
        let max = GENERATION.max();
        let word = Word::new(LIVE, 0);
        assert!(word.has_passed(max), "gen max is just behind gen 0");
        assert!(!word.has_passed(1), "gen 1 is ahead of gen 0");
        assert!(!word.has_passed(0));
        assert!(Word::new(FREE, 5).has_passed(4));
        assert!(
            !Word::new(FREE, 5).has_passed(5),
            "FREE(5): gen 5 not minted yet"
        );
    }
}

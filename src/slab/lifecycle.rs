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
//!   one out*. It drops the value, and the slot goes back to `FREE(g+1)` and
//!   onto its free list (`storage.rs` says in which order, and who may help).
//! * `orphan` is set on every slot when the registry is dropped, so the last
//!   one out of a slot still held or being freed knows it must also account
//!   for the storage (see `storage.rs`).
//!
//! Every transition is a method returning a `#[must_use]` value that says what
//! the caller must do next, in the style of tokio's task state.

use crate::id::GENERATION as ID_GENERATION;
use crate::pack::Field;
use crate::sync::{AtomicU64, Ordering};
use crate::wrap::Wrap;

const STATE: Field = Field::lowest(2);
const ORPHAN: Field = STATE.then(1);
const REFS: Field = ORPHAN.then(31);
const GENERATION: Field = REFS.then(ID_GENERATION.bits());
const _: () = assert!(GENERATION.end() == 64);

/// The widest generation: the id's whole field.
pub(crate) const GENERATIONS: Wrap = Wrap::bits(GENERATION.bits());
const _: () = assert!(GENERATIONS.max() == GENERATION.max());
const _: () = assert!(GENERATION.bits() == 30, "the documented wrap bound");

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

    /// `TERMINATED` with no references: its last one out is freeing it.
    /// Its secret word may already hold a free-list link.
    pub(crate) fn is_being_freed(self) -> bool {
        self.is_terminated() && self.refs() == 0
    }

    fn is_orphaned(self) -> bool {
        ORPHAN.get(self.0) == 1
    }

    /// Whether the slot holds (or held) the session of generation `generation`,
    /// rather than one that came later or has not been minted yet.
    pub(crate) fn names(self, generation: u64) -> bool {
        self.generation() == generation && !self.is_free()
    }

    /// Whether this word's generation comes right after `generation`: the
    /// slot's previous session (if it had one) was `generation`'s.
    pub(crate) fn follows(self, generation: u64, generations: Wrap) -> bool {
        self.generation() == generations.next(generation)
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

/// What the caller of [`Lifecycle::try_terminate`] holds on the slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holding {
    /// Nothing: a reference is taken for the winner (unless nobody holds
    /// the session, when the winner owns the slot outright).
    Nothing,
    /// A reference the caller may give up: if it is the only one, the CAS
    /// consumes it and the winner owns the slot outright.
    Ours,
    /// A reference the caller keeps (a handle's): the winner borrows it.
    Borrowed,
}

/// What [`Lifecycle::try_terminate`] did.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Terminate {
    /// This call moved the slot from `LIVE` to `TERMINATED`: the caller is the
    /// one winner and runs the session's cleanup, holding a reference (its
    /// own, one the CAS took for it, or the handle's it borrows). It gives
    /// back its own or the taken one afterwards.
    Won,
    /// As `Won`, and nobody else held the session: the slot went straight to
    /// `TERMINATED(g, 0)`, so the caller is also its last one out and, after
    /// the cleanup, frees it itself (no reference to give back).
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
    /// must drop the value and free the slot (`storage::retire`): it stays
    /// `TERMINATED(g, 0)` ("being freed") until then.
    LastOut,
}

/// What [`Lifecycle::finish_free`] found.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Finished {
    /// The slot is `FREE(g + 1)`, freed by this call.
    Done,
    /// As `Done`, but the registry was dropped meanwhile and counted the
    /// slot as pending: the caller settles the storage's account.
    Orphaned,
    /// An inserter that popped the slot freed it first (and may have reused
    /// it since), and counted a debt on the storage for this caller to
    /// settle.
    Helped,
}

/// What [`Lifecycle::try_help`] found.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Help {
    /// The slot was `FREE` already: nothing to help.
    WasFree,
    /// This call freed it on behalf of its last one out.
    Helped,
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
    /// writes a `FREE` word that is off the free list. Release: publishes the
    /// value, secret and activity written before it to every reader that
    /// loads `LIVE(g)` with Acquire.
    #[inline]
    pub(crate) fn publish(&self, refs: u64) -> u64 {
        // Relaxed: the Acquire that made the slot ours (the free-list pop, or
        // the page allocation for a fresh slot) already ordered this after the
        // store that freed it.
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

    /// `LIVE(g, r)` → `TERMINATED(g, r')` if the word is still `seen`: the
    /// linearization point of every way a session ends.
    ///
    /// What the winner holds afterwards depends on what it held before (see
    /// [`Holding`]); it always holds something, so the value cannot be freed
    /// while its cleanup reads it. A caller that holds nothing and finds
    /// nobody else holding the session (`r == 0`) needs no reference: nobody
    /// can take one on a `TERMINATED` slot, so the winner owns it outright
    /// (`WonAlone`); likewise a caller whose own reference is the only one
    /// (`Ours`, `r == 1`) gives it up in the same CAS.
    ///
    /// AcqRel on success: Acquire so the winner sees the value it hands to the
    /// close callback; Release so a reader that later loads `TERMINATED` also
    /// sees everything the winner did before it. Acquire on failure, since the
    /// caller inspects the word it gets back.
    #[inline]
    pub(crate) fn try_terminate(&self, seen: Word, holding: Holding) -> Terminate {
        debug_assert!(seen.is_live());
        check_refs(seen);
        let ended = STATE.set(seen.0, TERMINATED);
        let (next, alone) = match holding {
            Holding::Nothing if seen.refs() == 0 => (ended, true),
            Holding::Nothing => (ended + REFS.one(), false),
            Holding::Ours if seen.refs() == 1 => (ended - REFS.one(), true),
            Holding::Ours | Holding::Borrowed => (ended, false),
        };
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

    /// `TERMINATED(g, 0)` → `FREE(g + 1)` with a store, by a last one out
    /// that is the registry itself, inside one of its `&self` methods: it
    /// frees the slot *before* putting it on its free list, so no inserter
    /// can ever pop it half-freed.
    ///
    /// Only `orphan` and helpers could change the word meanwhile: `orphan`
    /// runs only as the registry drops, which cannot overlap a call that
    /// borrows it, and helpers only touch slots that are on a free list,
    /// which this one is not yet. Release: the popper that later takes it
    /// (through the free list's Release push and Acquire pop) sees the value
    /// dropped and the word `FREE(g + 1)`.
    #[inline]
    pub(crate) fn free_unlisted(&self, generations: Wrap) {
        // Relaxed: nothing else writes the word now (see above).
        let done = Word(self.0.load(Ordering::Relaxed));
        debug_assert!(done.is_being_freed() && !done.is_orphaned(), "{done:?}");
        let free = Word::new(FREE, generations.next(done.generation()));
        self.0.store(free.0, Ordering::Release);
    }

    /// `TERMINATED(g, 0)` → `FREE(g + 1)` by a last one out that is a
    /// handle, after it has put the slot on its free list: its last access
    /// to the slot. An inserter may have popped the slot meanwhile and freed
    /// it on the handle's behalf ([`try_help`](Self::try_help)); then the word
    /// is no longer `TERMINATED(g, 0)` and this call only reports it.
    ///
    /// A CAS rather than a store, because `orphan` may set its bit
    /// meanwhile and a helper may free the slot: the caller must learn
    /// which. AcqRel: Release so the popper that sees `FREE(g + 1)` also
    /// sees the value dropped; Acquire so an orphaning registry's writes
    /// (`pending`), or a helper's debt, are visible.
    pub(crate) fn finish_free(&self, generation: u64, generations: Wrap) -> Finished {
        let mut word = Word(self.0.load(Ordering::Acquire));
        loop {
            if !(word.is_being_freed() && word.generation() == generation) {
                // Helped: the helper counted a debt before its CAS, and
                // that CAS happens before this load (Acquire).
                return Finished::Helped;
            }
            let free = Word::new(FREE, generations.next(generation));
            match self
                .0
                .compare_exchange(word.0, free.0, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if word.is_orphaned() => return Finished::Orphaned,
                Ok(_) => return Finished::Done,
                Err(now) => word = Word(now),
            }
        }
    }

    /// For an inserter that has just popped this slot from a free list:
    /// makes sure it is `FREE`, freeing it on behalf of its last one out if
    /// that one pushed it and has not yet made its final
    /// [`finish_free`](Self::finish_free). This is what keeps insert
    /// lock-free: it never waits for another thread.
    ///
    /// `before_helping` runs just before the CAS that frees the slot (the
    /// storage counts a debt there, which the last one out settles when it
    /// finds it was helped); `after_failed_help` if that CAS lost to the
    /// last one out after all (the debt is taken back).
    ///
    /// Acquire on the load and the CAS: pairs with the last one out's
    /// Release, so the inserter sees the value dropped. Release on the CAS:
    /// the last one out that reads the helped word also sees the debt.
    #[inline]
    pub(crate) fn try_help(
        &self,
        generations: Wrap,
        before_helping: impl FnOnce(),
        after_failed_help: impl FnOnce(),
    ) -> Help {
        let word = Word(self.0.load(Ordering::Acquire));
        if word.is_free() {
            return Help::WasFree;
        }
        self.help(word, generations, before_helping, after_failed_help)
    }

    #[cold]
    #[inline(never)]
    fn help(
        &self,
        word: Word,
        generations: Wrap,
        before_helping: impl FnOnce(),
        after_failed_help: impl FnOnce(),
    ) -> Help {
        // Popped, so pushed by its last one out while `TERMINATED(g, 0)`;
        // the registry is alive (the caller is inserting), so not orphaned.
        debug_assert!(word.is_being_freed() && !word.is_orphaned(), "{word:?}");
        before_helping();
        let free = Word::new(FREE, generations.next(word.generation()));
        match self
            .0
            .compare_exchange(word.0, free.0, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Help::Helped,
            Err(now) => {
                // Only the last one out's own `finish_free` can have got
                // there first.
                debug_assert_eq!(Word(now), free, "{word:?} became {:?}", Word(now));
                after_failed_help();
                Help::WasFree
            }
        }
    }

    /// Marks the slot as outliving its registry; returns whether the slot
    /// must be counted as pending: it is held (refs > 0), or its last one out
    /// is freeing it right now (`TERMINATED` with no refs). Either way, the
    /// last one out's `finish_free` will see the bit and settle the count.
    ///
    /// AcqRel: this RMW and the last one out's `finish_free` CAS are totally
    /// ordered on this word, so exactly one of two things happens: the free
    /// comes first (the slot is `FREE` here, not counted, and its last one out
    /// touches the storage no more), or this comes first (counted, and the
    /// free sees the bit).
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

    const GENS: Wrap = GENERATIONS;

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
            slot.try_terminate(live, Holding::Nothing),
            Terminate::Changed(_)
        ));
        let held = slot.load();
        assert_eq!(held.refs(), 1);
        // Held by someone: the winner gets a reference of its own.
        assert_eq!(slot.try_terminate(held, Holding::Nothing), Terminate::Won);
        let ended = slot.load();
        assert!(ended.is_terminated() && ended.refs() == 2);

        assert_eq!(slot.release(), Release::Done);
        assert_eq!(slot.release(), Release::LastOut);
        assert_eq!(slot.finish_free(0, GENS), Finished::Done);
        let next = slot.load();
        assert!(next.is_free() && next.generation() == 1);
        assert!(next.follows(0, GENS));
        assert!(!next.names(0) && !next.names(1));
    }

    #[test]
    fn a_winner_alone_needs_no_reference() {
        let slot = Lifecycle::new();
        let _ = slot.publish(0);
        assert_eq!(
            slot.try_terminate(slot.load(), Holding::Nothing),
            Terminate::WonAlone
        );
        let word = slot.load();
        assert!(word.is_being_freed());
        assert!(slot.orphan(), "being freed: counted");
        assert_eq!(slot.finish_free(0, GENS), Finished::Orphaned);
    }

    #[test]
    fn a_winner_gives_up_its_only_reference_in_the_cas() {
        let slot = Lifecycle::new();
        let _ = slot.publish(1);
        assert_eq!(
            slot.try_terminate(slot.load(), Holding::Ours),
            Terminate::WonAlone
        );
        assert!(slot.load().is_being_freed());
        slot.free_unlisted(GENS);
        assert!(slot.load().is_free() && slot.load().generation() == 1);
    }

    #[test]
    fn a_borrowed_reference_stays_with_its_handle() {
        let slot = Lifecycle::new();
        let _ = slot.publish(1);
        assert_eq!(
            slot.try_terminate(slot.load(), Holding::Borrowed),
            Terminate::Won
        );
        assert_eq!(slot.load().refs(), 1);
        assert_eq!(slot.release(), Release::LastOut);
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
        assert_eq!(
            slot.try_terminate(slot.load(), Holding::Nothing),
            Terminate::Won
        );
        assert_eq!(slot.release(), Release::Done);
        assert!(slot.orphan(), "held: counted");
        assert_eq!(slot.release(), Release::LastOut);
        assert_eq!(slot.finish_free(0, GENS), Finished::Orphaned);
        assert!(!slot.orphan(), "free: not counted again");
    }

    #[test]
    fn a_popper_frees_a_slot_its_last_one_out_has_not_finished() {
        let slot = Lifecycle::new();
        let _ = slot.publish(0);
        assert_eq!(
            slot.try_terminate(slot.load(), Holding::Nothing),
            Terminate::WonAlone
        );
        // The last one out has pushed the slot; a popper takes it first.
        let mut debts = 0;
        let help = slot.try_help(GENS, || debts += 1, || unreachable!());
        assert_eq!(help, Help::Helped);
        assert_eq!(debts, 1);
        assert!(slot.load().is_free() && slot.load().generation() == 1);
        // The popper reuses the slot at once; the last one out then learns
        // it was helped, and must not touch the new session.
        let _ = slot.publish(0);
        assert_eq!(slot.finish_free(0, GENS), Finished::Helped);
        assert!(slot.load().is_live() && slot.load().generation() == 1);
        // A popper that finds the slot free has nothing to do.
        let other = Lifecycle::new();
        assert_eq!(
            other.try_help(GENS, || unreachable!(), || unreachable!()),
            Help::WasFree
        );
    }

    #[test]
    fn generations_wrap_and_still_compare() {
        let max = GENERATION.max();
        let word = Word::new(LIVE, 0);
        assert!(word.follows(max, GENS), "gen 0 comes right after gen max");
        assert!(!word.follows(1, GENS), "gen 1 is ahead of gen 0");
        assert!(!word.follows(0, GENS));
        assert!(Word::new(FREE, 5).follows(4, GENS));
        assert!(!Word::new(FREE, 5).follows(3, GENS), "two behind");
        assert!(
            !Word::new(FREE, 5).follows(5, GENS),
            "FREE(5): gen 5 not minted yet"
        );
        // A narrowed generation wraps within the field.
        let two = Wrap::bits(2);
        let slot = Lifecycle::new();
        for expected in [0, 1, 2, 3, 0] {
            assert_eq!(slot.publish(0), expected);
            assert_eq!(
                slot.try_terminate(slot.load(), Holding::Nothing),
                Terminate::WonAlone
            );
            slot.free_unlisted(two);
        }
    }
}

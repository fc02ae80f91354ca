//! Sweeps: `reap_idle` (a whole pass, or a budgeted step of one) and
//! `terminate_all` (which dropping the registry runs too). Each session ends
//! through the same CAS as `terminate`, and a panicking close callback or
//! value never stops a sweep from ending the sessions after it.
//!
//! A sweep visits the page table page by page, and skips a page whose
//! occupancy (`slab/occupancy.rs`) shows nothing live since the last sweep saw
//! it empty: a pass costs one look per page plus the slots of the pages
//! that may hold a session, not every slot ever used. A step stops after a
//! budget of slots and resumes where the last step stopped (a cursor shared
//! by whoever steps), so that no step costs more than its budget, whatever
//! the high-water mark.

use crate::activity::Expire;
use crate::id::SessionId;
use crate::panic::{resume, Caught};
use crate::reason::Reason;
use crate::registry::Registry;
use crate::slab::lifecycle::{Acquire, Holding, Terminate};
use crate::slab::slot::Slot;
use crate::sync::Ordering;
use crate::terminate::Hold;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The budget of one step that the HTTP layer's reaper takes (in slots; a
/// page skipped counts as one): about a tenth of a millisecond of sweeping.
pub const SWEEP_BUDGET: usize = 8192;

/// What one step of a budgeted sweep did ([`Registry::reap_idle_step`]).
#[must_use]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepStep {
    /// How many sessions (tasks, handles) this step ended.
    pub ended: usize,
    /// What the step cost: the slots it looked at, and one for each page it
    /// skipped (nothing live there since a sweep last saw it empty). At
    /// most the budget plus one page's slots (the page that crosses the
    /// budget is finished): up to 1,023 more.
    pub looked: usize,
    /// Whether this step finished a pass: every page has been visited since
    /// the pass began (by this step and the steps before it, whoever took
    /// them). A reaper that steps until then has swept the whole registry.
    pub pass_done: bool,
}

/// What a reaping sweep compares each session with.
struct Reap {
    /// The sweep's reading of the clock, taken before it looks at any slot.
    now: u64,
    timeout: u64,
}

impl<S> Registry<S> {
    /// Ends every session that is idle now (nothing in flight, no activity
    /// for the idle timeout) with [`Reason::IdleTimeout`]; returns how many
    /// this call ended. Does nothing without an idle timeout.
    ///
    /// Run it periodically (the HTTP layer runs it on a timer): with the
    /// system clock it is also what starts idle time. Neither an insert nor
    /// a request's end reads the clock, so a session's idle time starts at
    /// the first sweep after its last activity (or at a
    /// [`touch`](crate::Session::touch)), and it ends between its timeout and
    /// its timeout plus two periods after that activity, never earlier. Each
    /// session ends through the same CAS as [`terminate`](Registry::terminate).
    ///
    /// One pass over every page, skipping the pages with nothing live since
    /// a sweep last saw them empty: it costs a look at each page and the
    /// slots of the others. For a bound on one call, whatever the number of
    /// slots ever used, see [`reap_idle_step`](Registry::reap_idle_step).
    ///
    /// If a close callback (or a value's `Drop`) panics, the sweep goes on
    /// through every other slot, and then the first panic propagates.
    pub fn reap_idle(&self) -> usize {
        let Some(reap) = self.reap() else {
            return 0;
        };
        let mut ended = 0;
        let mut caught: Caught = None;
        for page in 0..self.storage().shards.pages() {
            let _ = self.reap_page(page, &reap, &mut ended, &mut caught);
        }
        resume(caught);
        ended
    }

    /// One step of [`reap_idle`](Registry::reap_idle): the pages from where
    /// the last step stopped, until `budget` slots have been looked at (a
    /// page skipped counts as one; the page that crosses the budget is
    /// finished), or the end of the page table. Steps resume in turn (by
    /// any thread); one that reaches the end of the table reports
    /// [`pass_done`](SweepStep::pass_done). A reaper that wants a bound on
    /// each of its ticks steps until then, yielding between steps.
    ///
    /// ```
    /// use std::time::Duration;
    /// use sessionreg::{ManualClock, Registry};
    ///
    /// let clock = ManualClock::new();
    /// let registry = Registry::builder()
    ///     .idle_timeout(Duration::from_secs(60))
    ///     .manual_clock(&clock)
    ///     .build()
    ///     .unwrap();
    /// registry.insert(()).unwrap();
    /// clock.advance(Duration::from_secs(60));
    /// let mut ended = 0;
    /// loop {
    ///     let step = registry.reap_idle_step(sessionreg::SWEEP_BUDGET);
    ///     ended += step.ended;
    ///     if step.pass_done {
    ///         break;
    ///     }
    /// }
    /// assert_eq!(ended, 1);
    /// ```
    pub fn reap_idle_step(&self, budget: usize) -> SweepStep {
        let Some(reap) = self.reap() else {
            return SweepStep {
                ended: 0,
                looked: 0,
                pass_done: true,
            };
        };
        let storage = self.storage();
        let pages = storage.shards.pages();
        let mut step = SweepStep::default();
        let mut caught: Caught = None;
        // The cursor counts the pages steps have visited (it never wraps:
        // the page is the count modulo the pages). A step moves it on only
        // from where it found it: steps that race may look at a page twice,
        // never skip one, since the cursor only moves over pages its mover
        // has looked at. Relaxed: it only says where to go on; each page's
        // own words order what a sweep sees of it.
        let start = storage.sweep_cursor.load(Ordering::Relaxed);
        let mut page = (start % pages as u64) as usize;
        let mut visited = 0;
        while step.looked < budget.max(1) && !step.pass_done {
            step.looked += self.reap_page(page, &reap, &mut step.ended, &mut caught);
            visited += 1;
            page += 1;
            if page == pages {
                page = 0;
                step.pass_done = true;
            }
        }
        let _ = storage.sweep_cursor.compare_exchange(
            start,
            start + visited,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        resume(caught);
        step
    }

    /// Ends every live session with `reason` (for shutdown: see also
    /// [`Reason::Shutdown`]); returns how many this call ended. One pass
    /// over every page, skipping those with nothing live.
    ///
    /// Sessions inserted while it runs may survive it: stop inserting first.
    /// If a close callback (or a value's `Drop`) panics, every other session
    /// is still ended, and then the first panic propagates.
    pub fn terminate_all(&self, reason: Reason) -> usize {
        let (ended, caught) = self.sweep_live(reason);
        resume(caught);
        ended
    }

    /// What a reaping sweep compares with: the time now and the timeout;
    /// `None` without an idle timeout.
    fn reap(&self) -> Option<Reap> {
        let clock = &self.storage().clock;
        let timeout = clock.timeout_ms()?;
        Some(Reap {
            now: clock.now_ms(),
            timeout,
        })
    }

    /// Reaps page `page`: ends its idle sessions, makes its rough stamps
    /// exact, records what is still live. Returns what it cost: the slots
    /// looked at, or one for a page skipped.
    fn reap_page(&self, page: usize, reap: &Reap, ended: &mut usize, caught: &mut Caught) -> usize {
        let shards = &self.storage().shards;
        let occupancy = shards.occupancy(page);
        let Some(seen) = occupancy.look() else {
            return 1;
        };
        let (mut looked, mut live) = (0, 0);
        for (index, slot) in shards.page_slots(page) {
            looked += 1;
            *ended += usize::from(self.reap_slot(index, slot, reap, caught));
            live += u64::from(slot.lifecycle.load().is_live());
        }
        occupancy.record(seen, live);
        looked.max(1)
    }

    /// Reaps one slot; returns whether this call ended its session.
    fn reap_slot(&self, index: u64, slot: &Slot<S>, reap: &Reap, caught: &mut Caught) -> bool {
        let mut word = slot.lifecycle.load();
        if word.is_live() && slot.activity.is_rough() {
            // Its last activity (an insert, a request's end) read no clock:
            // the session is at least as young as a reading taken after
            // claiming the rough stamp (`activity.rs`). Its idle time counts
            // from there (never early; late by up to one sweep). Held
            // meanwhile, so that its slot is not reused under the stamp; if
            // the word moved, the next sweep looks again.
            if slot.lifecycle.try_acquire(word) == Acquire::Acquired {
                let clock = &self.storage().clock;
                slot.activity.make_exact(|| clock.now_ms());
                self.release_caught(index, slot, caught);
            }
            return false;
        }
        // A cheap look first: most sessions are busy or recent.
        while word.is_live() && slot.activity.looks_idle(reap.now, reap.timeout) {
            match slot.lifecycle.try_acquire(word) {
                Acquire::Changed(now) => word = now,
                Acquire::Acquired => {
                    // The reference pins the session: this is its id.
                    let id = self.storage().id_of(index, slot, word);
                    if slot.activity.try_expire(reap.now, reap.timeout) == Expire::Expired {
                        return self.end_caught(slot, id, caught);
                    }
                    // Active after all. If another thread ended it
                    // meanwhile, this may be its last one out, and drop the
                    // value: its panic must not stop the sweep.
                    self.release_caught(index, slot, caught);
                    return false;
                }
            }
        }
        false
    }

    /// [`end_held`](Registry::end_held) with `IdleTimeout`, keeping the first
    /// panic of the cleanup in `caught`; returns whether it ended the session.
    fn end_caught(&self, slot: &Slot<S>, id: SessionId, caught: &mut Caught) -> bool {
        let mut word = slot.lifecycle.load();
        while word.is_live() {
            let hold = match slot.lifecycle.try_terminate(word, Holding::Ours) {
                Terminate::Won => Hold::Ref,
                Terminate::WonAlone => Hold::Alone,
                Terminate::Changed(now) => {
                    word = now;
                    continue;
                }
            };
            let finish = || self.finish(slot, id, Reason::IdleTimeout, hold);
            if let Err(panic) = catch_unwind(AssertUnwindSafe(finish)) {
                caught.get_or_insert(panic);
            }
            return true;
        }
        // Ended meanwhile by another path; letting go may drop the value.
        self.release_caught(id.index(), slot, caught);
        false
    }

    /// Gives back a reference this sweep took on `slot`, the slot at
    /// `index`, keeping the panic of a value's `Drop` (if this is its last
    /// one out: another thread ended the session meanwhile) in `caught`.
    fn release_caught(&self, index: u64, slot: &Slot<S>, caught: &mut Caught) {
        let release = || self.let_go_at(index, slot);
        if let Err(panic) = catch_unwind(AssertUnwindSafe(release)) {
            caught.get_or_insert(panic);
        }
    }

    /// [`terminate_all`](Registry::terminate_all), handing back the first
    /// panic it caught instead of raising it (for `Drop`).
    pub(crate) fn sweep_live(&self, reason: Reason) -> (usize, Caught) {
        let mut ended = 0;
        let mut caught: Caught = None;
        let shards = &self.storage().shards;
        for page in 0..shards.pages() {
            let occupancy = shards.occupancy(page);
            let Some(seen) = occupancy.look() else {
                continue;
            };
            let mut live = 0;
            for (index, slot) in shards.page_slots(page) {
                ended += usize::from(self.end_slot(index, slot, reason, &mut caught));
                live += u64::from(slot.lifecycle.load().is_live());
            }
            occupancy.record(seen, live);
        }
        (ended, caught)
    }

    /// Ends whatever session is live in `slot`, the slot at `index`, with
    /// `reason`; returns whether this call ended one.
    fn end_slot(&self, index: u64, slot: &Slot<S>, reason: Reason, caught: &mut Caught) -> bool {
        let mut word = slot.lifecycle.load();
        while word.is_live() {
            // Whatever session is live in the slot is one to end, so this
            // needs no reference first: the CAS takes one if anybody else
            // holds the session.
            let hold = match slot.lifecycle.try_terminate(word, Holding::Nothing) {
                Terminate::Won => Hold::Ref,
                Terminate::WonAlone => Hold::Alone,
                Terminate::Changed(now) => {
                    word = now;
                    continue;
                }
            };
            let id = self.storage().id_of(index, slot, word);
            let finish = || self.finish(slot, id, reason, hold);
            if let Err(panic) = catch_unwind(AssertUnwindSafe(finish)) {
                caught.get_or_insert(panic);
            }
            return true;
        }
        false
    }
}

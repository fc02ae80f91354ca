//! Enumerating the live sessions: [`Registry::live`].

use crate::registry::Registry;
use crate::session::Session;
use crate::slab::lifecycle::Acquire;

impl<S> Registry<S> {
    /// A handle to every session that is live when the walk reaches its
    /// slot, in slot order: for an operator's listing, or to reach each
    /// session's value (an adapter's per-session handles, say).
    ///
    /// The walk takes no lock and stops nobody: a session created or ended
    /// while it runs may or may not be seen, and a handle it yields may
    /// already be [terminated](Session::is_terminated) when it is looked at.
    /// Each handle holds its session's slot, as any [`Session`] does, until
    /// it is dropped. Nothing is touched, expired or counted: a session past
    /// its idle timeout that the reaper has not ended yet is listed.
    ///
    /// ```
    /// use sessionreg::{Reason, Registry};
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let a = registry.insert("a").unwrap();
    /// let b = registry.insert("b").unwrap();
    /// registry.terminate(&a, Reason::Deleted);
    /// let live: Vec<_> = registry.live().map(|s| (s.id(), *s)).collect();
    /// assert_eq!(live, [(b, "b")]);
    /// ```
    pub fn live(&self) -> impl Iterator<Item = Session<S>> + '_ {
        self.storage()
            .shards
            .used_slots()
            .filter_map(move |(index, slot)| {
                let mut word = slot.lifecycle.load();
                while word.is_live() {
                    match slot.lifecycle.try_acquire(word) {
                        Acquire::Changed(now) => word = now,
                        Acquire::Acquired => {
                            // SAFETY: `try_acquire` took a reference on the
                            // slot at `index` for us; the handle owns it.
                            return Some(unsafe { Session::from_held(self.storage, index) });
                        }
                    }
                }
                None
            })
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use crate::{Reason, Registry};

    #[test]
    fn lists_the_live_sessions_and_holds_each_until_dropped() {
        let registry = Registry::builder().capacity(64).build().unwrap();
        let ids: Vec<_> = (0..10).map(|i| registry.insert(i).unwrap()).collect();
        for id in ids.iter().step_by(2) {
            assert!(registry.terminate(id, Reason::Deleted).is_won());
        }
        let live: Vec<_> = registry.live().collect();
        let mut seen: Vec<_> = live.iter().map(|s| (s.id(), **s)).collect();
        seen.sort_by_key(|(_, value)| *value);
        let expected: Vec<_> = ids.iter().copied().zip(0..10).skip(1).step_by(2).collect();
        assert_eq!(seen, expected);
        // A listed session ended meanwhile keeps its value for its holder,
        // and its slot is not reused while the handle lives.
        let first = &live[0];
        assert!(registry.terminate(&first.id(), Reason::Deleted).is_won());
        assert!(first.is_terminated());
        assert_eq!(registry.live().count(), 4);
        let stats = registry.stats();
        assert_eq!(stats.live, 4);
        drop(live);
        assert_eq!(registry.live().count(), 4);
    }

    #[test]
    fn an_empty_registry_lists_nothing() {
        let registry: Registry<()> = Registry::builder().build().unwrap();
        assert_eq!(registry.live().count(), 0);
    }
}

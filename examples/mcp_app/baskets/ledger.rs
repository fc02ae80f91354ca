//! The ledger: which baskets each owner made, oldest first, for
//! `resources/list`.
//!
//! An entry is opened before its basket is minted and closed when the
//! basket is freed: the basket's value holds the [`Entry`], whose drop
//! closes it (the registry drops a value once, by the last one out: when
//! the basket has ended, by expiry, and no call holds it any more). So an
//! expired basket leaves the ledger whether or not its owner ever lists,
//! an owner with no basket left has no account, and the ledger never holds
//! more entries than the store holds baskets.

use super::Owner;
use sessionreg::SessionId;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// The owners' accounts; see the [module docs](self).
#[derive(Default)]
pub struct Ledger {
    books: Mutex<Books>,
}

#[derive(Default)]
struct Books {
    owners: HashMap<Owner, Account>,
    /// Entries open, all owners together.
    entries: usize,
    /// The number of the next entry (entries list in this order).
    next: u64,
}

/// One owner's baskets: each entry's number, and its basket's id once it
/// is minted.
#[derive(Default)]
struct Account {
    baskets: BTreeMap<u64, Option<SessionId>>,
}

/// A basket's place in the ledger, closed when this is dropped.
pub struct Entry {
    ledger: Arc<Ledger>,
    owner: Owner,
    number: u64,
}

impl Ledger {
    fn books(&self) -> MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens an entry for a basket of `owner`'s about to be minted.
    pub fn open(self: &Arc<Self>, owner: &Owner) -> Entry {
        let mut books = self.books();
        let number = books.next;
        books.next += 1;
        books.entries += 1;
        let account = books.owners.entry(owner.clone()).or_default();
        account.baskets.insert(number, None);
        Entry {
            ledger: Arc::clone(self),
            owner: owner.clone(),
            number,
        }
    }

    /// Writes the id of the basket minted for `entry`'s number (nothing if
    /// the basket has been freed already).
    pub fn minted(&self, owner: &Owner, number: u64, id: SessionId) {
        let mut books = self.books();
        let entry = books
            .owners
            .get_mut(owner)
            .and_then(|account| account.baskets.get_mut(&number));
        if let Some(entry) = entry {
            *entry = Some(id);
        }
    }

    /// The ids of `owner`'s baskets, oldest first (some may have ended and
    /// not been freed yet: the caller resolves them).
    pub fn listed(&self, owner: &Owner) -> Vec<SessionId> {
        let books = self.books();
        books.owners.get(owner).map_or_else(Vec::new, |account| {
            account.baskets.values().flatten().copied().collect()
        })
    }

    /// Entries open, and owners with an account.
    pub fn counts(&self) -> (usize, usize) {
        let books = self.books();
        (books.entries, books.owners.len())
    }

    fn close(&self, owner: &Owner, number: u64) {
        let mut books = self.books();
        let Some(account) = books.owners.get_mut(owner) else {
            return;
        };
        if account.baskets.remove(&number).is_none() {
            return;
        }
        if account.baskets.is_empty() {
            books.owners.remove(owner);
        }
        books.entries -= 1;
    }
}

impl Entry {
    /// The entry's number, for [`Ledger::minted`].
    pub fn number(&self) -> u64 {
        self.number
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.ledger.close(&self.owner, self.number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sessionreg::http::Principal;

    #[test]
    fn an_owner_whose_entries_are_all_closed_has_no_account() {
        let ledger = Arc::new(Ledger::default());
        let ada = Some(Principal::new("ada"));
        let id = SessionId::from_bytes([7; 24]);
        let first = ledger.open(&ada);
        let second = ledger.open(&None);
        ledger.minted(&ada, first.number(), id);
        assert_eq!(ledger.listed(&ada), [id]);
        assert_eq!(ledger.listed(&None), [], "not minted yet: not listed");
        assert_eq!(ledger.counts(), (2, 2));
        drop(first);
        ledger.minted(&ada, 0, id);
        assert_eq!(
            ledger.listed(&ada),
            [],
            "minted after it was freed: nothing"
        );
        drop(second);
        assert_eq!(ledger.counts(), (0, 0));
    }
}

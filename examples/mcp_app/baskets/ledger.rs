//! The ledger: which baskets each owner made, oldest first, for
//! `resources/list`; and the bytes their items hold, per owner and in all,
//! within their bounds.
//!
//! An entry is opened before its basket is minted and closed when the
//! basket is freed: the basket's value holds the [`Entry`], whose drop
//! closes it and gives its bytes back (the registry drops a value once, by
//! the last one out: when the basket has ended, by expiry, and no call
//! holds it any more). So an expired basket leaves the ledger whether or
//! not its owner ever lists, an owner with no basket left has no account,
//! and the ledger never holds more entries than the store holds baskets.

use super::Owner;
use sessionreg::SessionId;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// The owners' accounts; see the [module docs](self).
pub struct Ledger {
    books: Mutex<Books>,
    /// Bytes all items may hold.
    bytes_max: usize,
    /// Bytes one principal's items may hold (anonymous callers: only
    /// `bytes_max`).
    bytes_per_principal: usize,
}

#[derive(Default)]
struct Books {
    owners: HashMap<Owner, Account>,
    /// Entries open, all owners together.
    entries: usize,
    /// Bytes charged, all owners together.
    bytes: usize,
    /// The number of the next entry (entries list in this order).
    next: u64,
}

/// One owner's baskets (each entry's number, and its basket's id once it
/// is minted), and the bytes charged to them.
#[derive(Default)]
struct Account {
    baskets: BTreeMap<u64, Option<SessionId>>,
    bytes: usize,
}

/// A basket's place in the ledger, and the bytes charged to it: closed,
/// and the bytes given back, when this is dropped.
pub struct Entry {
    ledger: Arc<Ledger>,
    owner: Owner,
    number: u64,
    bytes: usize,
}

/// Why [`Entry::charge`] charged nothing.
#[derive(Debug, PartialEq, Eq)]
pub enum Over {
    /// The principal's items hold `held` bytes, and `limit` is theirs.
    Share {
        /// Bytes the principal's items hold.
        held: usize,
        /// Bytes they may hold.
        limit: usize,
    },
    /// All items together hold as many bytes as they may.
    Total,
}

/// What the ledger holds, for `/metrics`.
#[derive(Debug, PartialEq, Eq)]
pub struct Held {
    /// Entries open.
    pub entries: usize,
    /// Owners with an account.
    pub owners: usize,
    /// Bytes charged.
    pub bytes: usize,
}

impl Ledger {
    /// An empty ledger with these byte bounds.
    pub fn new(bytes_max: usize, bytes_per_principal: usize) -> Ledger {
        Ledger {
            books: Mutex::default(),
            bytes_max,
            bytes_per_principal,
        }
    }

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
            bytes: 0,
        }
    }

    /// Writes the id of the basket minted for `owner`'s entry `number`
    /// (nothing if the basket has been freed already).
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

    /// What the ledger holds.
    pub fn held(&self) -> Held {
        let books = self.books();
        Held {
            entries: books.entries,
            owners: books.owners.len(),
            bytes: books.bytes,
        }
    }

    fn charge(&self, owner: &Owner, bytes: usize) -> Result<(), Over> {
        let mut books = self.books();
        if books.bytes + bytes > self.bytes_max {
            return Err(Over::Total);
        }
        let Some(account) = books.owners.get_mut(owner) else {
            // No entry of the owner's is open: no basket to charge.
            return Err(Over::Total);
        };
        if owner.is_some() && account.bytes + bytes > self.bytes_per_principal {
            return Err(Over::Share {
                held: account.bytes,
                limit: self.bytes_per_principal,
            });
        }
        account.bytes += bytes;
        books.bytes += bytes;
        Ok(())
    }

    fn close(&self, owner: &Owner, number: u64, bytes: usize) {
        let mut books = self.books();
        let Some(account) = books.owners.get_mut(owner) else {
            return;
        };
        if account.baskets.remove(&number).is_none() {
            return;
        }
        account.bytes -= bytes;
        if account.baskets.is_empty() {
            books.owners.remove(owner);
        }
        books.entries -= 1;
        books.bytes -= bytes;
    }
}

impl Entry {
    /// The entry's number, for [`Ledger::minted`].
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Charges `bytes` more to this basket, if its owner's bound and the
    /// bound of all leave room for them; given back when this is dropped.
    pub fn charge(&mut self, bytes: usize) -> Result<(), Over> {
        self.ledger.charge(&self.owner, bytes)?;
        self.bytes += bytes;
        Ok(())
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.ledger.close(&self.owner, self.number, self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sessionreg::http::Principal;

    #[test]
    fn an_owner_whose_entries_are_all_closed_has_no_account() {
        let ledger = Arc::new(Ledger::new(100, 10));
        let ada = Some(Principal::new("ada"));
        let id = SessionId::from_bytes([7; 24]);
        let first = ledger.open(&ada);
        let second = ledger.open(&None);
        ledger.minted(&ada, first.number(), id);
        assert_eq!(ledger.listed(&ada), [id]);
        assert_eq!(ledger.listed(&None), [], "not minted yet: not listed");
        assert_eq!(ledger.held().entries, 2);
        drop(first);
        ledger.minted(&ada, 0, id);
        assert_eq!(
            ledger.listed(&ada),
            [],
            "minted after it was freed: nothing"
        );
        drop(second);
        let empty = Held {
            entries: 0,
            owners: 0,
            bytes: 0,
        };
        assert_eq!(ledger.held(), empty);
    }

    #[test]
    fn bytes_are_bounded_per_principal_and_in_all_and_given_back_on_close() {
        let ledger = Arc::new(Ledger::new(25, 10));
        let (ada, bob) = (Some(Principal::new("ada")), Some(Principal::new("bob")));
        let mut a = ledger.open(&ada);
        let mut a2 = ledger.open(&ada);
        a.charge(6).unwrap();
        assert_eq!(
            a2.charge(5),
            Err(Over::Share { held: 6, limit: 10 }),
            "one principal's baskets together"
        );
        a2.charge(4).unwrap();
        let mut b = ledger.open(&bob);
        b.charge(10).unwrap();
        let mut anonymous = ledger.open(&None);
        anonymous.charge(5).unwrap();
        assert_eq!(anonymous.charge(1), Err(Over::Total), "25 of 25");
        drop(a);
        assert_eq!(ledger.held().bytes, 19);
        anonymous.charge(6).unwrap();
        drop((a2, b, anonymous));
        assert_eq!(ledger.held().bytes, 0);
    }
}

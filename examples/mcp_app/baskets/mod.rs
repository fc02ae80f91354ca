//! The baskets: handles (SEP-2567) that keep state across calls without a
//! session, each bound to the principal that made it (anonymous callers
//! share the anonymous owner).
//!
//! What a client can make the server keep here is bounded: the baskets in
//! all (`--max-baskets`), and each principal's share of them
//! (`--baskets-per-principal`), whatever authenticated it (a static
//! token, an OAuth access token, a middleware of one's own). Anonymous
//! callers all count as one owner, so a share would let a few of them
//! lock every other out: they have the store's capacity alone. The items'
//! bytes are bounded the same way: in all (`--basket-bytes`) and per
//! principal (`--basket-bytes-per-principal`), each item at most
//! [`ITEM_BYTES`](flags::ITEM_BYTES) long and a basket at most
//! [`ITEMS_PER_BASKET`](flags::ITEMS_PER_BASKET) items. A basket that ends
//! leaves every structure that indexes it when it is freed: its owner's
//! place under the share, its entry and its bytes in the
//! [ledger](ledger).

pub mod flags;
pub mod ledger;

use flags::{BasketFlags, ITEMS_PER_BASKET, ITEM_BYTES, ITEM_OVERHEAD};
use ledger::{Entry, Held, Ledger, Over};
use sessionreg::handles::{Handles, Resolved};
use sessionreg::http::Principal;
use sessionreg::shares::{Share, ShareFull, Shares};
use sessionreg::SessionId;
use std::sync::{Arc, Mutex, MutexGuard};

/// Who a basket belongs to: the principal of the request that made it, or
/// `None` for an anonymous one.
pub type Owner = Option<Principal>;

/// The store of baskets; see the [module docs](self).
pub struct Baskets {
    handles: Handles<Owner, Basket>,
    /// The principals' shares (anonymous callers take none).
    shares: Shares<Principal>,
    /// The baskets each owner made, for `resources/list`, and the bytes
    /// their items hold.
    ledger: Arc<Ledger>,
}

/// One basket: its items (and its entry in the ledger, which their bytes
/// are charged to), and its owner's place under the share; the entry and
/// the place are given back when the basket is freed (ended, and let go
/// by every call using it).
pub struct Basket {
    items: Mutex<Items>,
    _share: Option<Share<Principal>>,
}

/// A basket's items, and its entry in the ledger (under the basket's lock,
/// so that an item and its charge go in together).
pub struct Items {
    list: Vec<String>,
    entry: Entry,
}

/// Why [`Basket::add`] added nothing.
#[derive(Debug)]
pub enum Unadded {
    /// The item is longer than [`ITEM_BYTES`].
    TooLong,
    /// The basket holds [`ITEMS_PER_BASKET`] items.
    Full,
    /// The principal's baskets hold `held` bytes; `limit` is theirs.
    OverShare {
        /// Bytes their items hold.
        held: usize,
        /// Bytes they may hold.
        limit: usize,
    },
    /// All baskets together hold as many bytes as they may.
    AtCapacity,
}

/// Why [`Baskets::create`] made no basket.
#[derive(Debug)]
pub enum Refused {
    /// The principal keeps its whole share already (`limit` baskets).
    OverShare {
        /// The share.
        limit: usize,
    },
    /// The store holds as many baskets as it may.
    AtCapacity,
}

impl Baskets {
    /// The store the flags describe, its ids beginning with `node` as two
    /// hex digits (as the session and task ids of that node do: a balancer
    /// routes a call naming a basket, its `Mcp-Param-Basket` header, to
    /// the node that holds it).
    pub fn new(flags: &BasketFlags, node: u8) -> Result<Baskets, String> {
        flags.validate()?;
        let handles = Handles::builder()
            .lifetime(flags.lifetime())
            .capacity(flags.max_baskets)
            .node_id(node)
            .build()
            .map_err(|e| format!("--max-baskets: {e}"))?;
        let shares = Shares::new(flags.baskets_per_principal)
            .map_err(|e| format!("--baskets-per-principal: {e}"))?;
        Ok(Baskets {
            handles,
            shares,
            ledger: Arc::new(Ledger::new(
                flags.basket_bytes,
                flags.basket_bytes_per_principal,
            )),
        })
    }

    /// A new, empty basket of `owner`'s: its id.
    pub fn create(&self, owner: &Owner) -> Result<SessionId, Refused> {
        let share = match owner {
            Some(principal) => Some(
                self.shares
                    .take(principal)
                    .map_err(|ShareFull { limit }| Refused::OverShare { limit })?,
            ),
            None => None,
        };
        // The entry is opened first, so that it is there to close however
        // soon the basket is freed.
        let entry = self.ledger.open(owner);
        let number = entry.number();
        let basket = Basket {
            items: Mutex::new(Items {
                list: Vec::new(),
                entry,
            }),
            _share: share,
        };
        // Refused, the basket is dropped: its place and entry with it.
        let id = self
            .handles
            .mint(owner.clone(), basket)
            .map_err(|_| Refused::AtCapacity)?;
        self.ledger.minted(owner, number, id);
        Ok(id)
    }

    /// The basket whose id is `text` (a tool argument), if it is `owner`'s
    /// and live, held in use while the answer lives.
    pub fn resolve(&self, text: &str, owner: &Owner) -> Resolved<Owner, Basket> {
        self.handles.resolve_text(text, owner)
    }

    /// The ids of `owner`'s baskets still live, oldest first.
    pub fn listed(&self, owner: &Owner) -> Vec<SessionId> {
        // Resolved with the ledger unlocked: a resolved basket let go here
        // may be the last one out, whose entry then closes.
        let mut ids = self.ledger.listed(owner);
        ids.retain(|id| matches!(self.handles.resolve(id, owner), Resolved::Found(_)));
        ids
    }

    /// Ends the baskets unused for their lifetime.
    pub fn reap(&self) {
        self.handles.reap();
    }

    /// The handles' counters (`sessionreg_handles_*`).
    pub fn stats(&self) -> sessionreg::Stats {
        self.handles.stats()
    }

    /// What the ledger holds: the baskets in the owners' lists, the owners
    /// with one, the bytes the items hold (for `/metrics`).
    pub fn held(&self) -> Held {
        self.ledger.held()
    }
}

impl Basket {
    fn locked(&self) -> MutexGuard<'_, Items> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `item`, if it is short enough and the basket, its owner's
    /// baskets and all baskets have room for it; the basket's item count.
    /// An item costs its bytes and [`ITEM_OVERHEAD`].
    pub fn add(&self, item: &str) -> Result<usize, Unadded> {
        if item.len() > ITEM_BYTES {
            return Err(Unadded::TooLong);
        }
        let mut items = self.locked();
        if items.list.len() >= ITEMS_PER_BASKET {
            return Err(Unadded::Full);
        }
        items
            .entry
            .charge(item.len() + ITEM_OVERHEAD)
            .map_err(|over| match over {
                Over::Share { held, limit } => Unadded::OverShare { held, limit },
                Over::Total => Unadded::AtCapacity,
            })?;
        items.list.push(item.to_string());
        Ok(items.list.len())
    }

    /// The basket's items joined by `separator`.
    pub fn joined(&self, separator: &str) -> String {
        self.locked().list.join(separator)
    }
}

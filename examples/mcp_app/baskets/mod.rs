//! The baskets: handles (SEP-2567) that keep state across calls without a
//! session, each bound to the principal that made it (anonymous callers
//! share the anonymous owner).
//!
//! What a client can make the server keep here is bounded: the baskets in
//! all (`--max-baskets`), and each principal's share of them
//! (`--baskets-per-principal`), whatever authenticated it (a static
//! token, an OAuth access token, a middleware of one's own). Anonymous
//! callers all count as one owner, so a share would let a few of them
//! lock every other out: they have the store's capacity alone. A basket
//! that ends leaves every structure that indexes it when it is freed: its
//! owner's place under the share, its entry in the [ledger](ledger).

pub mod flags;
pub mod ledger;

use flags::BasketFlags;
use ledger::{Entry, Ledger};
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
    /// The baskets each owner made, for `resources/list`.
    ledger: Arc<Ledger>,
}

/// One basket: its items; its owner's place under the share and its
/// entry in the ledger, both given back when the basket is freed (ended,
/// and let go by every call using it).
pub struct Basket {
    items: Mutex<Vec<String>>,
    _share: Option<Share<Principal>>,
    _entry: Entry,
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

/// What the store keeps, for `/metrics`.
pub struct Counts {
    /// Baskets in the owners' lists.
    pub indexed: usize,
    /// Owners with a list.
    pub owners: usize,
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
            ledger: Arc::default(),
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
            items: Mutex::default(),
            _share: share,
            _entry: entry,
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

    /// What the store keeps.
    pub fn counts(&self) -> Counts {
        let (indexed, owners) = self.ledger.counts();
        Counts { indexed, owners }
    }
}

impl Basket {
    /// The basket's items, locked.
    pub fn items(&self) -> MutexGuard<'_, Vec<String>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }
}

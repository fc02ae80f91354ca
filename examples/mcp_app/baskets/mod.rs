//! The baskets: handles (SEP-2567) that keep state across calls without a
//! session, each bound to the principal that made it (anonymous callers
//! share the anonymous owner).
//!
//! What a client can make the server keep here is bounded: the baskets in
//! all (`--max-baskets`), and each principal's share of them
//! (`--baskets-per-principal`), whatever authenticated it (a static
//! token, an OAuth access token, a middleware of one's own). Anonymous
//! callers all count as one owner, so a share would let a few of them
//! lock every other out: they have the store's capacity alone.

pub mod flags;

use flags::BasketFlags;
use sessionreg::handles::{Handles, Resolved};
use sessionreg::http::Principal;
use sessionreg::shares::{Share, ShareFull, Shares};
use sessionreg::SessionId;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

/// Who a basket belongs to: the principal of the request that made it, or
/// `None` for an anonymous one.
pub type Owner = Option<Principal>;

/// The store of baskets; see the [module docs](self).
pub struct Baskets {
    handles: Handles<Owner, Basket>,
    /// The principals' shares (anonymous callers take none).
    shares: Shares<Principal>,
    /// The baskets each owner made, for `resources/list` (pruned of those
    /// that have ended whenever it is read).
    made: Mutex<HashMap<Owner, Vec<SessionId>>>,
}

/// One basket: its items, and its owner's place under the share, given
/// back when the basket is freed (expired, and let go by every call using
/// it).
pub struct Basket {
    items: Mutex<Vec<String>>,
    _share: Option<Share<Principal>>,
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
            made: Mutex::default(),
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
        let basket = Basket {
            items: Mutex::default(),
            _share: share,
        };
        // Refused, the basket (and its place under the share) is dropped.
        let id = self
            .handles
            .mint(owner.clone(), basket)
            .map_err(|_| Refused::AtCapacity)?;
        self.made
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(owner.clone())
            .or_default()
            .push(id);
        Ok(id)
    }

    /// The basket whose id is `text` (a tool argument), if it is `owner`'s
    /// and live, held in use while the answer lives.
    pub fn resolve(&self, text: &str, owner: &Owner) -> Resolved<Owner, Basket> {
        self.handles.resolve_text(text, owner)
    }

    /// The ids of `owner`'s baskets still live, oldest first.
    pub fn listed(&self, owner: &Owner) -> Vec<SessionId> {
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        let Some(ids) = made.get_mut(owner) else {
            return Vec::new();
        };
        ids.retain(|id| matches!(self.handles.resolve(id, owner), Resolved::Found(_)));
        ids.clone()
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
        let made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        Counts {
            indexed: made.values().map(Vec::len).sum(),
            owners: made.len(),
        }
    }
}

impl Basket {
    /// The basket's items, locked.
    pub fn items(&self) -> MutexGuard<'_, Vec<String>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }
}

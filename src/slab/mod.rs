//! The slab: where sessions live. Pages of slots that never move
//! (`pages.rs`, `occupancy.rs`), each slot (`slot.rs`) with its lifecycle
//! word (`lifecycle.rs`), the free lists that hand slots out (`free_list.rs`,
//! `shards.rs`), and the storage a registry and its handles share
//! (`storage.rs`). The registry's operations (`insert.rs`, `lookup.rs`,
//! `terminate.rs`, `sweep.rs`) stand above it; `docs/design.md` says what
//! each file holds.

pub(crate) mod free_list;
pub(crate) mod lifecycle;
pub(crate) mod occupancy;
pub(crate) mod pages;
pub(crate) mod shards;
pub(crate) mod slot;
pub(crate) mod storage;

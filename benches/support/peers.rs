//! `sessionreg` and its peers behind one trait, so every workload runs the
//! same code against each.
//!
//! Each peer mints the key it naturally would: `sessionreg` its `SessionId`
//! (slot, generation and a CSPRNG secret), the slabs their slot key, the
//! `u64`-keyed maps a per-thread counter (thread number in the high bits, so
//! minting is not a shared atomic), and the string-keyed map a UUID v4 string,
//! as the MCP SDKs do. Every map uses its default hasher.
//!
//! `get` clones the value out, as a request handler would: an owned
//! `Arc<Payload>` for the peers, an owned `Session` handle for `sessionreg`.
//! `moka` is a cache, not a map: `moka::sync::Cache` with a time-to-idle
//! (see [`Moka`]), the one peer that tracks idleness as `sessionreg_idle`
//! does.
//!
//! The async `tokio::sync::RwLock` peer is `TokioStringMap`, outside the
//! trait: its operations are `async`, and the workloads drive it from inside
//! one `block_on` per thread (see `workload.rs`).

use super::payload::Payload;
use parking_lot::{Mutex, RwLock};
use sessionreg::{Reason, Registry, Session, SessionId};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub type Value = Arc<Payload>;

/// A concurrent session map under test.
pub trait Peer: Send + Sync + 'static {
    /// The key the peer mints for a new session.
    type Key: Clone + Send + Sync;
    /// What a lookup hands out (an owned clone of the session).
    type Handle;
    /// An empty map that will hold up to `capacity` sessions.
    fn new(capacity: usize) -> Self;
    /// Creates a session: mints its key and stores `value`.
    fn insert(&self, value: Value) -> Self::Key;
    /// Clones the session out, if it is there.
    fn get(&self, key: &Self::Key) -> Option<Self::Handle>;
    /// Ends the session; whether it was there.
    fn remove(&self, key: &Self::Key) -> bool;
    /// After a workload's long-lived sessions are created: whatever the
    /// peer's owner would have run by the time they are looked up (only
    /// `sessionreg_idle` has anything to run: one sweep).
    fn settle(&self) {}
}

/// A counter per thread, for the `u64`-keyed maps: no shared atomic.
fn next_u64_key() -> u64 {
    static THREADS: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static NEXT: Cell<u64> = Cell::new(THREADS.fetch_add(1, Ordering::Relaxed) << 40);
    }
    NEXT.with(|next| {
        let key = next.get();
        next.set(key + 1);
        key
    })
}

/// The UUID v4 string an MCP SDK mints for a session id.
pub fn uuid_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `sessionreg` in its default configuration (no idle timeout), or, with
/// `IDLE`, with an idle timeout as the HTTP layer always runs it: then an
/// insert marks its session's stamp rough (no clock read), and a lookup of a
/// session with an exact stamp compares it with the latest sweep's reading.
/// `settle` sweeps once, as the HTTP layer's reaper does within a period, so
/// the mix's long-lived sessions have exact stamps and each of their
/// lookups makes that comparison, as between requests in a server.
pub struct SessionReg<const IDLE: bool = false>(Registry<Value>);

/// `sessionreg` with a one-hour idle timeout (bench id `sessionreg_idle`).
pub type SessionRegIdle = SessionReg<true>;

impl<const IDLE: bool> Peer for SessionReg<IDLE> {
    type Key = SessionId;
    type Handle = Session<Value>;
    fn new(capacity: usize) -> Self {
        let builder = Registry::builder().capacity(capacity);
        let builder = if IDLE {
            builder.idle_timeout(std::time::Duration::from_secs(3600))
        } else {
            builder
        };
        SessionReg(builder.build().expect("valid configuration"))
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> SessionId {
        self.0.insert(value).expect("below capacity")
    }
    #[inline(always)]
    fn get(&self, key: &SessionId) -> Option<Session<Value>> {
        self.0.get(key)
    }
    #[inline(always)]
    fn remove(&self, key: &SessionId) -> bool {
        self.0.terminate(key, Reason::Deleted).is_won()
    }
    fn settle(&self) {
        // Makes every rough stamp exact (the sessions are an hour from
        // expiring): what the HTTP layer's reaper does within a period.
        assert_eq!(self.0.reap_idle(), 0);
    }
}

pub struct ShardedSlab(sharded_slab::Slab<Value>);

impl Peer for ShardedSlab {
    type Key = usize;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        ShardedSlab(sharded_slab::Slab::new())
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> usize {
        self.0.insert(value).expect("below capacity")
    }
    #[inline(always)]
    fn get(&self, key: &usize) -> Option<Value> {
        self.0.get(*key).map(|entry| Arc::clone(&entry))
    }
    #[inline(always)]
    fn remove(&self, key: &usize) -> bool {
        self.0.remove(*key)
    }
}

pub struct Dash(dashmap::DashMap<u64, Value>);

impl Peer for Dash {
    type Key = u64;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        Dash(dashmap::DashMap::new())
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> u64 {
        let key = next_u64_key();
        self.0.insert(key, value);
        key
    }
    #[inline(always)]
    fn get(&self, key: &u64) -> Option<Value> {
        self.0.get(key).map(|entry| Arc::clone(&entry))
    }
    #[inline(always)]
    fn remove(&self, key: &u64) -> bool {
        self.0.remove(key).is_some()
    }
}

pub struct Scc(scc::HashMap<u64, Value>);

impl Peer for Scc {
    type Key = u64;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        Scc(scc::HashMap::new())
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> u64 {
        let key = next_u64_key();
        assert!(self.0.insert_sync(key, value).is_ok(), "keys are fresh");
        key
    }
    #[inline(always)]
    fn get(&self, key: &u64) -> Option<Value> {
        self.0.read_sync(key, |_, value| Arc::clone(value))
    }
    #[inline(always)]
    fn remove(&self, key: &u64) -> bool {
        self.0.remove_sync(key).is_some()
    }
}

pub struct Papaya(papaya::HashMap<u64, Value>);

impl Peer for Papaya {
    type Key = u64;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        Papaya(papaya::HashMap::new())
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> u64 {
        let key = next_u64_key();
        self.0.pin().insert(key, value);
        key
    }
    #[inline(always)]
    fn get(&self, key: &u64) -> Option<Value> {
        self.0.pin().get(key).cloned()
    }
    #[inline(always)]
    fn remove(&self, key: &u64) -> bool {
        self.0.pin().remove(key).is_some()
    }
}

pub struct MutexSlab(Mutex<slab::Slab<Value>>);

impl Peer for MutexSlab {
    type Key = usize;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        MutexSlab(Mutex::new(slab::Slab::new()))
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> usize {
        self.0.lock().insert(value)
    }
    #[inline(always)]
    fn get(&self, key: &usize) -> Option<Value> {
        self.0.lock().get(*key).cloned()
    }
    #[inline(always)]
    fn remove(&self, key: &usize) -> bool {
        self.0.lock().try_remove(*key).is_some()
    }
}

pub struct RwLockHashMap(RwLock<HashMap<u64, Value>>);

impl Peer for RwLockHashMap {
    type Key = u64;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        RwLockHashMap(RwLock::new(HashMap::new()))
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> u64 {
        let key = next_u64_key();
        self.0.write().insert(key, value);
        key
    }
    #[inline(always)]
    fn get(&self, key: &u64) -> Option<Value> {
        self.0.read().get(key).cloned()
    }
    #[inline(always)]
    fn remove(&self, key: &u64) -> bool {
        self.0.write().remove(key).is_some()
    }
}

/// `moka::sync::Cache<u64, _>` with a one-hour time-to-idle (nothing
/// expires during a run), as `sessionreg_idle` has an idle timeout, and
/// `max_capacity` the bench's capacity: a cache that tracks each entry's
/// last access, as the registry's idle clock does. Unlike the registry it
/// applies its bookkeeping (access order, expiry, eviction) later, in
/// batches, on its own maintenance schedule (a read or write that finds
/// enough pending work runs it), and at capacity it evicts instead of
/// refusing an insert. Keys are the per-thread `u64` counters of the other
/// maps, hashed with moka's default (std's `RandomState`). `get` clones
/// the value out; `remove` is moka's `remove`, which is `invalidate` that
/// hands back the value (so it can say whether the entry was there).
pub struct Moka(moka::sync::Cache<u64, Value>);

impl Peer for Moka {
    type Key = u64;
    type Handle = Value;
    fn new(capacity: usize) -> Self {
        Moka(
            moka::sync::Cache::builder()
                .max_capacity(capacity as u64)
                .time_to_idle(std::time::Duration::from_secs(3600))
                .build(),
        )
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> u64 {
        let key = next_u64_key();
        self.0.insert(key, value);
        key
    }
    #[inline(always)]
    fn get(&self, key: &u64) -> Option<Value> {
        self.0.get(key)
    }
    #[inline(always)]
    fn remove(&self, key: &u64) -> bool {
        self.0.remove(key).is_some()
    }
    fn settle(&self) {
        // Applies the inserts still pending (admission, access order), as
        // its own maintenance would have by the time a server's long-lived
        // sessions are looked up.
        self.0.run_pending_tasks();
    }
}

/// `tokio::sync::RwLock<HashMap<String, _>>` keyed by UUID strings: what the
/// MCP SDKs use. Async, so not a [`Peer`]: the workloads await it.
pub struct TokioStringMap(tokio::sync::RwLock<HashMap<String, Value>>);

impl TokioStringMap {
    pub fn new() -> Self {
        TokioStringMap(tokio::sync::RwLock::new(HashMap::new()))
    }
    /// The key goes into the map and a copy back to the caller, as an SDK
    /// keeps one and sends the other in the response header.
    pub async fn insert(&self, value: Value) -> String {
        let key = uuid_key();
        self.0.write().await.insert(key.clone(), value);
        key
    }
    pub async fn get(&self, key: &str) -> Option<Value> {
        self.0.read().await.get(key).cloned()
    }
    pub async fn remove(&self, key: &str) -> bool {
        self.0.write().await.remove(key).is_some()
    }
}

//! `sessionreg` and its peers behind one trait, so every workload runs the
//! same code against each.
//!
//! Each bare peer mints the key it naturally would: `sessionreg` its
//! `SessionId` (slot, generation and a CSPRNG secret), the slabs their slot
//! key, the `u64`-keyed maps a per-thread counter (thread number in the high
//! bits, so minting is not a shared atomic), and the string-keyed map a UUID
//! v4 string, as the MCP SDKs do. Every map uses its default hasher.
//!
//! A session id must not be guessable, and only `sessionreg`, `moka` and the
//! UUID-keyed map mint one that is. So beside each bare peer runs the same
//! map keyed as a careful user would key it (the `_id128` ids of the bench):
//! a 128-bit id drawn from `rand`'s thread-local generator
//! (`rand::rng().random::<u128>()`, [`Random`]). The hash maps are then keyed
//! by that `u128`; the slabs keep their slot key and store the 128 random
//! bits beside the value, compared on every lookup and removal (a
//! [`SlabKey`] is slot + secret, as a `SessionId` is); the UUID-keyed map
//! draws its UUID's bytes from the same generator instead of one
//! `getrandom` system call per id (`tokio_rwlock_string_rng`). So "the same
//! work" is the same work: mint an unguessable id, insert, look up, remove.
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
use rand::RngExt as _;
use sessionreg::{Reason, Registry, Session, SessionId};
use std::cell::Cell;
use std::collections::HashMap;
use std::hash::Hash;
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

/// The UUID v4 string an MCP SDK mints for a session id (`uuid`'s
/// `new_v4`: one `getrandom` system call per id).
pub fn uuid_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A UUID v4 string whose random bytes come from `rand`'s thread-local
/// generator (no system call per id): how a careful user mints one.
pub fn uuid_key_rng() -> String {
    uuid::Builder::from_random_bytes(rand::rng().random())
        .into_uuid()
        .to_string()
}

/// How a hash-map peer mints its keys.
pub trait Mint: Send + Sync + 'static {
    /// The key.
    type Key: Copy + Eq + Hash + Send + Sync + 'static;
    /// A new key.
    fn mint() -> Self::Key;
}

/// The bare maps' key: a per-thread counter (guessable).
pub struct Counter;

impl Mint for Counter {
    type Key = u64;
    #[inline(always)]
    fn mint() -> u64 {
        next_u64_key()
    }
}

/// A 128-bit id from `rand`'s thread-local CSPRNG, as a careful user draws
/// a session id (`rand::rng().random::<u128>()`).
pub struct Random;

impl Mint for Random {
    type Key = u128;
    #[inline(always)]
    fn mint() -> u128 {
        rand::rng().random()
    }
}

/// What a slab peer stores beside each value and checks on every lookup
/// and removal: nothing (the bare slab), or [`Random`]'s 128 bits.
pub trait Secret: Send + Sync + 'static {
    /// The secret (`()` for none).
    type Bits: Copy + Eq + Send + Sync + 'static;
    /// A new secret.
    fn draw() -> Self::Bits;
}

/// No secret: the slab's own key alone.
pub struct NoSecret;

impl Secret for NoSecret {
    type Bits = ();
    #[inline(always)]
    fn draw() {}
}

impl Secret for Random {
    type Bits = u128;
    #[inline(always)]
    fn draw() -> u128 {
        rand::rng().random()
    }
}

/// A slab peer's key: the slab's slot key and the secret stored with it.
#[derive(Clone, Copy)]
pub struct SlabKey<B> {
    slot: usize,
    secret: B,
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

/// `sharded_slab::Slab`; with [`Random`], each entry carries 128 random
/// bits that a lookup and a removal compare with the key's.
pub struct ShardedSlab<S: Secret = NoSecret>(sharded_slab::Slab<(S::Bits, Value)>);

impl<S: Secret> Peer for ShardedSlab<S> {
    type Key = SlabKey<S::Bits>;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        ShardedSlab(sharded_slab::Slab::new())
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> Self::Key {
        let secret = S::draw();
        let slot = self.0.insert((secret, value)).expect("below capacity");
        SlabKey { slot, secret }
    }
    #[inline(always)]
    fn get(&self, key: &Self::Key) -> Option<Value> {
        let entry = self.0.get(key.slot)?;
        (entry.0 == key.secret).then(|| Arc::clone(&entry.1))
    }
    #[inline(always)]
    fn remove(&self, key: &Self::Key) -> bool {
        // The slot key carries sharded_slab's generation: a slot reused
        // between the check and the removal is not removed.
        match self.0.get(key.slot) {
            Some(entry) if entry.0 == key.secret => {
                drop(entry);
                self.0.remove(key.slot)
            }
            _ => false,
        }
    }
}

pub struct Dash<M: Mint = Counter>(dashmap::DashMap<M::Key, Value>);

impl<M: Mint> Peer for Dash<M> {
    type Key = M::Key;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        Dash(dashmap::DashMap::new())
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> M::Key {
        let key = M::mint();
        self.0.insert(key, value);
        key
    }
    #[inline(always)]
    fn get(&self, key: &M::Key) -> Option<Value> {
        self.0.get(key).map(|entry| Arc::clone(&entry))
    }
    #[inline(always)]
    fn remove(&self, key: &M::Key) -> bool {
        self.0.remove(key).is_some()
    }
}

pub struct Scc<M: Mint = Counter>(scc::HashMap<M::Key, Value>);

impl<M: Mint> Peer for Scc<M> {
    type Key = M::Key;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        Scc(scc::HashMap::new())
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> M::Key {
        let key = M::mint();
        assert!(self.0.insert_sync(key, value).is_ok(), "keys are fresh");
        key
    }
    #[inline(always)]
    fn get(&self, key: &M::Key) -> Option<Value> {
        self.0.read_sync(key, |_, value| Arc::clone(value))
    }
    #[inline(always)]
    fn remove(&self, key: &M::Key) -> bool {
        self.0.remove_sync(key).is_some()
    }
}

pub struct Papaya<M: Mint = Counter>(papaya::HashMap<M::Key, Value>);

impl<M: Mint> Peer for Papaya<M> {
    type Key = M::Key;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        Papaya(papaya::HashMap::new())
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> M::Key {
        let key = M::mint();
        self.0.pin().insert(key, value);
        key
    }
    #[inline(always)]
    fn get(&self, key: &M::Key) -> Option<Value> {
        self.0.pin().get(key).cloned()
    }
    #[inline(always)]
    fn remove(&self, key: &M::Key) -> bool {
        self.0.pin().remove(key).is_some()
    }
}

/// `parking_lot::Mutex<slab::Slab>`; with [`Random`], each entry carries
/// 128 random bits that a lookup and a removal compare under the lock
/// (which also gives the bare slab's keys the generation they lack).
pub struct MutexSlab<S: Secret = NoSecret>(Mutex<slab::Slab<(S::Bits, Value)>>);

impl<S: Secret> Peer for MutexSlab<S> {
    type Key = SlabKey<S::Bits>;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        MutexSlab(Mutex::new(slab::Slab::new()))
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> Self::Key {
        // Drawn before the lock is taken, as a careful user would.
        let secret = S::draw();
        let slot = self.0.lock().insert((secret, value));
        SlabKey { slot, secret }
    }
    #[inline(always)]
    fn get(&self, key: &Self::Key) -> Option<Value> {
        let slab = self.0.lock();
        let entry = slab.get(key.slot)?;
        (entry.0 == key.secret).then(|| Arc::clone(&entry.1))
    }
    #[inline(always)]
    fn remove(&self, key: &Self::Key) -> bool {
        let mut slab = self.0.lock();
        match slab.get(key.slot) {
            Some(entry) if entry.0 == key.secret => {
                slab.remove(key.slot);
                true
            }
            _ => false,
        }
    }
}

pub struct RwLockHashMap<M: Mint = Counter>(RwLock<HashMap<M::Key, Value>>);

impl<M: Mint> Peer for RwLockHashMap<M> {
    type Key = M::Key;
    type Handle = Value;
    fn new(_capacity: usize) -> Self {
        RwLockHashMap(RwLock::new(HashMap::new()))
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> M::Key {
        // Minted before the lock is taken.
        let key = M::mint();
        self.0.write().insert(key, value);
        key
    }
    #[inline(always)]
    fn get(&self, key: &M::Key) -> Option<Value> {
        self.0.read().get(key).cloned()
    }
    #[inline(always)]
    fn remove(&self, key: &M::Key) -> bool {
        self.0.write().remove(key).is_some()
    }
}

/// `moka::sync::Cache<u128, _>` configured as a session store would be:
/// a one-hour time-to-idle (nothing expires during a run), as
/// `sessionreg_idle` has an idle timeout; `max_capacity` the bench's
/// capacity, with moka's LRU eviction policy (`EvictionPolicy::lru()`),
/// which has no admission policy: a session store must keep every new
/// session, where the default TinyLFU may refuse to admit a new key (and
/// keeps a frequency sketch of every key it sees). Keys are 128-bit ids
/// from `rand`'s thread-local generator ([`Random`]), as a careful user
/// mints a session id, hashed with moka's default (std's `RandomState`).
/// Unlike the registry it applies its bookkeeping (access order, expiry,
/// eviction) later, in batches, on its own maintenance schedule (a read or
/// write that finds enough pending work runs it), and at capacity it
/// evicts instead of refusing an insert. `get` clones the value out;
/// `remove` is moka's `remove`, which is `invalidate` that hands back the
/// value (so it can say whether the entry was there).
pub struct Moka(moka::sync::Cache<u128, Value>);

impl Peer for Moka {
    type Key = u128;
    type Handle = Value;
    fn new(capacity: usize) -> Self {
        Moka(
            moka::sync::Cache::builder()
                .max_capacity(capacity as u64)
                .eviction_policy(moka::policy::EvictionPolicy::lru())
                .time_to_idle(std::time::Duration::from_secs(3600))
                .build(),
        )
    }
    #[inline(always)]
    fn insert(&self, value: Value) -> u128 {
        let key = Random::mint();
        self.0.insert(key, value);
        key
    }
    #[inline(always)]
    fn get(&self, key: &u128) -> Option<Value> {
        self.0.get(key)
    }
    #[inline(always)]
    fn remove(&self, key: &u128) -> bool {
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
/// MCP SDKs use. Async, so not a [`Peer`]: the workloads await it. With
/// `RNG`, the UUID's bytes come from `rand`'s thread-local generator
/// ([`uuid_key_rng`], bench id `tokio_rwlock_string_rng`) instead of
/// `uuid`'s `new_v4` (a `getrandom` system call per id).
pub struct TokioStringMap<const RNG: bool = false>(tokio::sync::RwLock<HashMap<String, Value>>);

impl<const RNG: bool> TokioStringMap<RNG> {
    pub fn new() -> Self {
        TokioStringMap(tokio::sync::RwLock::new(HashMap::new()))
    }
    /// The key goes into the map and a copy back to the caller, as an SDK
    /// keeps one and sends the other in the response header. Minted before
    /// the lock is taken.
    pub async fn insert(&self, value: Value) -> String {
        let key = if RNG { uuid_key_rng() } else { uuid_key() };
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

//! The session value every peer stores: the same `Arc<Payload>` for all.

use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;

/// A few atomics and a 64-byte buffer, like a small server-side session.
#[allow(dead_code)] // the fields are there for their size, not read
pub struct Payload {
    pub requests: AtomicU64,
    pub last_seen: AtomicU64,
    pub flags: AtomicU32,
    pub buf: [u8; 64],
}

impl Payload {
    pub fn new() -> Arc<Payload> {
        Arc::new(Payload {
            requests: AtomicU64::new(0),
            last_seen: AtomicU64::new(0),
            flags: AtomicU32::new(0),
            buf: [0; 64],
        })
    }
}

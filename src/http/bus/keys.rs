//! The fleet's bus keys ([`BusKeys`]): every frame a node publishes is
//! sealed under one (`wire.rs`), and a node reads only the frames sealed
//! under a key it holds. Each key has a one-byte id, written into the
//! frame; the current one seals, the others (previous or next ones, during
//! a rotation) still open. Swapped whole at run time
//! ([`RedisBus::set_keys`](super::RedisBus::set_keys)), without a lock on
//! the task's path.
//!
//! The AES-256-GCM key a frame is sealed with is derived from the key
//! given (SHA-256 over a label of the bus's own and the key), so the same
//! 32 bytes given as a `requestState` key too (the same file, say) seal
//! nothing the other could open.

use crate::http::input::sealing::RequestStateKeys;
use aes_gcm::{Aes256Gcm, KeyInit};
use sha2::{Digest, Sha256};
use std::fmt;

/// The keys a fleet's bus seals and opens its frames with: the current one
/// (which seals) and those still accepted (during a rotation). Every node
/// of a fleet holds the same keys; a node holds at least one.
#[derive(Clone)]
pub struct BusKeys {
    keys: RequestStateKeys,
}

impl fmt::Debug for BusKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the keys.
        let (current, keys) = self.keys.held();
        let ids: Vec<u8> = keys.iter().map(|(id, _)| *id).collect();
        f.debug_struct("BusKeys")
            .field("current", &current)
            .field("ids", &ids)
            .finish()
    }
}

impl BusKeys {
    /// One key, `id`, that seals and opens.
    pub fn new(id: u8, key: [u8; 32]) -> BusKeys {
        BusKeys {
            keys: RequestStateKeys::new(id, key),
        }
    }

    /// These keys, with `id` made the one that seals; the keys already
    /// held still open (the oldest beyond `keep` in all are dropped).
    pub fn rotated(self, id: u8, key: [u8; 32], keep: usize) -> BusKeys {
        BusKeys {
            keys: self.keys.rotated(id, key, keep),
        }
    }

    /// Reads `ID=KEY` lines, ID 0-255 and KEY 64 hex digits (32 bytes;
    /// blank lines and `#` comments skipped); the first line's key seals,
    /// the others open. The format of a `requestState` key file.
    pub fn parse(text: &str) -> Result<BusKeys, &'static str> {
        RequestStateKeys::parse(text).map(|keys| BusKeys { keys })
    }
}

/// The keys in force, each as the cipher its frames are sealed with.
pub(super) struct FrameKeys {
    current: u8,
    ciphers: Vec<(u8, Aes256Gcm)>,
}

impl FrameKeys {
    pub(super) fn new(keys: &BusKeys) -> FrameKeys {
        let (current, held) = keys.keys.held();
        let ciphers = held
            .iter()
            .map(|(id, key)| (*id, Aes256Gcm::new(&derive(key).into())))
            .collect();
        FrameKeys { current, ciphers }
    }

    /// The id and cipher of the key that seals.
    pub(super) fn sealing(&self) -> (u8, &Aes256Gcm) {
        let cipher = self.cipher(self.current).expect("the current key is held");
        (self.current, cipher)
    }

    /// The cipher of key `id`, if it is held.
    pub(super) fn cipher(&self, id: u8) -> Option<&Aes256Gcm> {
        self.ciphers
            .iter()
            .find(|(kid, _)| *kid == id)
            .map(|(_, cipher)| cipher)
    }
}

/// The bus's AES-256-GCM key of a key given.
fn derive(key: &[u8; 32]) -> [u8; 32] {
    Sha256::new()
        .chain_update(b"sessionreg fleet bus frames\0")
        .chain_update(key)
        .finalize()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_rotated_and_never_shown() {
        let keys = BusKeys::parse(&format!(
            "# the fleet's bus\n2={}\n1={}\n",
            "ab".repeat(32),
            "cd".repeat(32)
        ))
        .unwrap();
        let ring = FrameKeys::new(&keys);
        assert_eq!(ring.sealing().0, 2);
        assert!(ring.cipher(1).is_some() && ring.cipher(3).is_none());
        let shown = format!("{keys:?}");
        assert!(!shown.contains("abab") && !shown.contains("171"), "{shown}");
        let rotated = BusKeys::new(1, [1; 32]).rotated(5, [5; 32], 2);
        let ring = FrameKeys::new(&rotated);
        assert_eq!(ring.sealing().0, 5);
        assert!(ring.cipher(1).is_some());
        assert!(BusKeys::parse("").is_err() && BusKeys::parse("1=ab").is_err());
        // Derived: not the key given.
        assert_ne!(derive(&[1; 32]), [1; 32]);
    }
}

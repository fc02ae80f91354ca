//! A token as the layer keeps it: its SHA-256 digest, never the token
//! itself. Static tokens are kept and compared so (`bearer.rs`), and the
//! resource server's caches of accepted and refused tokens are keyed so
//! (`oauth/`): a memory dump holds no credential, and a fixed-length value
//! compared in constant time shows nothing of a token's length.

/// A token's SHA-256 digest.
pub(crate) type Digest = [u8; 32];

/// The digest of `token`.
pub(crate) fn digest(token: impl AsRef<[u8]>) -> Digest {
    use sha2::Digest as _;
    sha2::Sha256::digest(token.as_ref()).into()
}

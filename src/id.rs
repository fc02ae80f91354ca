//! Session ids: a [`SessionId`] packs a slot index, the slot's generation,
//! the node that minted it and a secret (drawn in `secret.rs`); its text
//! form, the `MCP-Session-Id` header value, is written and parsed here
//! without allocating. The layout, and why the node comes first, are in the
//! design notes (`src/docs/design.md`, "Ids").

use crate::pack::Field;
use std::fmt;
use std::str::FromStr;

/// Slot index: which slot of the registry holds the session.
pub(crate) const INDEX: Field = Field::lowest(26);
/// The slot's generation at the time the session was created.
pub(crate) const GENERATION: Field = INDEX.then(30);
/// The node that minted the id: the top byte, so the first two hex digits
/// of the text form.
pub(crate) const NODE: Field = GENERATION.then(8);
const _: () = assert!(NODE.end() == 64, "the id's high word is fully used");
const _: () = assert!(
    NODE.bits() == 8,
    "a node is the text form's first two digits"
);

/// The name of one session: its slot, the slot's generation and a secret.
///
/// Ids are minted by [`Registry::insert`](crate::Registry::insert). An id stays
/// the name of the one session it was minted for: once that session has ended,
/// the slot's generation has moved on and the id no longer finds anything,
/// even after the slot holds a new session.
///
/// ```
/// use sessionreg::{Registry, SessionId};
///
/// let registry = Registry::<&str>::builder().build().unwrap();
/// let id = registry.insert("hello").unwrap();
/// let text = id.to_string();
/// assert_eq!(text.len(), SessionId::TEXT_LEN);
/// assert_eq!(text.parse::<SessionId>().unwrap(), id);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(u128);

impl SessionId {
    /// Length of the text form, in bytes.
    pub const TEXT_LEN: usize = 32;

    /// Packs an id from its fields.
    pub(crate) fn new(index: u64, generation: u64, node: u64, secret: u64) -> Self {
        let high = NODE.set(GENERATION.set(INDEX.set(0, index), generation), node);
        SessionId((u128::from(high) << 64) | u128::from(secret))
    }

    #[inline]
    fn high(self) -> u64 {
        (self.0 >> 64) as u64
    }

    /// The slot index.
    #[inline]
    pub(crate) fn index(self) -> u64 {
        INDEX.get(self.high())
    }

    /// The slot's generation when the session was created.
    #[inline]
    pub(crate) fn generation(self) -> u64 {
        GENERATION.get(self.high())
    }

    /// The node that minted the id ([`Builder::node_id`](crate::Builder::node_id);
    /// 0 by default): the first two hex digits of the text form.
    #[inline]
    pub fn node(self) -> u8 {
        NODE.get(self.high()) as u8
    }

    /// The secret part.
    #[inline]
    pub(crate) fn secret(self) -> u64 {
        self.0 as u64
    }

    /// The id as one 128-bit number (the same bits as the text form).
    pub fn to_u128(self) -> u128 {
        self.0
    }

    /// The id with these bits: the inverse of [`to_u128`](SessionId::to_u128).
    /// Any value is an id; whether it names a session is for the registry to
    /// say.
    pub fn from_u128(bits: u128) -> SessionId {
        SessionId(bits)
    }

    /// The id whose text form is `bytes`, e.g. a header value.
    ///
    /// Accepts exactly [`TEXT_LEN`](SessionId::TEXT_LEN) lowercase hex digits.
    pub fn parse_bytes(bytes: &[u8]) -> Result<SessionId, ParseIdError> {
        if bytes.len() != Self::TEXT_LEN {
            return Err(ParseIdError::Length(bytes.len()));
        }
        let mut value: u128 = 0;
        for (at, &byte) in bytes.iter().enumerate() {
            let digit = match byte {
                b'0'..=b'9' => byte - b'0',
                b'a'..=b'f' => byte - b'a' + 10,
                _ => return Err(ParseIdError::Digit { at }),
            };
            value = (value << 4) | u128::from(digit);
        }
        Ok(SessionId(value))
    }

    /// Writes the text form into `out` and returns it as a `&str`, without
    /// allocating.
    pub fn encode<'a>(&self, out: &'a mut [u8; Self::TEXT_LEN]) -> &'a str {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        for (i, byte) in out.iter_mut().enumerate() {
            let nibble = (self.0 >> (4 * (Self::TEXT_LEN - 1 - i))) & 0xf;
            *byte = DIGITS[nibble as usize];
        }
        // Every byte is one of DIGITS, so this cannot fail.
        std::str::from_utf8(out).expect("hex digits are ASCII")
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.encode(&mut [0; Self::TEXT_LEN]))
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secret is a bearer credential: keep it out of logs.
        f.debug_struct("SessionId")
            .field("index", &self.index())
            .field("generation", &self.generation())
            .field("node", &self.node())
            .finish_non_exhaustive()
    }
}

impl FromStr for SessionId {
    type Err = ParseIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SessionId::parse_bytes(s.as_bytes())
    }
}

/// Why a text is not a session id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseIdError {
    /// The text is not [`TEXT_LEN`](SessionId::TEXT_LEN) bytes long; holds the length it had.
    Length(usize),
    /// The byte at this offset is not a lowercase hex digit.
    Digit {
        /// Byte offset of the first bad byte.
        at: usize,
    },
}

impl fmt::Display for ParseIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseIdError::Length(len) => {
                write!(
                    f,
                    "a session id is {} bytes long, this one is {len}",
                    SessionId::TEXT_LEN
                )
            }
            ParseIdError::Digit { at } => {
                write!(
                    f,
                    "byte {at} of the session id is not a lowercase hex digit"
                )
            }
        }
    }
}

impl std::error::Error for ParseIdError {}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn packing_round_trips(
            index in 0..=INDEX.max(),
            generation in 0..=GENERATION.max(),
            node in 0..=NODE.max(),
            secret: u64,
        ) {
            let id = SessionId::new(index, generation, node, secret);
            prop_assert_eq!(id.index(), index);
            prop_assert_eq!(id.generation(), generation);
            prop_assert_eq!(u64::from(id.node()), node);
            prop_assert_eq!(id.secret(), secret);
        }

        #[test]
        fn text_round_trips_and_is_fixed_visible_ascii(bits: u128) {
            let id = SessionId(bits);
            let text = id.to_string();
            prop_assert_eq!(text.len(), SessionId::TEXT_LEN);
            prop_assert!(text.bytes().all(|b| (0x21..=0x7e).contains(&b)));
            prop_assert_eq!(text.parse::<SessionId>(), Ok(id));
        }

        #[test]
        fn parse_never_panics(text in ".{0,40}") {
            let _ = text.parse::<SessionId>();
        }
    }

    #[test]
    fn parse_rejects_with_the_reason() {
        assert_eq!("".parse::<SessionId>(), Err(ParseIdError::Length(0)));
        assert_eq!(
            "0".repeat(33).parse::<SessionId>(),
            Err(ParseIdError::Length(33))
        );
        let mut upper = "0".repeat(32);
        upper.replace_range(5..6, "A");
        assert_eq!(
            upper.parse::<SessionId>(),
            Err(ParseIdError::Digit { at: 5 })
        );
        assert_eq!(
            "g".repeat(32).parse::<SessionId>(),
            Err(ParseIdError::Digit { at: 0 })
        );
    }

    #[test]
    fn the_node_is_the_first_two_hex_digits() {
        for node in [0u64, 1, 0x2a, 0xff] {
            let id = SessionId::new(INDEX.max(), GENERATION.max(), node, u64::MAX);
            assert_eq!(&id.to_string()[..2], format!("{node:02x}"));
            assert_eq!(u64::from(id.node()), node);
        }
    }

    #[test]
    fn debug_hides_the_secret() {
        let id = SessionId::new(1, 2, 0, 0xdead_beef_dead_beef);
        let debug = format!("{id:?}");
        assert!(!debug.contains("deadbeef"), "{debug}");
        assert!(!debug.contains(&0xdead_beef_dead_beef_u64.to_string()));
    }
}

//! Session ids: a [`SessionId`] packs a slot index, the slot's generation
//! and the node that minted it into one word, beside a 128-bit secret (drawn
//! in `secret.rs`); its text form, the `MCP-Session-Id` header value, is
//! written and parsed here without allocating. The layout, and why the node
//! comes first, are in the design notes (`src/docs/design.md`, "Ids").

use crate::pack::Field;
use crate::secret::Secret;
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

/// Hex digits per 64-bit word of the text form.
const WORD_DIGITS: usize = 16;

/// A byte's value in [`HEX_VALUE`] when it is not a lowercase hex digit: a
/// bit no digit's value (0 to 15) has.
const NOT_HEX: u8 = 0x10;

/// Each byte's value as a digit of the text form, or [`NOT_HEX`].
const HEX_VALUE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut digit = 0;
    while digit < 16 {
        table[b"0123456789abcdef"[digit] as usize] = digit as u8;
        digit += 1;
    }
    table
};

/// The name of one session: its slot, the slot's generation and a secret.
///
/// Ids are minted by [`Registry::insert`](crate::Registry::insert). An id stays
/// the name of the one session it was minted for: once that session has ended,
/// the slot's generation has moved on and the id no longer finds anything,
/// even after the slot holds a new session.
///
/// An id is 192 bits: 64 that name the node, the slot and its generation,
/// and a 128-bit secret. Its text form is 48 lowercase hex digits, the node
/// first.
///
/// ```
/// use sessionreg::{Registry, SessionId};
///
/// let registry = Registry::<&str>::builder().node_id(0x2a).build().unwrap();
/// let id = registry.insert("hello").unwrap();
/// let text = id.to_string();
/// assert_eq!(text.len(), SessionId::TEXT_LEN);
/// assert!(text.starts_with("2a"));
/// assert_eq!(text.parse::<SessionId>().unwrap(), id);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId {
    /// Node, generation and index (`NODE`, `GENERATION`, `INDEX`).
    high: u64,
    secret: Secret,
}

// Three words, aligned as one: no `u128` (16-byte alignment) in the id, so
// that whatever holds one beside word-sized fields needs no padding.
const _: () = assert!(std::mem::size_of::<SessionId>() == 24);
const _: () = assert!(std::mem::align_of::<SessionId>() == 8);

impl SessionId {
    /// Length of the text form, in bytes.
    pub const TEXT_LEN: usize = 3 * WORD_DIGITS;

    /// Packs an id from its fields.
    pub(crate) fn new(index: u64, generation: u64, node: u64, secret: Secret) -> Self {
        SessionId {
            high: NODE.set(GENERATION.set(INDEX.set(0, index), generation), node),
            secret,
        }
    }

    /// The slot index.
    #[inline]
    pub(crate) fn index(self) -> u64 {
        INDEX.get(self.high)
    }

    /// The slot's generation when the session was created.
    #[inline]
    pub(crate) fn generation(self) -> u64 {
        GENERATION.get(self.high)
    }

    /// The node that minted the id ([`Builder::node_id`](crate::Builder::node_id);
    /// 0 by default): the first two hex digits of the text form.
    #[inline]
    pub fn node(self) -> u8 {
        NODE.get(self.high) as u8
    }

    /// The part of the id that names the session without granting
    /// anything: node, generation and slot, written as the first 16 of the
    /// text form's 48 hex digits. Stable for the session's life and never
    /// another session's (the generation moves on when the slot is
    /// reused); what a log line or a trace may carry, where the whole id,
    /// a credential, must not go.
    ///
    /// ```
    /// use sessionreg::{Registry, SessionId};
    ///
    /// let registry = Registry::<()>::builder().node_id(0x2a).build().unwrap();
    /// let id = registry.insert(()).unwrap();
    /// let prefix = id.public_part().to_string();
    /// assert_eq!(prefix.len(), 16);
    /// assert!(id.to_string().starts_with(&prefix));
    /// ```
    #[inline]
    pub fn public_part(self) -> PublicPart {
        PublicPart(self.high)
    }

    /// The secret part.
    #[inline]
    pub(crate) fn secret(self) -> Secret {
        self.secret
    }

    /// The three words of the id, most significant first: the order of the
    /// text form.
    #[inline]
    fn words(self) -> [u64; 3] {
        [self.high, self.secret.high, self.secret.low]
    }

    #[inline]
    fn from_words([high, secret_high, secret_low]: [u64; 3]) -> SessionId {
        SessionId {
            high,
            secret: Secret {
                high: secret_high,
                low: secret_low,
            },
        }
    }

    /// The id as 24 bytes, most significant first (the same bits, in the
    /// same order, as the text form).
    pub fn to_bytes(self) -> [u8; 24] {
        let mut bytes = [0; 24];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(self.words()) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        bytes
    }

    /// The id with these bytes: the inverse of
    /// [`to_bytes`](SessionId::to_bytes). Any value is an id; whether it
    /// names a session is for the registry to say.
    pub fn from_bytes(bytes: [u8; 24]) -> SessionId {
        let word = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        SessionId::from_words([word(0), word(8), word(16)])
    }

    /// The id whose text form is `bytes`, e.g. a header value.
    ///
    /// Accepts exactly [`TEXT_LEN`](SessionId::TEXT_LEN) lowercase hex
    /// digits; anything else is refused with the reason, and nothing is
    /// allocated either way.
    pub fn parse_bytes(bytes: &[u8]) -> Result<SessionId, ParseIdError> {
        let Ok(text) = <&[u8; Self::TEXT_LEN]>::try_from(bytes) else {
            return Err(ParseIdError::Length(bytes.len()));
        };
        // Eight digits at a time, without a branch on any byte's value (a
        // lookup takes every id a client sends, and a branch per digit
        // mispredicts on random hex); a byte that is no digit marks `bad`,
        // and only then is the text walked again for its place.
        let mut words = [0u64; 3];
        let mut bad = 0;
        for (word, digits) in words.iter_mut().zip(text.chunks_exact(WORD_DIGITS)) {
            let (high, bad_high) = decode8(digits[..8].try_into().expect("8 digits"));
            let (low, bad_low) = decode8(digits[8..].try_into().expect("8 digits"));
            *word = (u64::from(high) << 32) | u64::from(low);
            bad |= bad_high | bad_low;
        }
        if bad != 0 {
            let at = text
                .iter()
                .position(|&byte| HEX_VALUE[usize::from(byte)] == NOT_HEX)
                .expect("a byte that is no digit was seen");
            return Err(ParseIdError::Digit { at });
        }
        Ok(SessionId::from_words(words))
    }

    /// Writes the text form into `out` and returns it as a `&str`, without
    /// allocating.
    pub fn encode<'a>(&self, out: &'a mut [u8; Self::TEXT_LEN]) -> &'a str {
        for (digits, word) in out.chunks_exact_mut(WORD_DIGITS).zip(self.words()) {
            digits[..8].copy_from_slice(&encode8((word >> 32) as u32));
            digits[8..].copy_from_slice(&encode8(word as u32));
        }
        // Every byte is a lowercase hex digit, so this cannot fail.
        std::str::from_utf8(out).expect("hex digits are ASCII")
    }
}

/// A one in each byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of each byte of a word.
const HIGH: u64 = ONES * 0x80;

/// Eight digits of the text form (the first the most significant) as the
/// 32 bits they spell, and a word with the high bit set in each byte that
/// is no lowercase hex digit (zero if all eight are digits): computed for
/// the eight bytes at once (SWAR), without a branch on any of them.
#[inline(always)]
fn decode8(digits: [u8; 8]) -> (u32, u64) {
    // The first digit in the lowest byte.
    let text = u64::from_le_bytes(digits);
    // Each byte below 0x80, so that the sums below carry into no other
    // byte; a byte at or above 0x80 is no digit, whatever its low bits.
    let low = text & !HIGH;
    // The high bit of each byte that is at least `byte`.
    let at_least = |byte: u8| (low + ONES * u64::from(0x80 - byte)) & HIGH;
    let digit = at_least(b'0') & !at_least(b'9' + 1);
    let letter = at_least(b'a') & !at_least(b'f' + 1);
    let bad = (HIGH & !(digit | letter)) | (text & HIGH);
    // A digit's value is its low four bits ('0' is 0x30), a letter's its
    // low four bits plus 9 ('a' is 0x61).
    let nibbles = (text & (ONES * 0x0f)) + (letter >> 7) * 9;
    // The first digit to the highest byte, then pairs, fours and eights of
    // digits folded into bytes, halves and the low word.
    let v = nibbles.swap_bytes();
    let v = (v | (v >> 4)) & 0x00ff_00ff_00ff_00ff;
    let v = (v | (v >> 8)) & 0x0000_ffff_0000_ffff;
    let v = (v | (v >> 16)) & 0x0000_0000_ffff_ffff;
    (v as u32, bad)
}

/// The eight lowercase hex digits of `value`, the most significant first:
/// the inverse of [`decode8`], without a branch on any digit.
#[inline(always)]
fn encode8(value: u32) -> [u8; 8] {
    // One nibble per byte, the most significant in the highest byte.
    let v = u64::from(value);
    let v = (v | (v << 16)) & 0x0000_ffff_0000_ffff;
    let v = (v | (v << 8)) & 0x00ff_00ff_00ff_00ff;
    let v = (v | (v << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // A one in each byte whose nibble is 10 or more (a letter).
    let letters = ((v + ONES * 6) >> 4) & ONES;
    // '0' + n for a digit; 'a' + n - 10, that is '0' + n + 0x27, for a letter.
    let ascii = v + ONES * u64::from(b'0') + letters * 0x27;
    ascii.to_be_bytes()
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

/// The public part of a [`SessionId`] ([`SessionId::public_part`]): its
/// text form is the id's first 16 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PublicPart(u64);

impl fmt::Display for PublicPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [high, low] = [(self.0 >> 32) as u32, self.0 as u32].map(encode8);
        let mut text = [0; WORD_DIGITS];
        text[..8].copy_from_slice(&high);
        text[8..].copy_from_slice(&low);
        // Hex digits only: ASCII.
        f.pad(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
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
    /// The text is not [`TEXT_LEN`](SessionId::TEXT_LEN) bytes long; holds
    /// the length it had.
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

    fn secret(high: u64, low: u64) -> Secret {
        Secret { high, low }
    }

    proptest! {
        #[test]
        fn packing_round_trips(
            index in 0..=INDEX.max(),
            generation in 0..=GENERATION.max(),
            node in 0..=NODE.max(),
            high: u64,
            low: u64,
        ) {
            let id = SessionId::new(index, generation, node, secret(high, low));
            prop_assert_eq!(id.index(), index);
            prop_assert_eq!(id.generation(), generation);
            prop_assert_eq!(u64::from(id.node()), node);
            prop_assert!(id.secret().matches(secret(high, low)));
            prop_assert_eq!(SessionId::from_bytes(id.to_bytes()), id);
        }

        #[test]
        fn text_round_trips_and_is_fixed_visible_ascii(words: [u64; 3]) {
            let id = SessionId::from_words(words);
            let text = id.to_string();
            prop_assert_eq!(text.len(), SessionId::TEXT_LEN);
            prop_assert!(text.bytes().all(|b| (0x21..=0x7e).contains(&b)));
            // Most significant first, as the bytes and as the three words.
            let expected = format!("{:016x}{:016x}{:016x}", words[0], words[1], words[2]);
            prop_assert_eq!(&text, &expected);
            prop_assert_eq!(text.parse::<SessionId>(), Ok(id));
            let mut out = [0; SessionId::TEXT_LEN];
            prop_assert_eq!(id.encode(&mut out), text.as_str());
            let hex: String = id.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
            prop_assert_eq!(hex, text);
        }

        #[test]
        fn parse_never_panics(text in ".{0,60}") {
            let _ = text.parse::<SessionId>();
        }

        #[test]
        fn one_bad_byte_anywhere_is_refused_there(
            words: [u64; 3],
            at in 0..SessionId::TEXT_LEN,
            bad in prop::sample::select(b"ABCDEFGgz-_ \x00\x7f\xff".to_vec()),
        ) {
            let mut text = SessionId::from_words(words).to_string().into_bytes();
            text[at] = bad;
            prop_assert_eq!(
                SessionId::parse_bytes(&text),
                Err(ParseIdError::Digit { at })
            );
        }
    }

    /// Every byte value at every place: the eight-at-a-time decoding takes
    /// exactly the bytes the table calls digits, with their values, and
    /// refuses every other at its place.
    #[test]
    fn every_byte_at_every_place_is_decoded_as_the_table_says() {
        let base = "0123456789abcdef".repeat(3).into_bytes();
        for at in 0..SessionId::TEXT_LEN {
            for byte in 0..=255u8 {
                let mut text = base.clone();
                text[at] = byte;
                let parsed = SessionId::parse_bytes(&text);
                let value = HEX_VALUE[usize::from(byte)];
                if value == NOT_HEX {
                    assert_eq!(parsed, Err(ParseIdError::Digit { at }), "{byte:#x} at {at}");
                } else {
                    let id = parsed.unwrap();
                    let mut out = [0; SessionId::TEXT_LEN];
                    assert_eq!(
                        id.encode(&mut out).as_bytes(),
                        &text[..],
                        "{byte:#x} at {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn parse_rejects_with_the_reason() {
        let len = SessionId::TEXT_LEN;
        assert_eq!("".parse::<SessionId>(), Err(ParseIdError::Length(0)));
        for wrong in [1, 32, len - 1, len + 1, 64] {
            assert_eq!(
                "0".repeat(wrong).parse::<SessionId>(),
                Err(ParseIdError::Length(wrong))
            );
        }
        let mut upper = "0".repeat(len);
        upper.replace_range(5..6, "A");
        assert_eq!(
            upper.parse::<SessionId>(),
            Err(ParseIdError::Digit { at: 5 })
        );
        assert_eq!(
            "g".repeat(len).parse::<SessionId>(),
            Err(ParseIdError::Digit { at: 0 })
        );
        // The first bad byte is the one reported, in the secret half too.
        let mut late = "f".repeat(len);
        late.replace_range(40..41, "x");
        late.replace_range(47..48, "y");
        assert_eq!(
            late.parse::<SessionId>(),
            Err(ParseIdError::Digit { at: 40 })
        );
        // 48 bytes that are not 48 characters: refused by byte, not by char.
        let wide = format!("{}é", "0".repeat(len - 2));
        assert_eq!(wide.len(), len);
        assert_eq!(
            wide.parse::<SessionId>(),
            Err(ParseIdError::Digit { at: len - 2 })
        );
        // An old 32-digit id is refused by its length.
        assert_eq!(
            "0123456789abcdef0123456789abcdef".parse::<SessionId>(),
            Err(ParseIdError::Length(32))
        );
    }

    #[test]
    fn the_node_is_the_first_two_hex_digits() {
        for node in [0u64, 1, 0x2a, 0xff] {
            let id = SessionId::new(
                INDEX.max(),
                GENERATION.max(),
                node,
                secret(u64::MAX, u64::MAX),
            );
            assert_eq!(&id.to_string()[..2], format!("{node:02x}"));
            assert_eq!(u64::from(id.node()), node);
            assert_eq!(id.to_bytes()[0], node as u8);
        }
    }

    #[test]
    fn debug_hides_the_secret() {
        let id = SessionId::new(
            1,
            2,
            0,
            secret(0xdead_beef_dead_beef, 0xfeed_face_feed_face),
        );
        let debug = format!("{id:?}");
        for half in [0xdead_beef_dead_beef_u64, 0xfeed_face_feed_face] {
            assert!(!debug.contains(&format!("{half:x}")), "{debug}");
            assert!(!debug.contains(&half.to_string()), "{debug}");
        }
        assert!(!debug.contains("deadbeef") && !debug.contains("feedface"));
    }
}

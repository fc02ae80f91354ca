//! Typed bit fields packed into one integer.
//!
//! A field is declared by its width and the field it sits directly above, so a
//! layout reads bottom-up and nobody types a shift by hand:
//!
//! ```text
//! const A: Field = Field::lowest(4);
//! const B: Field = A.then(12);   // bits 4..16
//! ```
//!
//! Shifts and masks are computed in `const` context, and [`Field::end`] lets a
//! layout assert at compile time that it fits its word.

/// One bit field of a `u64` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    shift: u32,
    bits: u32,
}

impl Field {
    /// The field at the bottom of the word.
    pub(crate) const fn lowest(bits: u32) -> Field {
        assert!(bits > 0 && bits <= 64, "a field has 1..=64 bits");
        Field { shift: 0, bits }
    }

    /// The field of `bits` bits directly above `self`.
    pub(crate) const fn then(self, bits: u32) -> Field {
        let shift = self.end();
        assert!(
            bits > 0 && shift + bits <= 64,
            "the field does not fit in 64 bits"
        );
        Field { shift, bits }
    }

    /// The field's width in bits.
    pub(crate) const fn bits(self) -> u32 {
        self.bits
    }

    /// One past the field's highest bit.
    pub(crate) const fn end(self) -> u32 {
        self.shift + self.bits
    }

    /// The largest value the field holds.
    pub(crate) const fn max(self) -> u64 {
        if self.bits == 64 {
            u64::MAX
        } else {
            (1 << self.bits) - 1
        }
    }

    /// The field's bits, in place.
    pub(crate) const fn mask(self) -> u64 {
        self.max() << self.shift
    }

    /// The value one unit of this field adds to the word.
    pub(crate) const fn one(self) -> u64 {
        1 << self.shift
    }

    /// Reads the field out of `word`.
    #[inline(always)]
    pub(crate) const fn get(self, word: u64) -> u64 {
        (word >> self.shift) & self.max()
    }

    /// Returns `word` with the field set to `value`, which must fit.
    #[inline(always)]
    pub(crate) const fn set(self, word: u64, value: u64) -> u64 {
        debug_assert!(value <= self.max());
        (word & !self.mask()) | (value << self.shift)
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A: Field = Field::lowest(3);
    const B: Field = A.then(29);
    const C: Field = B.then(32);

    #[test]
    fn layout_is_contiguous() {
        assert_eq!(A.mask() | B.mask() | C.mask(), u64::MAX);
        assert_eq!(A.mask() & B.mask(), 0);
        assert_eq!(B.mask() & C.mask(), 0);
        assert_eq!(C.end(), 64);
        assert_eq!(B.one(), 8);
    }

    proptest! {
        #[test]
        fn fields_round_trip_without_touching_neighbours(
            a in 0..=A.max(), b in 0..=B.max(), c in 0..=C.max(), junk: u64,
        ) {
            let word = C.set(B.set(A.set(junk, a), b), c);
            prop_assert_eq!(A.get(word), a);
            prop_assert_eq!(B.get(word), b);
            prop_assert_eq!(C.get(word), c);
            // Setting one field leaves the others as they were.
            let again = B.set(word, b ^ 1 & B.max());
            prop_assert_eq!(A.get(again), a);
            prop_assert_eq!(C.get(again), c);
        }
    }
}

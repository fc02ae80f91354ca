//! Counters that wrap around: slot generations and free-list tags.
//!
//! Each lives in a fixed bit field (the generation in `id.rs` and
//! `slab/lifecycle.rs`, the tag in `slab/free_list.rs`), and production uses the whole
//! field. A test-only configuration narrows them
//! ([`Builder::test_widths`](crate::Builder::test_widths)) so that
//! wrap-around, which takes 2^30 reuses of one slot or 2^37 free-list
//! updates in production, happens within a few operations under loom and
//! in stress tests. What happens at each bound is in `docs/design.md`.

/// A counter of `bits` bits that wraps from its maximum to zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wrap {
    max: u64,
}

impl Wrap {
    /// A counter of `bits` bits (1 to 63).
    pub(crate) const fn bits(bits: u32) -> Wrap {
        assert!(
            bits >= 1 && bits <= 63,
            "a wrapping counter has 1..=63 bits"
        );
        Wrap {
            max: (1 << bits) - 1,
        }
    }

    /// The largest value.
    #[inline]
    pub(crate) const fn max(self) -> u64 {
        self.max
    }

    /// The value after `value` (which is at most [`max`](Wrap::max)).
    #[inline]
    pub(crate) const fn next(self, value: u64) -> u64 {
        value.wrapping_add(1) & self.max
    }
}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn wraps_to_zero() {
        let two = Wrap::bits(2);
        assert_eq!(two.max(), 3);
        assert_eq!(two.next(2), 3);
        assert_eq!(two.next(3), 0);
        let wide = Wrap::bits(30);
        assert_eq!(wide.next(wide.max()), 0);
        assert_eq!(wide.next(5), 6);
    }
}

//! Text formatted into a buffer on the stack ([`StackText`], feature
//! `otel`): a span's formatted fields are a few bytes each, and a `String` each would be an
//! allocation and a free for each.

use std::fmt;

/// Up to `N` bytes of formatted text; what does not fit is cut at a
/// character's boundary, and [`StackText::cut`] says so.
pub(crate) struct StackText<const N: usize> {
    room: [u8; N],
    len: usize,
    cut: bool,
}

impl<const N: usize> Default for StackText<N> {
    fn default() -> StackText<N> {
        StackText {
            room: [0; N],
            len: 0,
            cut: false,
        }
    }
}

impl<const N: usize> StackText<N> {
    /// `value`'s text, as much of it as fits.
    pub(crate) fn format(value: impl fmt::Display) -> StackText<N> {
        use fmt::Write as _;
        let mut text = StackText::default();
        let _ = write!(text, "{value}");
        text
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only whole `str`s, or their prefixes cut at a char boundary, are
        // ever copied in.
        std::str::from_utf8(&self.room[..self.len]).unwrap_or_default()
    }

    /// Whether some of the text did not fit.
    pub(crate) fn cut(&self) -> bool {
        self.cut
    }
}

impl<const N: usize> fmt::Write for StackText<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = N - self.len;
        let take = match s.len() <= room {
            true => s.len(),
            false => {
                self.cut = true;
                (0..=room)
                    .rev()
                    .find(|at| s.is_char_boundary(*at))
                    .unwrap_or(0)
            }
        };
        self.room[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        match self.cut {
            true => Err(fmt::Error),
            false => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StackText;

    #[test]
    fn text_that_does_not_fit_is_cut_at_a_character() {
        let whole = StackText::<8>::format("abc");
        assert_eq!((whole.as_str(), whole.cut()), ("abc", false));
        let exact = StackText::<3>::format("abc");
        assert_eq!((exact.as_str(), exact.cut()), ("abc", false));
        let cut = StackText::<4>::format("abcé");
        assert_eq!((cut.as_str(), cut.cut()), ("abc", true));
        let parts = StackText::<5>::format(format_args!("{}-{}", "ab", "cdef"));
        assert_eq!((parts.as_str(), parts.cut()), ("ab-cd", true));
    }
}

//! W3C Trace Context as a request carries it: `traceparent`, `tracestate`
//! and `baggage`, in its `params._meta` (the MCP semantic conventions'
//! propagation) or in its HTTP headers. What is checked here is the form
//! the W3C recommendation gives a `traceparent`; a value out of it is
//! ignored, as the recommendation says, and so is a `tracestate` or a
//! `baggage` past its bound (they are kept for as long as the request's
//! span is).
//!
//! ```text
//! traceparent  00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03
//!              |  |                                |                |
//!              |  trace-id: 32 lowercase hex,      parent-id: 16    trace-flags: any 2 hex
//!              |  not all zero                     lowercase hex,   digits (01 sampled; 02,
//!              version: 2 lowercase hex, not ff;   not all zero     level 2's random trace-id
//!              00 is exactly 55 bytes, a later                      flag, and bits not defined
//!              one at least 55, then `-` or the end                 yet are all allowed)
//! ```

/// `tracestate`'s bound: the recommendation asks every vendor to pass on
/// at least 512 characters; longer ones are dropped whole (a cut one would
/// not parse).
pub(crate) const TRACESTATE_BYTES: usize = 512;

/// `baggage`'s bound: the W3C Baggage limit on one header.
pub(crate) const BAGGAGE_BYTES: usize = 8192;

/// Whether `value` is a `traceparent` a receiver may use: the form above.
pub(crate) fn is_valid_traceparent(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() < 55 {
        return false;
    }
    let lower_hex = |range: std::ops::Range<usize>| {
        bytes[range]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    };
    let not_zero = |range: std::ops::Range<usize>| bytes[range].iter().any(|b| *b != b'0');
    let dashes = bytes[2] == b'-' && bytes[35] == b'-' && bytes[52] == b'-';
    let version_ok = lower_hex(0..2) && &bytes[0..2] != b"ff";
    let length_ok = match &bytes[0..2] {
        b"00" => bytes.len() == 55,
        // A later version may add fields after a `-`.
        _ => bytes.len() == 55 || bytes[55] == b'-',
    };
    dashes
        && version_ok
        && length_ok
        && lower_hex(3..35)
        && not_zero(3..35)
        && lower_hex(36..52)
        && not_zero(36..52)
        && lower_hex(53..55)
}

/// A `tracestate` or `baggage` kept only within its bound and made of
/// visible ASCII, spaces and tabs (their grammars allow no more).
pub(crate) fn is_within(value: &str, bound: usize) -> bool {
    value.len() <= bound
        && value
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn every_trace_flags_value_is_accepted() {
        for flags in 0..=255u8 {
            let value = format!("{}{flags:02x}", &SAMPLED[..53]);
            assert!(is_valid_traceparent(&value), "{value}");
        }
        // The Python OpenTelemetry SDK's level-2 "random" flag with sampled.
        assert!(is_valid_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03"
        ));
    }

    #[test]
    fn the_recommendations_invalid_forms_are_refused() {
        let zero_trace = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        let zero_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
        let upper = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
        let version_ff = "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let version_00_longer = format!("{SAMPLED}-extra");
        let short_trace = "00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01";
        let signed = "00-+bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let flags_one_digit = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1";
        for bad in [
            zero_trace,
            zero_parent,
            upper,
            version_ff,
            &version_00_longer,
            short_trace,
            signed,
            flags_one_digit,
            "",
        ] {
            assert!(!is_valid_traceparent(bad), "{bad}");
        }
    }

    #[test]
    fn a_later_version_may_carry_more_fields() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(is_valid_traceparent(later));
        assert!(is_valid_traceparent(&format!("{later}-what-comes")));
        assert!(!is_valid_traceparent(&format!("{later}what")));
    }

    #[test]
    fn tracestate_and_baggage_are_kept_within_their_bounds() {
        assert!(is_within(
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
            TRACESTATE_BYTES
        ));
        assert!(!is_within(
            &"a".repeat(TRACESTATE_BYTES + 1),
            TRACESTATE_BYTES
        ));
        assert!(!is_within("a=b\nc=d", BAGGAGE_BYTES));
    }
}

//! The wall clock, as the layer's records keep it: milliseconds since the
//! Unix epoch. What travels or outlives the process (a task's timestamps, a
//! sealed state's expiry, a bus frame's sending time, when a share's place
//! frees) is stamped with it; what only measures a wait here uses the
//! monotonic clocks (tokio's, the core's).

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch, now (0 for a clock set before 1970,
/// saturated past `u64::MAX`, in 2554): OTLP's timestamps.
#[cfg(feature = "otel")]
pub(crate) fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Milliseconds since the Unix epoch, now (0 for a clock set before 1970,
/// saturated past `u64::MAX`).
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

//! Waiting for a condition in a test.

use std::time::{Duration, Instant};

/// Waits until `condition` holds or a generous deadline (20 s) passes;
/// returns whether it held. Not a timing threshold: only an upper bound on
/// waiting.
pub async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    condition()
}

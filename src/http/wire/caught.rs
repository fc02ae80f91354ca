//! The text of a panic caught at one of the layer's boundaries (an
//! application's handler, its reply stream, [`App::open`](crate::http::App::open)),
//! for the one log line that says what failed.

use std::any::Any;

/// The message a caught panic carries, or a placeholder for a payload that
/// is not a string.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic>")
}

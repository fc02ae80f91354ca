//! Panics caught at the core's boundaries (a close callback, a value's or an
//! item's `Drop`) so that the walk that met them goes on, and raised again
//! once it is done: one panic costs no other session's cleanup.

use std::any::Any;

/// The first panic a walk caught, to be raised again once it is done.
pub(crate) type Caught = Option<Box<dyn Any + Send>>;

/// Raises `caught` again, unless the thread is already unwinding (a second
/// panic would abort the process): then it is swallowed.
pub(crate) fn resume(caught: Caught) {
    if let Some(panic) = caught {
        if !std::thread::panicking() {
            std::panic::resume_unwind(panic);
        }
    }
}

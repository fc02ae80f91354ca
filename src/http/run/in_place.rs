//! A future boxed where it is made ([`boxed`]).

use std::future::Future;
use std::pin::Pin;

/// `make()`'s future in a box of its own, allocated first so that the
/// future is written straight into it.
///
/// A future not yet polled holds only what it was called with, but its
/// type is as large as its largest state (the routing's is about 7 KiB):
/// made on the stack and then moved into a box (`Box::pin(make())`), all
/// of that size is copied. Made by a call whose result goes into memory
/// just allocated, the optimizer writes it there (LLVM's call-slot
/// optimization: `python3 benches/relay_callgrind.py` read about 490
/// instructions less a request, in both eras, from the routing's box).
pub(crate) fn boxed<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    let mut slot = Box::new_uninit();
    slot.write(make());
    // SAFETY: `slot` was written on the line above (`Box::write`, which
    // says so without `unsafe`, is newer than the crate's MSRV, 1.85).
    Box::into_pin(unsafe { slot.assume_init() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::{Context, Poll, Waker};

    #[test]
    fn the_future_made_is_the_one_boxed() {
        let mut future = boxed(|| async { 7 });
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(future.as_mut().poll(&mut cx), Poll::Ready(7));
    }
}

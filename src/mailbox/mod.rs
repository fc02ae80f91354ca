//! [`Mailbox`]: a bounded queue that many threads push into, one
//! [`Consumer`] pops from, and any thread may close, once. What a listen
//! stream is made of: every publisher pushes an event into each matching
//! listener's mailbox without a lock and without allocating, the listener's
//! stream pops, and the listener's end closes it.
//!
//! Its parts: the state word that every operation decides on, with its
//! diagram (`word.rs`); the mailbox and its consumer, and the push
//! (`queue.rs`); the consumer's pop and take (`consumer.rs`); signals
//! (`signals.rs`); the close and the walk that drops what is queued
//! (`close.rs`). `docs/design.md` states the orderings, the progress of
//! each operation and what a panicking `Drop` of an item does.

mod close;
mod consumer;
mod queue;
mod signals;
mod word;

pub use close::Closing;
pub use consumer::Popped;
pub use queue::{CapacityError, Consumer, Mailbox, Pushed};
pub use signals::{Raised, Signal, Signals, Taken};
pub use word::{MAX_CAPACITY, SIGNALS};

#[cfg(all(test, not(sessionreg_loom)))]
mod tests;

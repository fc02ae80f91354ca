//! What a manager shares with its sessions' transports and its reaper: the
//! registry, and whether the manager is shutting down.
//!
//! Each of them is handed the state it needs (the transports and the reaper
//! hold it weakly, so dropping the manager drops the registry, which ends
//! every session still live with [`Reason::Shutdown`](sessionreg::Reason::Shutdown));
//! none of them reaches back into the manager.

use crate::entry::Entry;
use sessionreg::Registry;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;

/// The registry and the shutdown flag of one manager.
pub(crate) struct State {
    registry: Registry<Entry>,
    closing: AtomicBool,
    token: Option<CancellationToken>,
}

impl State {
    /// The state of a manager over `registry`; `token` is the server's
    /// cancellation token, if the manager was given one.
    pub(crate) fn new(registry: Registry<Entry>, token: Option<CancellationToken>) -> State {
        State {
            registry,
            closing: AtomicBool::new(false),
            token,
        }
    }

    /// The sessions.
    pub(crate) fn registry(&self) -> &Registry<Entry> {
        &self.registry
    }

    /// From now on, [`closing`](Self::closing) is true.
    pub(crate) fn begin_shutdown(&self) {
        // SeqCst, paired with the load in `closing`: a create that misses
        // the flag inserted before the caller's sweep began, and the sweep
        // ends it.
        self.closing.store(true, Ordering::SeqCst);
    }

    /// Whether the manager is shutting down: [`begin_shutdown`] was called,
    /// or the server's cancellation token (if one was given) is cancelled.
    ///
    /// [`begin_shutdown`]: Self::begin_shutdown
    pub(crate) fn closing(&self) -> bool {
        // Pairs with the SeqCst store in `begin_shutdown`.
        self.closing.load(Ordering::SeqCst)
            || self
                .token
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
    }
}

//! The kinds of list whose changes a client may hear ([`ListKind`]): the
//! one list of them every part of the layer uses (the filter a listen
//! stream asks with, the topics of the index, a legacy session's `GET`
//! stream, the signal each raises in a listener's mailbox, the change a
//! publication of it is: `Change::of_list`).

use crate::mailbox::{Signal, SIGNALS};

/// A list whose changes a client hears as one notification, however many
/// changes were made before it read (each kind is a signal in a listener's
/// mailbox: raised, not queued).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ListKind {
    Tools,
    Prompts,
    Resources,
}

// Each kind is one of the mailbox's signals: the mailbox must carry them all.
const _: () = assert!(ListKind::ALL.len() <= SIGNALS as usize);

impl ListKind {
    /// Every kind, in the order of their signals.
    pub(crate) const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources];

    /// Its place in [`ALL`](Self::ALL) (and its signal's index).
    pub(crate) const fn index(self) -> usize {
        self as usize
    }

    /// Its member of a listen filter (`notifications`), as the client sends
    /// it and the acknowledgement echoes it.
    pub(crate) fn filter_key(self) -> &'static str {
        match self {
            ListKind::Tools => "toolsListChanged",
            ListKind::Prompts => "promptsListChanged",
            ListKind::Resources => "resourcesListChanged",
        }
    }

    /// The signal its changes raise in a listener's mailbox.
    pub(crate) fn signal(self) -> Signal {
        match Signal::new(self.index() as u32) {
            Some(signal) => signal,
            // Asserted above: every kind's index is under SIGNALS.
            None => unreachable!("a list kind past the mailbox's signals"),
        }
    }

    /// The kind whose changes raise `signal`.
    pub(crate) fn of_signal(signal: Signal) -> ListKind {
        ListKind::ALL[signal.index() as usize % ListKind::ALL.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_own_signal_and_filter_key() {
        for (at, kind) in ListKind::ALL.into_iter().enumerate() {
            assert_eq!(kind.index(), at);
            assert_eq!(ListKind::of_signal(kind.signal()), kind);
            for other in ListKind::ALL.into_iter().filter(|k| *k != kind) {
                assert_ne!(kind.signal(), other.signal());
                assert_ne!(kind.filter_key(), other.filter_key());
            }
        }
    }
}

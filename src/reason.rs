//! Why a session ended, and why a lookup found nothing.

use std::fmt;

/// Why a session ended: the reason its one terminate call won with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The client ended it (an HTTP `DELETE`).
    Deleted,
    /// Nothing was in flight and it saw no activity for the idle timeout.
    IdleTimeout,
    /// Its handler failed or panicked.
    Failed,
    /// The server shut down.
    Shutdown,
    /// Its first request was rejected after the session was created.
    Rejected,
    /// The client went away (a stream it held open closed).
    Disconnected,
    /// It fell too far behind: its queue filled (a listen stream whose
    /// client does not read).
    Lagged,
    /// The node is draining, for a rolling restart.
    Drained,
    /// A service it needed went away (a fleet's bus, for a listen stream).
    Unavailable,
    /// The credential it was opened with expired (an access token's `exp`,
    /// plus the leeway, passed: a listen stream).
    CredentialExpired,
    /// The credential it was opened with was withdrawn (a static token
    /// removed by a reload of the token set: a listen stream).
    CredentialWithdrawn,
}

impl Reason {
    /// Every reason, in declaration order.
    pub const ALL: [Reason; 11] = [
        Reason::Deleted,
        Reason::IdleTimeout,
        Reason::Failed,
        Reason::Shutdown,
        Reason::Rejected,
        Reason::Disconnected,
        Reason::Lagged,
        Reason::Drained,
        Reason::Unavailable,
        Reason::CredentialExpired,
        Reason::CredentialWithdrawn,
    ];

    /// The reasons a session of the HTTP layer (or a registry used as the
    /// core's docs show) ends for: the labels of
    /// `sessionreg_sessions_terminated_total`.
    pub const SESSION: [Reason; 5] = [
        Reason::Deleted,
        Reason::IdleTimeout,
        Reason::Failed,
        Reason::Shutdown,
        Reason::Rejected,
    ];

    /// The metric label value: `deleted`, `idle_timeout`, `failed`,
    /// `shutdown`, `rejected`, `disconnected`, `lagged`, `drained`,
    /// `unavailable`, `credential_expired` or `credential_withdrawn`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::Deleted => "deleted",
            Reason::IdleTimeout => "idle_timeout",
            Reason::Failed => "failed",
            Reason::Shutdown => "shutdown",
            Reason::Rejected => "rejected",
            Reason::Disconnected => "disconnected",
            Reason::Lagged => "lagged",
            Reason::Drained => "drained",
            Reason::Unavailable => "unavailable",
            Reason::CredentialExpired => "credential_expired",
            Reason::CredentialWithdrawn => "credential_withdrawn",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a lookup by id found no live session. Every cause answers the same to
/// a client (HTTP 404); they are told apart only in [`Stats`](crate::Stats).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Miss {
    /// The text was not a session id at all.
    Malformed,
    /// Nothing here can show that this id was ever minted here: another
    /// node's id, a slot or generation not reached yet, or an id whose slot
    /// has moved on too far (two sessions on) for its secret to be checked.
    Unknown,
    /// The session this id named has ended; its secret is proven (against
    /// the session's own while its slot holds it, or against the digest its
    /// slot keeps of the previous session's secret), so the id was minted
    /// here.
    Stale,
    /// The slot and generation are live, or ended and still checkable, but
    /// the secret is wrong.
    Forged,
    /// The session had been idle past the timeout; this lookup ended it.
    Expired,
    /// The session is live, but bound to someone else: the check of a
    /// [`Registry::lookup_if`](crate::Registry::lookup_if) refused it (in
    /// the HTTP layer, a request from another principal than the one that
    /// opened the session). Counted here, for the operator, but exported by
    /// [`metrics`](crate::metrics) as [`Unknown`](Miss::Unknown): the
    /// answer is the same as to an unknown id, and a metric that told them
    /// apart would tell whoever reads it that an id is live.
    Principal,
}

impl Miss {
    /// Every cause, in declaration order.
    pub const ALL: [Miss; 6] = [
        Miss::Malformed,
        Miss::Unknown,
        Miss::Stale,
        Miss::Forged,
        Miss::Expired,
        Miss::Principal,
    ];

    /// The metric label value: `malformed`, `unknown`, `stale`, `forged`,
    /// `expired` or `principal`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Miss::Malformed => "malformed",
            Miss::Unknown => "unknown",
            Miss::Stale => "stale",
            Miss::Forged => "forged",
            Miss::Expired => "expired",
            Miss::Principal => "principal",
        }
    }

    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Miss::Malformed => "malformed session id",
            Miss::Unknown => "unknown session id",
            Miss::Stale => "the session has ended",
            Miss::Forged => "session id with a wrong secret",
            Miss::Expired => "the session expired",
            Miss::Principal => "the session belongs to someone else",
        })
    }
}

impl std::error::Error for Miss {}

#[cfg(all(test, not(sessionreg_loom)))]
mod tests {
    use super::*;

    #[test]
    fn indexes_follow_all() {
        for (i, reason) in Reason::ALL.iter().enumerate() {
            assert_eq!(reason.index(), i);
        }
        for (i, cause) in Miss::ALL.iter().enumerate() {
            assert_eq!(cause.index(), i);
        }
    }
}

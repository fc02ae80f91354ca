//! Which `Origin` and `Host` values the endpoint answers, changeable at run
//! time: the allow-lists live behind an [`ArcSwap`], so an operator can
//! swap new ones in (e.g. on SIGHUP) while every request reads the current
//! ones without taking a lock.
//!
//! DNS-rebinding protection ([`RebindingProtection::Auto`], the default)
//! restricts `Host` and `Origin` to loopback names (plus the allow-lists)
//! unless the manager knows it is served on a non-loopback address: when
//! [`serve`](super::serve) or [`SessionManager::set_local_addr`] said so.
//! Mounted anywhere else (axum, a hand-written hyper loop) it is on until
//! told otherwise, as rmcp does: a local server is safe wherever it is
//! mounted, and a public one names its hosts with
//! [`Builder::allow_host`](super::Builder::allow_host) (or turns the
//! protection off).

use super::app::App;
use super::rules::OriginPolicy;
use super::{RebindingProtection, SessionManager};
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// The allow-lists, and the two policies derived from them.
#[derive(Debug)]
pub(super) struct Policies {
    /// Only the allow-lists (protection off, or served on a public address).
    open: OriginPolicy,
    /// The allow-lists plus loopback names.
    loopback: OriginPolicy,
}

impl Policies {
    pub(super) fn new(allowed_origins: Vec<String>, allowed_hosts: Vec<String>) -> Policies {
        let open = OriginPolicy {
            allowed_origins,
            allowed_hosts,
            loopback_only: false,
        };
        let loopback = OriginPolicy {
            loopback_only: true,
            ..open.clone()
        };
        Policies { open, loopback }
    }
}

/// Where the manager is served, as far as it knows.
#[derive(Debug)]
pub(super) struct Bound(AtomicU8);

impl Default for Bound {
    fn default() -> Bound {
        Bound(AtomicU8::new(UNKNOWN))
    }
}

const UNKNOWN: u8 = 0;
const LOOPBACK: u8 = 1;
const PUBLIC: u8 = 2;

impl Bound {
    pub(super) fn set(&self, addr: std::net::SocketAddr) {
        let bound = if addr.ip().is_loopback() {
            LOOPBACK
        } else {
            PUBLIC
        };
        // Relaxed: a flag read on each request; no other memory hangs on it.
        self.0.store(bound, Ordering::Relaxed);
    }

    fn is_public(&self) -> bool {
        self.0.load(Ordering::Relaxed) == PUBLIC
    }
}

/// The policy in force for one request (an owned snapshot: cheap, and free
/// to hold across an `.await`).
pub(super) struct Current {
    /// A guard, not an `Arc` clone: no write to the shared count, which two
    /// worker threads would pass back and forth on every request. Dropped
    /// before the request's first await.
    policies: arc_swap::Guard<Arc<Policies>>,
    loopback: bool,
}

impl std::ops::Deref for Current {
    type Target = OriginPolicy;

    fn deref(&self) -> &OriginPolicy {
        if self.loopback {
            &self.policies.loopback
        } else {
            &self.policies.open
        }
    }
}

/// The swappable allow-lists of a manager.
#[derive(Debug)]
pub(super) struct Access {
    policies: ArcSwap<Policies>,
    pub(super) bound: Bound,
    protection: RebindingProtection,
}

impl Access {
    pub(super) fn new(policies: Policies, protection: RebindingProtection) -> Access {
        Access {
            policies: ArcSwap::from_pointee(policies),
            bound: Bound::default(),
            protection,
        }
    }

    pub(super) fn current(&self) -> Current {
        let loopback = match self.protection {
            RebindingProtection::On => true,
            RebindingProtection::Off => false,
            RebindingProtection::Auto => !self.bound.is_public(),
        };
        Current {
            policies: self.policies.load(),
            loopback,
        }
    }

    fn replace(&self, edit: impl Fn(&Policies) -> Policies) {
        self.policies.rcu(|old| Arc::new(edit(old)));
    }
}

impl<A: App> SessionManager<A> {
    /// Replaces the `Origin` allow-list (see
    /// [`Builder::allow_origin`](super::Builder::allow_origin)); requests
    /// already past the check are not affected. Lock-free for the requests
    /// that read it.
    pub fn set_allowed_origins(&self, origins: Vec<String>) {
        self.inner
            .access
            .replace(|old| Policies::new(origins.clone(), old.open.allowed_hosts.clone()));
    }

    /// Replaces the `Host` allow-list (see
    /// [`Builder::allow_host`](super::Builder::allow_host)).
    pub fn set_allowed_hosts(&self, hosts: Vec<String>) {
        self.inner
            .access
            .replace(|old| Policies::new(old.open.allowed_origins.clone(), hosts.clone()));
    }

    /// The allow-lists in force: `(origins, hosts)`.
    pub fn allowed(&self) -> (Vec<String>, Vec<String>) {
        let policies = self.inner.access.policies.load();
        (
            policies.open.allowed_origins.clone(),
            policies.open.allowed_hosts.clone(),
        )
    }
}

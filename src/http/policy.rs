//! Which `Origin` and `Host` values the endpoint answers, changeable at run
//! time: the allow-lists live behind an [`ArcSwap`], so an operator can
//! swap new ones in (e.g. on SIGHUP) while every request reads the current
//! ones without taking a lock.
//!
//! A present `Origin` is checked on every request, whatever the bind: it
//! must be on the allow-list, or be a loopback origin while the loopback
//! rule below is on; any other gets 403.
//!
//! DNS-rebinding protection ([`RebindingProtection::Auto`], the default)
//! also restricts `Host` to loopback names (plus the allow-list) unless the
//! manager knows it is bound to a *public* address: one that is routable on
//! the internet, told by [`serve`](super::serve) or
//! [`SessionManager::set_bind_address`]. A loopback, unspecified (`0.0.0.0`,
//! `::`, what containers bind), private (RFC 1918, CGNAT, IPv6 unique local)
//! or link-local bind is not public: a browser on that network can reach
//! it, so the rule stays on, and a server reached there by a name lists the
//! name with [`Builder::allow_host`](super::Builder::allow_host). Mounted
//! anywhere else (axum, a hand-written hyper loop) the rule is on until told
//! otherwise, as rmcp does. A public bind, or
//! [`RebindingProtection::Off`], lets any `Host` in (unless the allow-list
//! names them); the manager then logs once what it lets in.

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
/// Loopback, unspecified, private or link-local.
const LOCAL: u8 = 1;
const PUBLIC: u8 = 2;

/// Whether `ip` is routable on the internet: not loopback, unspecified
/// (`0.0.0.0` accepts on every interface, loopback included), private
/// (10/8, 172.16/12, 192.168/16, shared 100.64/10, IPv6 fc00::/7) or
/// link-local (169.254/16, fe80::/10). An IPv4-mapped IPv6 address is
/// judged as its IPv4 one.
pub(super) fn is_public(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            let shared = a == 100 && (b & 0xc0) == 64;
            !(v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || shared)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            let unique_local = (first & 0xfe00) == 0xfc00;
            let link_local = (first & 0xffc0) == 0xfe80;
            !(v6.is_loopback() || v6.is_unspecified() || unique_local || link_local)
        }
    }
}

impl Bound {
    /// Records the bind address; returns whether it is a public one.
    pub(super) fn set(&self, addr: std::net::SocketAddr) -> bool {
        let public = is_public(addr.ip());
        let bound = if public { PUBLIC } else { LOCAL };
        // Relaxed: a flag read on each request; no other memory hangs on it.
        self.0.store(bound, Ordering::Relaxed);
        public
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

    pub(super) fn protection(&self) -> RebindingProtection {
        self.protection
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

#[cfg(test)]
mod tests {
    use super::is_public;

    #[test]
    fn only_internet_routable_binds_are_public() {
        for local in [
            "127.0.0.1",
            "0.0.0.0",
            "10.0.0.11",
            "172.16.5.4",
            "172.31.255.255",
            "192.168.1.2",
            "100.64.0.1",
            "100.127.255.254",
            "169.254.1.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd12:3456::1",
            "fc00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(local.parse().unwrap()), "{local}");
        }
        for public in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "192.0.2.7",
            "2001:db8::1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }
}

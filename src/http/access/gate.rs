//! The gate every request passes first ([`Access`]): its `Origin` and
//! `Host` against the allow-lists ([`AllowLists`]) and the DNS-rebinding
//! protection ([`RebindingProtection`]), swappable while serving.

use super::origins::{self, Forbidden, OriginPolicy};
use crate::http::wire::reject::Reject;
use crate::http::wire::request_headers::RequestHeaders;
use arc_swap::ArcSwap;
use http::{HeaderValue, Uri};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Whether `Host` is restricted to loopback names (DNS-rebinding
/// protection). A present `Origin` is checked whatever this says: it must
/// be allowed ([`Builder::allow_origin`](crate::http::Builder::allow_origin),
/// or a loopback origin while the restriction is on), or the request gets
/// 403.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RebindingProtection {
    /// On unless the manager knows it is bound to a public
    /// (internet-routable) address (see
    /// [`SessionManager::set_bind_address`](crate::http::SessionManager::set_bind_address);
    /// [`serve`](crate::http::serve) sets it). A loopback, unspecified
    /// (`0.0.0.0`), private or link-local bind keeps it on, and so does
    /// being mounted in axum or on a hand-written hyper loop: a server
    /// reached by a name lists it with
    /// [`Builder::allow_host`](crate::http::Builder::allow_host), or says
    /// [`Off`](RebindingProtection::Off).
    #[default]
    Auto,
    /// Always restrict to loopback hosts (plus the allow-lists).
    On,
    /// Never restrict `Host` to loopback (a host allow-list, if any, still
    /// applies; so does the `Origin` check).
    Off,
}

/// The allow-lists in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowLists {
    /// Exact origins allowed besides loopback ones (e.g.
    /// `https://app.example`).
    pub origins: Vec<String>,
    /// Hosts (`name` or `name:port`) allowed besides loopback ones.
    pub hosts: Vec<String>,
}

/// The allow-lists, and the two policies derived from them.
#[derive(Debug)]
struct Policies {
    /// Only the allow-lists (protection off, or bound to a public address).
    open: OriginPolicy,
    /// The allow-lists plus loopback names.
    loopback: OriginPolicy,
}

impl Policies {
    fn new(lists: AllowLists) -> Policies {
        let open = OriginPolicy {
            allowed_origins: lists.origins,
            allowed_hosts: lists.hosts,
            loopback_only: false,
        };
        let loopback = OriginPolicy {
            loopback_only: true,
            ..open.clone()
        };
        Policies { open, loopback }
    }

    fn lists(&self) -> AllowLists {
        AllowLists {
            origins: self.open.allowed_origins.clone(),
            hosts: self.open.allowed_hosts.clone(),
        }
    }
}

/// Where the manager is bound, as far as it knows.
const UNKNOWN: u8 = 0;
/// Loopback, unspecified, private or link-local.
const LOCAL: u8 = 1;
const PUBLIC: u8 = 2;

/// The swappable allow-lists of a manager, and what it knows of its bind.
#[derive(Debug)]
pub(crate) struct Access {
    policies: ArcSwap<Policies>,
    bound: AtomicU8,
    protection: RebindingProtection,
}

impl Access {
    pub(crate) fn new(lists: AllowLists, protection: RebindingProtection) -> Access {
        Access {
            policies: ArcSwap::from_pointee(Policies::new(lists)),
            bound: AtomicU8::new(UNKNOWN),
            protection,
        }
    }

    /// Checks a request's `Origin` and `Host` (as the one pass over its
    /// headers found them); on success, the `Origin` to answer with CORS
    /// headers (one allowed by name), if any.
    pub(crate) fn check(
        &self,
        seen: &RequestHeaders<'_>,
        uri: &Uri,
    ) -> Result<Option<HeaderValue>, Reject> {
        let loopback = match self.protection {
            RebindingProtection::On => true,
            RebindingProtection::Off => false,
            // Relaxed: a flag read on each request; no other memory hangs
            // on it.
            RebindingProtection::Auto => self.bound.load(Ordering::Relaxed) != PUBLIC,
        };
        // A guard, not an `Arc` clone: no write to the shared count, which
        // two worker threads would pass back and forth on every request.
        let policies = self.policies.load();
        let policy = if loopback {
            &policies.loopback
        } else {
            &policies.open
        };
        // The origin that passed is allowed by name: CORS answers it.
        let origin = policy
            .check(seen, uri)
            .map_err(|forbidden| match forbidden {
                Forbidden::Origin => Reject::ForbiddenOrigin,
                Forbidden::Host => Reject::ForbiddenHost,
                Forbidden::Twice(name) => Reject::DuplicateHeader(name),
            })?;
        Ok(origin.cloned())
    }

    /// Records the address the listener is bound to; logs what a public
    /// one lets in. See [`SessionManager::set_bind_address`](crate::http::SessionManager::set_bind_address).
    pub(crate) fn set_bind_address(&self, addr: SocketAddr) {
        let public = origins::is_public(addr.ip());
        // Relaxed: as in `check`.
        self.bound
            .store(if public { PUBLIC } else { LOCAL }, Ordering::Relaxed);
        if public && self.protection == RebindingProtection::Auto {
            let lists = self.lists();
            let or_none = |list: &[String], none: &str| {
                if list.is_empty() {
                    none.to_string()
                } else {
                    list.join(", ")
                }
            };
            tracing::info!(
                %addr,
                hosts = %or_none(&lists.hosts, "any"),
                origins = %or_none(&lists.origins, "none (requests with an Origin get 403)"),
                "bound to a public address: Host is not restricted to loopback"
            );
        }
    }

    /// The allow-lists in force.
    pub(crate) fn lists(&self) -> AllowLists {
        self.policies.load().lists()
    }

    /// Replaces what `edit` changes of the allow-lists; requests already past
    /// the check are not affected.
    pub(crate) fn replace(&self, edit: impl Fn(&mut AllowLists)) {
        self.policies.rcu(|old| {
            let mut lists = old.lists();
            edit(&mut lists);
            Arc::new(Policies::new(lists))
        });
    }
}

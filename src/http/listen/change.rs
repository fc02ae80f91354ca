//! What a server tells its listening clients ([`Change`]) and who may hear
//! it ([`Audience`]): a publication, as the publisher hands it to every
//! endpoint (and, in a fleet, to every node) that has listeners.

use super::kind::ListKind;
use crate::http::wire::principal::Principal;
use crate::mailbox::Signal;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A change the server tells its clients of: the notification kinds of
/// `subscriptions/listen` (SEP-2575), which are also the legacy era's
/// `list_changed` and `resources/updated` notifications.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated` for this resource.
    ResourceUpdated {
        /// The resource's URI, as clients name it in `resourceSubscriptions`
        /// (compared as an exact string).
        uri: String,
    },
}

impl Change {
    /// The JSON-RPC method of its notification.
    pub fn method(&self) -> &'static str {
        match self {
            Change::ToolsListChanged => "notifications/tools/list_changed",
            Change::PromptsListChanged => "notifications/prompts/list_changed",
            Change::ResourcesListChanged => "notifications/resources/list_changed",
            Change::ResourceUpdated { .. } => "notifications/resources/updated",
        }
    }
}

/// Who may hear a change: everyone (a list of tools changed), or only some
/// principals (a resource only its owner may read). A listener of another
/// principal hears nothing of it, whichever node it listens on: the
/// audience travels with the change.
///
/// On a server without authentication every request's principal is none,
/// and only [`Audience::Everyone`] reaches it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "audience", content = "principals", rename_all = "snake_case")]
pub enum Audience {
    /// Every listener that asked for the change's kind.
    Everyone,
    /// Only the listeners of these principals.
    Principals(Vec<Principal>),
}

impl Audience {
    /// Only the listeners of `principal`.
    pub fn principal(principal: Principal) -> Audience {
        Audience::Principals(vec![principal])
    }

    /// Whether a listener of `owner` may hear it.
    pub(crate) fn admits(&self, owner: Option<&Principal>) -> bool {
        match self {
            Audience::Everyone => true,
            Audience::Principals(allowed) => owner.is_some_and(|o| allowed.contains(o)),
        }
    }
}

/// One change published to one audience: what every listener's queue holds
/// (shared, one allocation per publication) and what a fleet's bus carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Publication {
    pub(crate) change: Change,
    pub(crate) audience: Audience,
}

/// A publication as the listeners' queues share it: one allocation per
/// publication, whatever the number of listeners, with the part of its
/// notification every listener's frame repeats written once.
pub(crate) type Shared = Arc<Prepared>;

/// A publication, and the JSON its notifications share.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) publication: Publication,
    /// The notification's params after `_meta` (`,"uri":"..."`, or
    /// nothing), JSON-escaped once.
    pub(crate) params_tail: String,
    /// A list change's signal in each listener's mailbox (raised, not
    /// queued: `inbox.rs`); `None` for a resource's update.
    pub(crate) signal: Option<Signal>,
}

impl Change {
    /// The change of a list of `kind`.
    pub(crate) fn of_list(kind: ListKind) -> Change {
        match kind {
            ListKind::Tools => Change::ToolsListChanged,
            ListKind::Prompts => Change::PromptsListChanged,
            ListKind::Resources => Change::ResourcesListChanged,
        }
    }

    /// The list it says changed; `None` for a resource's update.
    pub(crate) fn list_kind(&self) -> Option<ListKind> {
        match self {
            Change::ToolsListChanged => Some(ListKind::Tools),
            Change::PromptsListChanged => Some(ListKind::Prompts),
            Change::ResourcesListChanged => Some(ListKind::Resources),
            Change::ResourceUpdated { .. } => None,
        }
    }
}

impl Prepared {
    pub(crate) fn new(publication: Publication) -> Shared {
        let params_tail = match &publication.change {
            Change::ResourceUpdated { uri } => format!(
                ",\"uri\":{}",
                serde_json::to_string(uri).unwrap_or_else(|_| "\"\"".into())
            ),
            _ => String::new(),
        };
        // A list change raises its kind's signal (list changes coalesce:
        // two before the stream writes say no more than one), so it never
        // takes a place in a listener's queue; a resource's update is queued.
        let signal = publication.change.list_kind().map(ListKind::signal);
        Arc::new(Prepared {
            publication,
            params_tail,
            signal,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_list_change_is_its_kinds_and_an_update_is_none() {
        for kind in ListKind::ALL {
            assert_eq!(Change::of_list(kind).list_kind(), Some(kind));
        }
        let update = Change::ResourceUpdated {
            uri: "a://b".into(),
        };
        assert_eq!(update.list_kind(), None, "a resource's update is queued");
    }
}

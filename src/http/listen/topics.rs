//! Who listens to what ([`Topics`]): for each kind of change, and for each
//! resource URI, the set of its listeners (2026-07-28 listen streams) and
//! legacy sessions (their `GET` stream, their `resources/subscribe`), so
//! that a publication visits only the ones that asked for it: fan-out costs
//! O(matching listeners), whatever else is listening.
//!
//! Reads take no lock: the index is [`papaya`]'s concurrent maps, whose
//! reads never block (a publisher pins, iterates and lets go). The three
//! kinds are each a concurrent set (joins and leaves cost O(1)); each URI's
//! members are an immutable slice replaced whole on a join or a leave, one
//! atomic step per URI (`compute`), so a URI's entry is removed exactly when
//! its last member leaves and no join can land in a removed entry. A URI's
//! slice is small in practice (the listeners of one resource); the bound on
//! listeners bounds it.

use super::change::Change;
use crate::SessionId;
use papaya::{Compute, HashMap, HashSet, Operation};
use std::sync::Arc;

/// What a listener (or a legacy session) can listen to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Topic {
    Tools,
    Prompts,
    Resources,
    Uri(Box<str>),
}

impl Topic {
    /// The topic a change is published on.
    pub(crate) fn of(change: &Change) -> Topic {
        match change {
            Change::ToolsListChanged => Topic::Tools,
            Change::PromptsListChanged => Topic::Prompts,
            Change::ResourcesListChanged => Topic::Resources,
            Change::ResourceUpdated { uri } => Topic::Uri(uri.as_str().into()),
        }
    }
}

/// One member of a topic: a listen stream, or a legacy session, by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Member {
    Listener(SessionId),
    Session(SessionId),
}

/// The index of one endpoint.
#[derive(Default)]
pub(crate) struct Topics {
    tools: HashSet<Member>,
    prompts: HashSet<Member>,
    resources: HashSet<Member>,
    uris: HashMap<Box<str>, Arc<[Member]>>,
}

impl Topics {
    fn kind(&self, topic: &Topic) -> Option<&HashSet<Member>> {
        match topic {
            Topic::Tools => Some(&self.tools),
            Topic::Prompts => Some(&self.prompts),
            Topic::Resources => Some(&self.resources),
            Topic::Uri(_) => None,
        }
    }

    /// `member` joins `topic` (a second join of the same member is one).
    pub(crate) fn join(&self, topic: &Topic, member: Member) {
        match (self.kind(topic), topic) {
            (Some(set), _) => {
                set.pin().insert(member);
            }
            (None, Topic::Uri(uri)) => {
                let uris = self.uris.pin();
                let _ = uris.compute(uri.clone(), |entry| match entry {
                    Some((_, members)) if members.contains(&member) => Operation::Abort(()),
                    Some((_, members)) => {
                        let mut more = Vec::with_capacity(members.len() + 1);
                        more.extend_from_slice(members);
                        more.push(member);
                        Operation::Insert(Arc::from(more))
                    }
                    None => Operation::Insert(Arc::from([member])),
                });
            }
            (None, _) => unreachable!("every topic but a URI is a kind"),
        }
    }

    /// `member` leaves `topic` (a no-op if it was not a member); a URI left
    /// by its last member is removed.
    pub(crate) fn leave(&self, topic: &Topic, member: Member) {
        match (self.kind(topic), topic) {
            (Some(set), _) => {
                set.pin().remove(&member);
            }
            (None, Topic::Uri(uri)) => {
                let uris = self.uris.pin();
                let outcome = uris.compute(uri.clone(), |entry| match entry {
                    Some((_, members)) if members.contains(&member) => {
                        if members.len() == 1 {
                            Operation::Remove
                        } else {
                            let fewer: Vec<Member> =
                                members.iter().copied().filter(|m| *m != member).collect();
                            Operation::Insert(Arc::from(fewer))
                        }
                    }
                    _ => Operation::Abort(()),
                });
                let _: Compute<'_, _, _, ()> = outcome;
            }
            (None, _) => unreachable!("every topic but a URI is a kind"),
        }
    }

    /// Calls `visit` for every member of `topic` (no lock is taken; a
    /// member that joins or leaves meanwhile may or may not be visited).
    pub(crate) fn visit(&self, topic: &Topic, mut visit: impl FnMut(Member)) {
        match (self.kind(topic), topic) {
            (Some(set), _) => {
                for member in set.pin().iter() {
                    visit(*member);
                }
            }
            (None, Topic::Uri(uri)) => {
                let uris = self.uris.pin();
                if let Some(members) = uris.get(uri) {
                    for member in members.iter() {
                        visit(*member);
                    }
                }
            }
            (None, _) => unreachable!("every topic but a URI is a kind"),
        }
    }

    /// How many resource URIs have a member (for the gauge).
    pub(crate) fn uris(&self) -> usize {
        self.uris.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Registry;

    fn ids(n: usize) -> Vec<SessionId> {
        let registry = Registry::builder().build().unwrap();
        (0..n).map(|_| registry.insert(()).unwrap()).collect()
    }

    fn members(topics: &Topics, topic: &Topic) -> Vec<Member> {
        let mut out = Vec::new();
        topics.visit(topic, |m| out.push(m));
        out.sort_by_key(|m| format!("{m:?}"));
        out
    }

    #[test]
    fn members_join_and_leave_kinds_and_uris() {
        let ids = ids(3);
        let topics = Topics::default();
        let (a, b, c) = (
            Member::Listener(ids[0]),
            Member::Listener(ids[1]),
            Member::Session(ids[2]),
        );
        let uri = Topic::Uri("basket://1".into());
        topics.join(&Topic::Tools, a);
        topics.join(&uri, a);
        topics.join(&uri, b);
        topics.join(&uri, b);
        topics.join(&uri, c);
        assert_eq!(members(&topics, &Topic::Tools), vec![a]);
        assert_eq!(members(&topics, &Topic::Prompts), vec![]);
        assert_eq!(members(&topics, &uri).len(), 3);
        assert_eq!(topics.uris(), 1);
        topics.leave(&uri, a);
        topics.leave(&uri, a);
        topics.leave(&uri, b);
        assert_eq!(members(&topics, &uri), vec![c]);
        topics.leave(&uri, c);
        assert_eq!(members(&topics, &uri), vec![]);
        assert_eq!(
            topics.uris(),
            0,
            "a URI's last member takes the entry with it"
        );
        topics.leave(&Topic::Tools, a);
        assert_eq!(members(&topics, &Topic::Tools), vec![]);
    }
}

//! Who listens to what ([`Topics`]): for each kind of list, and for each
//! resource URI, its members: listeners (2026-07-28 listen streams) and
//! legacy sessions (their `GET` stream, their `resources/subscribe`), so
//! that a publication visits only the ones that asked for it: fan-out costs
//! O(matching listeners), whatever else is listening.
//!
//! ```text
//!  Topics
//!  ├─ lists: [Roster; 3]          one per ListKind (tools, prompts, resources)
//!  └─ uris:  papaya map           URI (Arc<str>, the one copy) -> Arc<Roster>
//!            + 16 writer locks    one per stripe of URIs (by hash): a URI's
//!                                 joins, leaves and removal are one at a time
//!  Roster (roster.rs): its members in one persistent tree of leaves of 16,
//!  published whole (ArcSwap); a position book under the roster's own lock
//! ```
//!
//! Reads take no lock: a publication loads a roster's published version
//! (a URI's roster from the map, whose reads never block) and walks it leaf
//! by leaf. A join or a leave costs O(log N) in the roster's members and
//! finds its member's place in O(1) (the book), whatever the number of
//! listeners of one URI: a URI shared by thousands of listeners costs each
//! open what one costs.
//!
//! A URI's entry is made by its first join and removed with its last member,
//! under the URI's stripe lock, which every join and leave of that URI holds
//! across its roster change and the map's: so a join never lands in a
//! roster that a leave is removing (it finds the entry there, or makes a new
//! one), and a walk holds the version it loaded, so a member that stays is
//! never missed. The map keeps one copy of each URI's text
//! ([`intern`](Topics::intern)): every listener and session that names it
//! holds that copy, not one of its own.
//!
//! A listener is a member by its inbox and mailbox ([`Tap`]), delivered to
//! with no lookup; a visit walks the members a window ahead ([`AHEAD`]),
//! asking for the next ones' inboxes, queue state words and (for a queued
//! update) slots while it delivers to this one.

use super::change::Change;
use super::inbox::Tap;
use super::kind::ListKind;
use super::roster::{Left, Roster};
use crate::SessionId;
use papaya::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

/// What a listener (or a legacy session) can listen to: a kind of list,
/// or one resource (its URI, the index's copy once joined).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Topic {
    List(ListKind),
    Uri(Arc<str>),
}

impl Topic {
    /// The topic a change is published on.
    pub(crate) fn of(change: &Change) -> Topic {
        match change {
            Change::ResourceUpdated { uri } => Topic::Uri(uri.as_str().into()),
            list => match list.list_kind() {
                Some(kind) => Topic::List(kind),
                None => unreachable!("every change but a resource's update is a list's"),
            },
        }
    }
}

/// One member of a topic: a listen stream (its inbox, delivered to
/// directly), or a legacy session, by its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Member {
    Listener(Tap),
    Session(SessionId),
}

// Half a cache line: a leaf of 16 is eight lines (`roster.rs`).
const _: () = assert!(std::mem::size_of::<Member>() == 32);

impl Member {
    /// The first step of a delivery ahead (a listener's inbox and queue
    /// state word); a session is looked up by id when its turn comes.
    #[inline]
    fn prefetch(&self) {
        if let Member::Listener(tap) = self {
            tap.prefetch();
        }
    }

    #[inline]
    fn prefetch_slot(&self) {
        if let Member::Listener(tap) = self {
            tap.prefetch_slot();
        }
    }
}

/// How many members ahead of the one being delivered to a visit brings a
/// listener's inbox and its queue's state word into the cache (the member
/// holds both pointers), and (a resource's update, which is queued) the
/// slot the delivery writes two ahead, once the state word that says which
/// slot is close. A list change raises a signal in the state word and
/// writes no slot: a kind's walk asks for none. Each step
/// needs the line the step before brought, so a delivery waits for none of
/// its misses, and the misses of several listeners are in flight together
/// (at a million listeners, each one's lines are in no cache).
const AHEAD: usize = 8;

/// A walk a window ahead (see [`AHEAD`]): members enter it in order, and
/// each is visited when it leaves the window, its memory brought close by
/// then.
struct Ahead<'m> {
    window: [Option<&'m Member>; AHEAD],
    entered: usize,
    /// Whether the deliveries write a queue slot (bring it close too).
    slots: bool,
}

impl<'m> Ahead<'m> {
    fn new(slots: bool) -> Ahead<'m> {
        Ahead {
            window: [None; AHEAD],
            entered: 0,
            slots,
        }
    }

    /// `member` enters the window; the oldest one leaves it, visited.
    #[inline]
    fn enter(&mut self, member: &'m Member, visit: &mut impl FnMut(&Member)) {
        let entered = self.entered;
        member.prefetch();
        // The member two turns from its delivery.
        if self.slots {
            if let Some(soon) = self.window[(entered + 2) % AHEAD] {
                soon.prefetch_slot();
            }
        }
        if let Some(due) = self.window[entered % AHEAD].replace(member) {
            visit(due);
        }
        self.entered = entered + 1;
    }

    /// Visits the members still in the window, oldest first.
    fn finish(mut self, visit: &mut impl FnMut(&Member)) {
        for k in 0..AHEAD {
            if let Some(due) = self.window[(self.entered + k) % AHEAD].take() {
                visit(due);
            }
        }
    }
}

/// Stripes of the URIs' writer locks.
const STRIPES: usize = 16;

/// The index of one endpoint.
pub(crate) struct Topics {
    lists: [Roster<Member>; 3],
    /// Each URI with a member, its one copy as the key.
    uris: HashMap<Arc<str>, Arc<Roster<Member>>>,
    /// The URIs' writers, a lock per stripe: held across a roster change
    /// and the map's insert or removal of its entry.
    writers: [Mutex<()>; STRIPES],
    hasher: RandomState,
}

impl Default for Topics {
    fn default() -> Topics {
        Topics {
            lists: Default::default(),
            uris: HashMap::new(),
            writers: Default::default(),
            hasher: RandomState::new(),
        }
    }
}

impl Topics {
    /// The URI's stripe lock. Nothing under it panics but the map's and
    /// the roster's own allocation (which aborts): a poisoned lock is taken.
    fn writer(&self, uri: &str) -> MutexGuard<'_, ()> {
        let at = (self.hasher.hash_one(uri) >> 32) as usize % STRIPES;
        self.writers[at]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The index's copy of `uri` if it has one (a URI with a member), else a
    /// new one: what a listener or session that names it keeps.
    pub(crate) fn intern(&self, uri: &str) -> Arc<str> {
        match self.uris.pin().get_key_value(uri) {
            Some((kept, _)) => Arc::clone(kept),
            None => Arc::from(uri),
        }
    }

    /// `member` joins `topic` (a second join of the same member is one).
    pub(crate) fn join(&self, topic: &Topic, member: &Member) {
        match topic {
            Topic::List(kind) => {
                // A second join of the same member is one.
                let _ = self.lists[kind.index()].join(member);
            }
            Topic::Uri(uri) => {
                let _writer = self.writer(uri);
                let uris = self.uris.pin();
                match uris.get(&**uri) {
                    Some(roster) => {
                        let _ = roster.join(member);
                    }
                    None => {
                        let roster = Roster::default();
                        let _ = roster.join(member);
                        uris.insert(Arc::clone(uri), Arc::new(roster));
                    }
                }
            }
        }
    }

    /// `member` leaves `topic` (a no-op if it was not a member); a URI left
    /// by its last member is removed.
    pub(crate) fn leave(&self, topic: &Topic, member: &Member) {
        match topic {
            Topic::List(kind) => {
                // Leaving a kind one did not join changes nothing.
                let _ = self.lists[kind.index()].leave(member);
            }
            Topic::Uri(uri) => {
                let _writer = self.writer(uri);
                let uris = self.uris.pin();
                if let Some(roster) = uris.get(&**uri) {
                    if roster.leave(member) == Left::Emptied {
                        uris.remove(&**uri);
                    }
                }
            }
        }
    }

    /// Calls `visit` for every member of `topic` (no lock is taken; a
    /// member that joins or leaves meanwhile may or may not be visited),
    /// bringing the next members' memory close while it visits one.
    pub(crate) fn visit(&self, topic: &Topic, visit: impl FnMut(&Member)) {
        match topic {
            // A kind's publication raises a signal: no slot to bring.
            Topic::List(kind) => walk(&self.lists[kind.index()], false, visit),
            Topic::Uri(uri) => {
                let uris = self.uris.pin();
                if let Some(roster) = uris.get(&**uri) {
                    walk(roster, true, visit);
                }
            }
        }
    }

    /// How many resource URIs have a member (for the gauge).
    pub(crate) fn uris(&self) -> usize {
        self.uris.len()
    }
}

/// Visits a roster's members (one version of them) a window ahead;
/// `slots`: the deliveries write a queue slot (bring it close too).
fn walk(roster: &Roster<Member>, slots: bool, mut visit: impl FnMut(&Member)) {
    let members = roster.members();
    let mut ahead = Ahead::new(slots);
    members.leaves(|leaf| {
        for member in leaf {
            ahead.enter(member, &mut visit);
        }
    });
    ahead.finish(&mut visit);
}

#[cfg(test)]
mod tests {
    use super::super::inbox::Inbox;
    use super::*;
    use crate::Registry;

    fn ids(n: usize) -> Vec<SessionId> {
        let registry = Registry::builder().build().unwrap();
        (0..n).map(|_| registry.insert(()).unwrap()).collect()
    }

    /// `n` listeners, each its own inbox, named by an id.
    fn listeners(n: usize) -> Vec<Member> {
        ids(n)
            .into_iter()
            .map(|id| {
                let (inbox, _) = Inbox::new(1, None);
                inbox.set_id(id);
                Member::Listener(Tap::new(&inbox))
            })
            .collect()
    }

    fn members(topics: &Topics, topic: &Topic) -> Vec<Member> {
        let mut out = Vec::new();
        topics.visit(topic, |m| out.push(m.clone()));
        out.sort_by_key(|m| format!("{m:?}"));
        out
    }

    fn uri(text: &str) -> Topic {
        Topic::Uri(text.into())
    }

    #[test]
    fn members_join_and_leave_kinds_and_uris() {
        let mut ls = listeners(2);
        let topics = Topics::default();
        let (b, a, c) = (
            ls.pop().unwrap(),
            ls.pop().unwrap(),
            Member::Session(ids(1)[0]),
        );
        let tools = Topic::List(ListKind::Tools);
        let basket = uri("basket://1");
        topics.join(&tools, &a);
        topics.join(&basket, &a);
        topics.join(&basket, &b);
        topics.join(&basket, &b);
        topics.join(&basket, &c);
        assert_eq!(members(&topics, &tools), vec![a.clone()]);
        assert_eq!(members(&topics, &Topic::List(ListKind::Prompts)), vec![]);
        assert_eq!(members(&topics, &basket).len(), 3);
        assert_eq!(topics.uris(), 1);
        topics.leave(&basket, &a);
        topics.leave(&basket, &a);
        topics.leave(&basket, &b);
        assert_eq!(members(&topics, &basket), vec![c.clone()]);
        topics.leave(&basket, &c);
        assert_eq!(members(&topics, &basket), vec![]);
        assert_eq!(
            topics.uris(),
            0,
            "a URI's last member takes the entry with it"
        );
        topics.leave(&tools, &a);
        assert_eq!(members(&topics, &tools), vec![]);
    }

    #[test]
    fn a_walk_ahead_visits_every_member_once_in_order() {
        let mut all = listeners(2 * AHEAD + 3);
        all.extend(ids(3).into_iter().map(Member::Session));
        for n in 0..=all.len() {
            let mut seen = Vec::new();
            let mut ahead = Ahead::new(true);
            let mut visit = |m: &Member| seen.push(m.clone());
            for member in &all[..n] {
                ahead.enter(member, &mut visit);
            }
            ahead.finish(&mut visit);
            assert_eq!(seen, all[..n], "{n} members");
        }
    }

    #[test]
    fn a_uri_of_many_members_keeps_every_one_through_joins_and_leaves() {
        let n = 3 * 16 + 5;
        let all: Vec<Member> = listeners(n);
        let topics = Topics::default();
        let basket = uri("basket://many");
        for member in &all {
            topics.join(&basket, member);
        }
        topics.join(&basket, &all[7]);
        let mut expected = all.clone();
        expected.sort_by_key(|m| format!("{m:?}"));
        assert_eq!(members(&topics, &basket), expected);
        // Leaves from the first leaf, a middle one, the last, each checked
        // against the members left.
        let mut left: Vec<Member> = all.clone();
        for i in [0, 16 + 3, 2 * 16 - 1, n - 1, 5, 3 * 16, 2 * 16] {
            topics.leave(&basket, &all[i]);
            topics.leave(&basket, &all[i]);
            left.retain(|m| *m != all[i]);
            let mut expected = left.clone();
            expected.sort_by_key(|m| format!("{m:?}"));
            assert_eq!(members(&topics, &basket), expected, "after leaving {i}");
        }
        for member in &left {
            topics.leave(&basket, member);
        }
        assert_eq!(members(&topics, &basket), vec![]);
        assert_eq!(topics.uris(), 0);
    }

    #[test]
    fn a_uri_is_kept_once_whoever_names_it() {
        let topics = Topics::default();
        let ls = listeners(2);
        let first = topics.intern("basket://shared");
        topics.join(&Topic::Uri(Arc::clone(&first)), &ls[0]);
        let second = topics.intern("basket://shared");
        assert!(Arc::ptr_eq(&first, &second), "the index's copy");
        topics.join(&Topic::Uri(second), &ls[1]);
        topics.leave(&uri("basket://shared"), &ls[0]);
        topics.leave(&uri("basket://shared"), &ls[1]);
        let after = topics.intern("basket://shared");
        assert!(!Arc::ptr_eq(&first, &after), "gone with its last member");
    }

    #[test]
    fn joins_and_leaves_of_one_uri_racing_keep_every_member_that_stays() {
        // Two threads join and leave members of one URI over and over while
        // a third's members stay; the URI's entry comes and goes (each
        // thread empties it): a join never lands in a removed roster.
        let topics = Topics::default();
        let staying = listeners(4);
        let movers: Vec<Vec<Member>> = (0..2).map(|_| listeners(8)).collect();
        let basket = uri("basket://race");
        std::thread::scope(|scope| {
            for mine in &movers {
                let (topics, basket) = (&topics, &basket);
                scope.spawn(move || {
                    for _ in 0..300 {
                        mine.iter().for_each(|m| topics.join(basket, m));
                        mine.iter().for_each(|m| topics.leave(basket, m));
                    }
                });
            }
            for member in &staying {
                topics.join(&basket, member);
            }
        });
        let mut expected = staying.clone();
        expected.sort_by_key(|m| format!("{m:?}"));
        assert_eq!(members(&topics, &basket), expected);
    }
}

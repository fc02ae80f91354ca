//! Who listens to what ([`Topics`]): for each kind of change, and for each
//! resource URI, the set of its listeners (2026-07-28 listen streams) and
//! legacy sessions (their `GET` stream, their `resources/subscribe`), so
//! that a publication visits only the ones that asked for it: fan-out costs
//! O(matching listeners), whatever else is listening.
//!
//! Reads take no lock. The three kinds are each a [`Roster`]: its members
//! in one persistent tree of small contiguous leaves, published whole, so
//! a publication walks a million of them a few hundred bytes at a time and
//! a join or a leave costs O(log N) under the roster's own lock
//! (`roster.rs`). The URIs are [`papaya`]'s concurrent map, whose reads
//! never block (a publisher pins, iterates and lets go); each URI's
//! members are an immutable value replaced whole on a join or a leave, one
//! atomic step per URI (`compute`), so a URI's entry is removed exactly
//! when its last member leaves and no join can land in a removed entry.
//!
//! That value is a list of chunks of [`CHUNK`] members ([`Chunks`]), every
//! chunk full but the last, so that a join or a leave copies at most two
//! chunks and the list of them (16 bytes a chunk), never every member: a
//! URI with 5,000 listeners was a copy of 80 KB per join (O(N²) bytes to
//! open them, whose freed copies the allocator then handed out to each
//! connection's buffers, touched: about 9 KiB of RSS per idle listener in
//! `cargo bench --bench listen -- --rss 5000`), and is about 2 KB.
//!
//! A listener is a member by its inbox and mailbox ([`Tap`]), delivered to
//! with no lookup; a visit walks the members a window ahead ([`AHEAD`]),
//! asking for the next ones' inboxes, queue state words and (for a queued
//! update) slots while it delivers to this one. (A kind's members were once
//! each an entry of a concurrent set, allocated apart: reaching each was a
//! cache miss the window could not hide, 216.5 ns per listener at a million
//! against the tree's 82.7 in the same run: `cargo bench --bench
//! listen_publish -- --count tools N 8`.)

use super::change::Change;
use super::inbox::Tap;
use super::roster::Roster;
use crate::SessionId;
use papaya::{Compute, HashMap, Operation};
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

/// Calls `visit` for every member `members` yields, in order, bringing the
/// memory of the next ones' deliveries close beforehand (see [`AHEAD`]).
fn visit_ahead<'m>(members: impl Iterator<Item = &'m Member>, mut visit: impl FnMut(&Member)) {
    let mut ahead = Ahead::new(true);
    for member in members {
        ahead.enter(member, &mut visit);
    }
    ahead.finish(&mut visit);
}

/// Members per chunk of a URI's [`Chunks`]: a join or a leave copies at
/// most two chunks (2 KB each) and the list of chunks (16 bytes per
/// `CHUNK` members).
const CHUNK: usize = 128;

/// A URI's members: chunks of [`CHUNK`], every one full but the last, which
/// is never empty; replaced whole (sharing the chunks it does not change)
/// on a join or a leave.
type Chunks = Arc<[Arc<[Member]>]>;

/// `chunks` with `member` added (at the end of the last chunk, or in a new
/// one when it is full).
fn with(chunks: &[Arc<[Member]>], member: &Member) -> Chunks {
    let mut out: Vec<Arc<[Member]>> = Vec::with_capacity(chunks.len() + 1);
    match chunks.split_last() {
        Some((last, full)) if last.len() < CHUNK => {
            out.extend(full.iter().cloned());
            let mut grown = Vec::with_capacity(last.len() + 1);
            grown.extend_from_slice(last);
            grown.push(member.clone());
            out.push(Arc::from(grown));
        }
        _ => {
            out.extend(chunks.iter().cloned());
            out.push(Arc::from([member.clone()]));
        }
    }
    Arc::from(out)
}

/// `chunks` without the member at `pos` of chunk `at`: the last chunk's
/// last member takes its place, so every chunk but the last stays full;
/// `None` when it was the only member.
fn without(chunks: &[Arc<[Member]>], at: usize, pos: usize) -> Option<Chunks> {
    let (tail, _) = chunks.split_last()?;
    let last = chunks.len() - 1;
    let mut out: Vec<Arc<[Member]>> = chunks.to_vec();
    let (moved, rest) = tail.split_last()?;
    if at != last {
        let mut changed = chunks[at].to_vec();
        changed[pos] = moved.clone();
        out[at] = Arc::from(changed);
        out[last] = Arc::from(rest);
    } else {
        let mut shrunk = tail.to_vec();
        shrunk.swap_remove(pos);
        out[last] = Arc::from(shrunk);
    }
    if out[last].is_empty() {
        out.pop();
    }
    if out.is_empty() {
        None
    } else {
        Some(Arc::from(out))
    }
}

/// Where `member` is in `chunks`: its chunk and its place in it.
fn find(chunks: &[Arc<[Member]>], member: &Member) -> Option<(usize, usize)> {
    chunks
        .iter()
        .enumerate()
        .find_map(|(at, chunk)| chunk.iter().position(|m| m == member).map(|pos| (at, pos)))
}

/// The index of one endpoint.
#[derive(Default)]
pub(crate) struct Topics {
    tools: Roster<Member>,
    prompts: Roster<Member>,
    resources: Roster<Member>,
    uris: HashMap<Box<str>, Chunks>,
}

impl Topics {
    fn kind(&self, topic: &Topic) -> Option<&Roster<Member>> {
        match topic {
            Topic::Tools => Some(&self.tools),
            Topic::Prompts => Some(&self.prompts),
            Topic::Resources => Some(&self.resources),
            Topic::Uri(_) => None,
        }
    }

    /// `member` joins `topic` (a second join of the same member is one).
    pub(crate) fn join(&self, topic: &Topic, member: &Member) {
        match (self.kind(topic), topic) {
            (Some(roster), _) => {
                // A second join of the same member is one.
                let _ = roster.join(member);
            }
            (None, Topic::Uri(uri)) => {
                let uris = self.uris.pin();
                let _ = uris.compute(uri.clone(), |entry| match entry {
                    Some((_, chunks)) if find(chunks, member).is_some() => Operation::Abort(()),
                    Some((_, chunks)) => Operation::Insert(with(chunks, member)),
                    None => Operation::Insert(with(&[], member)),
                });
            }
            (None, _) => unreachable!("every topic but a URI is a kind"),
        }
    }

    /// `member` leaves `topic` (a no-op if it was not a member); a URI left
    /// by its last member is removed.
    pub(crate) fn leave(&self, topic: &Topic, member: &Member) {
        match (self.kind(topic), topic) {
            (Some(roster), _) => {
                // Leaving a kind one did not join changes nothing.
                let _ = roster.leave(member);
            }
            (None, Topic::Uri(uri)) => {
                let uris = self.uris.pin();
                let outcome = uris.compute(uri.clone(), |entry| {
                    let Some((_, chunks)) = entry else {
                        return Operation::Abort(());
                    };
                    let Some((at, pos)) = find(chunks, member) else {
                        return Operation::Abort(());
                    };
                    match without(chunks, at, pos) {
                        Some(fewer) => Operation::Insert(fewer),
                        None => Operation::Remove,
                    }
                });
                let _: Compute<'_, _, _, ()> = outcome;
            }
            (None, _) => unreachable!("every topic but a URI is a kind"),
        }
    }

    /// Calls `visit` for every member of `topic` (no lock is taken; a
    /// member that joins or leaves meanwhile may or may not be visited),
    /// bringing the next members' memory close while it visits one.
    pub(crate) fn visit(&self, topic: &Topic, visit: impl FnMut(&Member)) {
        match (self.kind(topic), topic) {
            (Some(roster), _) => {
                let members = roster.members();
                // A kind's publication raises a signal: no slot to bring.
                let mut ahead = Ahead::new(false);
                let mut visit = visit;
                members.leaves(|leaf| {
                    for member in leaf {
                        ahead.enter(member, &mut visit);
                    }
                });
                ahead.finish(&mut visit);
            }
            (None, Topic::Uri(uri)) => {
                let uris = self.uris.pin();
                if let Some(chunks) = uris.get(uri) {
                    visit_ahead(chunks.iter().flat_map(|chunk| chunk.iter()), visit);
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

    #[test]
    fn members_join_and_leave_kinds_and_uris() {
        let mut ls = listeners(2);
        let topics = Topics::default();
        let (b, a, c) = (
            ls.pop().unwrap(),
            ls.pop().unwrap(),
            Member::Session(ids(1)[0]),
        );
        let uri = Topic::Uri("basket://1".into());
        topics.join(&Topic::Tools, &a);
        topics.join(&uri, &a);
        topics.join(&uri, &b);
        topics.join(&uri, &b);
        topics.join(&uri, &c);
        assert_eq!(members(&topics, &Topic::Tools), vec![a.clone()]);
        assert_eq!(members(&topics, &Topic::Prompts), vec![]);
        assert_eq!(members(&topics, &uri).len(), 3);
        assert_eq!(topics.uris(), 1);
        topics.leave(&uri, &a);
        topics.leave(&uri, &a);
        topics.leave(&uri, &b);
        assert_eq!(members(&topics, &uri), vec![c.clone()]);
        topics.leave(&uri, &c);
        assert_eq!(members(&topics, &uri), vec![]);
        assert_eq!(
            topics.uris(),
            0,
            "a URI's last member takes the entry with it"
        );
        topics.leave(&Topic::Tools, &a);
        assert_eq!(members(&topics, &Topic::Tools), vec![]);
    }

    #[test]
    fn a_visit_ahead_visits_every_member_once_in_order() {
        let mut all = listeners(2 * AHEAD + 3);
        all.extend(ids(3).into_iter().map(Member::Session));
        for n in 0..=all.len() {
            let mut seen = Vec::new();
            visit_ahead(all[..n].iter(), |m| seen.push(m.clone()));
            assert_eq!(seen, all[..n], "{n} members");
        }
    }

    /// The chunk lengths of `uri`'s members, checking that every chunk but
    /// the last is full and none is empty.
    fn shape(topics: &Topics, uri: &str) -> Vec<usize> {
        let uris = topics.uris.pin();
        let Some(chunks) = uris.get(uri) else {
            return Vec::new();
        };
        let lens: Vec<usize> = chunks.iter().map(|chunk| chunk.len()).collect();
        let (last, full) = lens.split_last().expect("an entry has a chunk");
        assert!(full.iter().all(|len| *len == CHUNK), "{lens:?}");
        assert!((1..=CHUNK).contains(last), "{lens:?}");
        lens
    }

    #[test]
    fn a_uri_of_many_members_keeps_every_one_through_joins_and_leaves() {
        let n = 3 * CHUNK + 5;
        let all: Vec<Member> = listeners(n);
        let topics = Topics::default();
        let uri = Topic::Uri("basket://many".into());
        for member in &all {
            topics.join(&uri, member);
        }
        topics.join(&uri, &all[7]);
        assert_eq!(
            shape(&topics, "basket://many"),
            vec![CHUNK, CHUNK, CHUNK, 5]
        );
        let mut expected = all.clone();
        expected.sort_by_key(|m| format!("{m:?}"));
        assert_eq!(members(&topics, &uri), expected);
        // Leaves from every chunk (the first, the middle, the last, the
        // partial one), each checked against the members left.
        let mut left: Vec<Member> = all.clone();
        for i in [0, CHUNK + 3, 2 * CHUNK - 1, n - 1, 5, 3 * CHUNK, 2 * CHUNK] {
            topics.leave(&uri, &all[i]);
            topics.leave(&uri, &all[i]);
            left.retain(|m| *m != all[i]);
            let lens = shape(&topics, "basket://many");
            assert_eq!(lens.iter().sum::<usize>(), left.len());
            let mut expected = left.clone();
            expected.sort_by_key(|m| format!("{m:?}"));
            assert_eq!(members(&topics, &uri), expected, "after leaving {i}");
        }
        for member in &left {
            topics.leave(&uri, member);
        }
        assert_eq!(members(&topics, &uri), vec![]);
        assert_eq!(topics.uris(), 0);
    }
}

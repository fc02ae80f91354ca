//! One topic's members in one contiguous, persistent tree ([`Roster`]): a
//! publication walks them with no lock, leaf after leaf, and a join or a
//! leave costs O(log N), whatever the number of members.
//!
//! The members are kept in order of position, in leaves of [`FAN`] under
//! branches of [`FAN`]: every leaf full but the last, so a walk reads them
//! as a few hundred bytes at a time, not one allocation per member (a
//! concurrent set's entries are allocated apart, and at a million members
//! reaching each one is a cache miss nobody can prefetch). The tree is
//! immutable once published: a join or a leave copies the path to the
//! leaves it changes (at most `FAN` entries per level) and publishes the
//! new root whole ([`ArcSwap`]), so a walk sees one version from its
//! first member to its last, and a member that stays is never missed by a
//! walk that races another's leave (a leave moves the last member into the
//! leaver's place: in the version the walk holds, it has not moved).
//!
//! Writers (joins and leaves) take the roster's lock, which keeps each
//! member's position in the version last published (the only one a writer
//! changes: versions are published under the lock), so a leave finds its
//! place in O(1) and a second join of the same member is one.
//!
//! ```text
//!  published (ArcSwap) ──▶ Tree { root, height, len }       walks load it, no lock
//!                              root (height 1)
//!                 ┌────────────┬──┴─────────┬─────────────┐
//!               leaf 0       leaf 1   …   leaf 14       leaf 15
//!            [m0 … m15]   [m16 … m31]              [m240 … m244]   full but the last
//!
//!  positions (the writers' lock): m0 → 0, m1 → 1, …, m244 → 244
//!
//!  join m245:  copy leaf 15 + root (the path), push m245 last, publish
//!  leave m17:  the last member (m245) takes position 17: copy leaf 1, leaf 15
//!              and the root, pop the last, publish; positions: m245 → 17
//!  a walk that loaded the version before the leave still sees m245 at 245
//! ```

use arc_swap::ArcSwap;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

/// Bits of a position per level of the tree.
const BITS: u32 = 4;

/// Entries per leaf and per branch: a leaf of 16 members of 32 bytes is
/// eight cache lines, read in order; a path copy is at most 16 entries per
/// level (five levels at a million members).
const FAN: usize = 1 << BITS;

/// A part of the tree: a leaf of members, or a branch of parts, each of
/// [`FAN`] entries at most.
enum Node<T> {
    Leaf(Arc<[T]>),
    Branch(Arc<[Node<T>]>),
}

impl<T> Clone for Node<T> {
    fn clone(&self) -> Self {
        match self {
            Node::Leaf(members) => Node::Leaf(Arc::clone(members)),
            Node::Branch(parts) => Node::Branch(Arc::clone(parts)),
        }
    }
}

/// The digit of `position` at `height` (0: the place in its leaf).
fn digit(position: usize, height: u32) -> usize {
    (position >> (BITS * height)) & (FAN - 1)
}

/// How many members a part of `height` holds when full.
fn capacity(height: u32) -> usize {
    1usize << (BITS * (height + 1))
}

/// `parts` with `part` in place `at` (a copy: the others are shared).
fn replaced<T>(parts: &[Node<T>], at: usize, part: Node<T>) -> Node<T> {
    let mut copy: Vec<Node<T>> = parts.to_vec();
    copy[at] = part;
    Node::Branch(copy.into())
}

impl<T: Clone> Node<T> {
    fn empty() -> Node<T> {
        Node::Leaf(Arc::from(Vec::new()))
    }

    /// A part of `height` holding `member` alone.
    fn single(height: u32, member: T) -> Node<T> {
        let mut part = Node::Leaf(Arc::from(vec![member]));
        for _ in 0..height {
            part = Node::Branch(Arc::from(vec![part]));
        }
        part
    }

    /// The member at `position` (this part being of `height`).
    fn get(&self, height: u32, position: usize) -> &T {
        match self {
            Node::Leaf(members) => &members[digit(position, 0)],
            Node::Branch(parts) => parts[digit(position, height)].get(height - 1, position),
        }
    }

    /// This part with `member` at `position` instead.
    fn set(&self, height: u32, position: usize, member: T) -> Node<T> {
        match self {
            Node::Leaf(members) => {
                let mut copy = members.to_vec();
                copy[digit(position, 0)] = member;
                Node::Leaf(copy.into())
            }
            Node::Branch(parts) => {
                let at = digit(position, height);
                replaced(parts, at, parts[at].set(height - 1, position, member))
            }
        }
    }

    /// This part with `member` added at `position`, its end (this part is
    /// not full).
    fn push(&self, height: u32, position: usize, member: T) -> Node<T> {
        match self {
            Node::Leaf(members) => {
                let mut copy = Vec::with_capacity(members.len() + 1);
                copy.extend_from_slice(members);
                copy.push(member);
                Node::Leaf(copy.into())
            }
            Node::Branch(parts) => {
                let at = digit(position, height);
                if at < parts.len() {
                    replaced(parts, at, parts[at].push(height - 1, position, member))
                } else {
                    let mut copy = Vec::with_capacity(parts.len() + 1);
                    copy.extend_from_slice(parts);
                    copy.push(Node::single(height - 1, member));
                    Node::Branch(copy.into())
                }
            }
        }
    }

    /// This part without its last member, at `position`; `None` when that
    /// was its only one.
    fn pop(&self, height: u32, position: usize) -> Option<Node<T>> {
        match self {
            Node::Leaf(members) => {
                (members.len() > 1).then(|| Node::Leaf(Arc::from(&members[..members.len() - 1])))
            }
            Node::Branch(parts) => {
                let at = digit(position, height);
                match parts[at].pop(height - 1, position) {
                    Some(part) => Some(replaced(parts, at, part)),
                    None if at == 0 => None,
                    None => Some(Node::Branch(Arc::from(&parts[..at]))),
                }
            }
        }
    }
}

/// One version of a roster: immutable once published.
struct Tree<T> {
    root: Node<T>,
    /// The root's height (0: the root is a leaf).
    height: u32,
    len: usize,
}

impl<T: Clone> Tree<T> {
    fn empty() -> Tree<T> {
        Tree {
            root: Node::empty(),
            height: 0,
            len: 0,
        }
    }

    fn get(&self, position: usize) -> &T {
        self.root.get(self.height, position)
    }

    fn set(&self, position: usize, member: T) -> Tree<T> {
        Tree {
            root: self.root.set(self.height, position, member),
            height: self.height,
            len: self.len,
        }
    }

    /// This version with `member` last.
    fn pushed(&self, member: T) -> Tree<T> {
        if self.len == capacity(self.height) {
            // The root is full: it becomes the first part of a new root.
            let root = Node::Branch(Arc::from(vec![
                self.root.clone(),
                Node::single(self.height, member),
            ]));
            return Tree {
                root,
                height: self.height + 1,
                len: self.len + 1,
            };
        }
        Tree {
            root: self.root.push(self.height, self.len, member),
            height: self.height,
            len: self.len + 1,
        }
    }

    /// This version without its last member (it has one).
    fn popped(&self) -> Tree<T> {
        let mut root = self
            .root
            .pop(self.height, self.len - 1)
            .unwrap_or_else(Node::empty);
        let mut height = self.height;
        // A root of one part is that part, one level lower: the tree keeps
        // the least height its members need.
        while height > 0 {
            let Node::Branch(parts) = &root else { break };
            if parts.len() > 1 {
                break;
            }
            let only = parts[0].clone();
            root = only;
            height -= 1;
        }
        Tree {
            root,
            height,
            len: self.len - 1,
        }
    }

    /// Calls `visit` for every leaf's members, in order of position, asking
    /// for the next leaf's members while it visits this one's.
    fn leaves<'t>(&'t self, visit: &mut impl FnMut(&'t [T])) {
        fn walk<'t, T>(part: &'t Node<T>, visit: &mut impl FnMut(&'t [T])) {
            match part {
                Node::Leaf(members) => visit(members),
                Node::Branch(parts) => {
                    for (at, part) in parts.iter().enumerate() {
                        if let Some(Node::Leaf(next)) = parts.get(at + 1) {
                            crate::prefetch::prefetch(next.as_ptr());
                        }
                        walk(part, visit);
                    }
                }
            }
        }
        walk(&self.root, visit);
    }
}

/// What became of a join.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Joined {
    /// The member was added.
    Added,
    /// It was a member already: nothing changed.
    Already,
}

/// What became of a leave.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Left {
    /// The member was removed, and others remain.
    Removed,
    /// The member was removed, and was the last one.
    Emptied,
    /// It was not a member: nothing changed.
    Absent,
}

/// A topic's members (see the module's docs).
pub(crate) struct Roster<T> {
    /// The version walks read; replaced only under `positions`' lock.
    published: ArcSwap<Tree<T>>,
    /// Each member's position in the published version: the writers' lock.
    positions: Mutex<HashMap<T, usize>>,
}

impl<T: Clone + Eq + Hash> Default for Roster<T> {
    fn default() -> Self {
        Roster {
            published: ArcSwap::from_pointee(Tree::empty()),
            positions: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Clone + Eq + Hash> Roster<T> {
    /// The writers' lock, and the version it guards.
    fn book(&self) -> (MutexGuard<'_, HashMap<T, usize>>, Arc<Tree<T>>) {
        // A writer makes its new version before it changes the positions
        // (they and the version change last, and neither panics), so one
        // that panicked changed nothing: a poisoned lock is taken.
        let positions = self
            .positions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Under the lock, the published version is the last one written.
        (positions, self.published.load_full())
    }

    /// `member` joins (a second join of the same member is one).
    pub(crate) fn join(&self, member: &T) -> Joined {
        let (mut positions, tree) = self.book();
        if positions.contains_key(member) {
            return Joined::Already;
        }
        let joined = tree.pushed(member.clone());
        positions.insert(member.clone(), tree.len);
        self.published.store(Arc::new(joined));
        Joined::Added
    }

    /// `member` leaves: the last member takes its place.
    pub(crate) fn leave(&self, member: &T) -> Left {
        let (mut positions, tree) = self.book();
        let Some(&position) = positions.get(member) else {
            return Left::Absent;
        };
        let last = tree.len - 1;
        let (fewer, moved) = if position == last {
            (tree.popped(), None)
        } else {
            let moved = tree.get(last).clone();
            (tree.set(position, moved.clone()).popped(), Some(moved))
        };
        positions.remove(member);
        if let Some(moved) = moved {
            positions.insert(moved, position);
        }
        let left = if fewer.len == 0 {
            Left::Emptied
        } else {
            Left::Removed
        };
        self.published.store(Arc::new(fewer));
        left
    }

    /// The members now: a version that no join or leave changes.
    pub(crate) fn members(&self) -> Members<T> {
        Members(self.published.load_full())
    }

    /// How many members there are.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.published.load().len
    }
}

/// One version of a roster's members, for a walk.
pub(crate) struct Members<T>(Arc<Tree<T>>);

impl<T: Clone> Members<T> {
    /// Calls `visit` for every member, in order of position, a leaf (up
    /// to [`FAN`] members, contiguous) at a time.
    pub(crate) fn leaves<'m>(&'m self, mut visit: impl FnMut(&'m [T])) {
        self.0.leaves(&mut visit);
    }

    /// Calls `visit` for every member, in order of position.
    #[cfg(test)]
    fn each<'m>(&'m self, mut visit: impl FnMut(&'m T)) {
        self.0
            .leaves(&mut |leaf: &'m [T]| leaf.iter().for_each(&mut visit));
    }

    /// How many members this version has.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(roster: &Roster<u32>) -> Vec<u32> {
        let members = roster.members();
        let mut out = Vec::new();
        members.each(|m| out.push(*m));
        assert_eq!(out.len(), members.len());
        out
    }

    /// Every leaf full but the last, no part empty, no root of one part,
    /// each member where the positions say.
    fn check(roster: &Roster<u32>) {
        fn shape(part: &Node<u32>, height: u32, rightmost: bool, leaves: &mut Vec<usize>) {
            match part {
                Node::Leaf(members) => {
                    assert_eq!(height, 0, "leaves are all at height 0");
                    leaves.push(members.len());
                }
                Node::Branch(parts) => {
                    assert!(height > 0 && !parts.is_empty() && parts.len() <= FAN);
                    if !rightmost {
                        assert_eq!(parts.len(), FAN, "only the rightmost path is partial");
                    }
                    for (i, p) in parts.iter().enumerate() {
                        shape(p, height - 1, rightmost && i + 1 == parts.len(), leaves);
                    }
                }
            }
        }
        let (positions, tree) = roster.book();
        let mut leaves = Vec::new();
        shape(&tree.root, tree.height, true, &mut leaves);
        if let Some((last, full)) = leaves.split_last() {
            assert!(full.iter().all(|n| *n == FAN), "{leaves:?}");
            assert!(*last <= FAN && (*last > 0 || tree.len == 0));
        }
        assert_eq!(leaves.iter().sum::<usize>(), tree.len);
        if tree.height > 0 {
            let Node::Branch(parts) = &tree.root else {
                panic!("a root above height 0 is a branch")
            };
            assert!(parts.len() > 1, "the tree keeps its least height");
        }
        assert!(tree.len <= capacity(tree.height));
        assert_eq!(positions.len(), tree.len);
        for (member, at) in positions.iter() {
            assert_eq!(tree.get(*at), member);
        }
        // Walks see the version the positions describe.
        assert!(Arc::ptr_eq(&tree, &roster.members().0));
    }

    /// A small random generator (xorshift): the test needs no crate.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    #[test]
    fn joins_and_leaves_match_a_model_at_every_height() {
        let roster = Roster::<u32>::default();
        let mut model: Vec<u32> = Vec::new();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        // Up to 3 levels above the leaves and back down to empty, twice.
        let peak = capacity(2) + 2 * FAN + 3;
        for round in 0..2 {
            while model.len() < peak {
                let m = rng.below(1 << 20) as u32;
                let joined = roster.join(&m);
                if model.contains(&m) {
                    assert_eq!(joined, Joined::Already);
                } else {
                    assert_eq!(joined, Joined::Added);
                    model.push(m);
                }
                if rng.below(4) == 0 && !model.is_empty() {
                    let at = rng.below(model.len() as u64) as usize;
                    let m = model.swap_remove(at);
                    assert_ne!(roster.leave(&m), Left::Absent);
                    assert_eq!(roster.leave(&m), Left::Absent);
                }
                if model.len() % 97 == 0 {
                    check(&roster);
                }
            }
            check(&roster);
            let mut got = all(&roster);
            got.sort_unstable();
            let mut want = model.clone();
            want.sort_unstable();
            assert_eq!(got, want, "round {round}");
            while !model.is_empty() {
                let at = rng.below(model.len() as u64) as usize;
                let m = model.swap_remove(at);
                let left = roster.leave(&m);
                assert_eq!(
                    left,
                    if model.is_empty() {
                        Left::Emptied
                    } else {
                        Left::Removed
                    }
                );
                if model.len() % 89 == 0 {
                    check(&roster);
                    let mut got = all(&roster);
                    got.sort_unstable();
                    let mut want = model.clone();
                    want.sort_unstable();
                    assert_eq!(got, want);
                }
            }
            assert_eq!(roster.len(), 0);
            assert_eq!(all(&roster), Vec::<u32>::new());
        }
    }

    #[test]
    fn a_walk_keeps_its_version_while_members_leave_and_join() {
        let roster = Roster::<u32>::default();
        for m in 0..(3 * FAN as u32) {
            let _ = roster.join(&m);
        }
        let before = roster.members();
        // The first member leaves: the last one moves into its place.
        assert_eq!(roster.leave(&0), Left::Removed);
        let _ = roster.join(&1000);
        let mut seen = Vec::new();
        before.each(|m| seen.push(*m));
        assert_eq!(seen, (0..3 * FAN as u32).collect::<Vec<_>>());
        assert_eq!(all(&roster)[0], 3 * FAN as u32 - 1);
    }

    #[test]
    fn walks_racing_leaves_see_every_member_that_stays() {
        // Members 0..STAY never leave; others join and leave (each leave
        // moves the last member, often a staying one, to another place).
        const STAY: u32 = 200;
        let roster = Arc::new(Roster::<u32>::default());
        for m in 0..STAY {
            let _ = roster.join(&m);
        }
        let writer = {
            let roster = Arc::clone(&roster);
            std::thread::spawn(move || {
                let mut rng = Rng(7);
                for round in 0..3_000u32 {
                    let m = STAY + round % 300;
                    if rng.below(2) == 0 {
                        let _ = roster.join(&m);
                    } else {
                        let _ = roster.leave(&m);
                    }
                }
            })
        };
        let mut walks = 0;
        while !writer.is_finished() || walks < 100 {
            let members = roster.members();
            let mut seen = vec![false; 600];
            members.each(|m| {
                assert!(!seen[*m as usize], "{m} visited twice");
                seen[*m as usize] = true;
            });
            assert!(
                seen[..STAY as usize].iter().all(|s| *s),
                "a staying member was missed"
            );
            walks += 1;
        }
        writer.join().unwrap();
        check(&roster);
    }
}
